// CUDA kernels of the AMP layer: GradScaler's fused unscale + non-finite check, in place.
// - unscale: one gradient, one launch; returns whether it held inf/NaN.
// - unscale_many: every gradient of a (device, dtype) group in one launch, with inf and NaN counts
//   per tensor (what the scaler's per-parameter diagnostics report), read back with one transfer.
// A value is non-finite exactly when its exponent bits are all ones; counting happens only on
// such values, so the atomics cost nothing in a clean step. Counts classify the incoming value.
#include <vector>

#include "ops/cuda/common.cuh"

namespace minidl::kernels::cuda {

namespace {
// -1: finite; 0: inf; 1: NaN (exponent all ones; a non-zero fraction makes it a NaN).
__device__ __forceinline__ int nonfinite_kind(float v) {
  const unsigned b = __float_as_uint(v);
  if ((b & 0x7f800000u) != 0x7f800000u) return -1;
  return (b & 0x007fffffu) ? 1 : 0;
}
__device__ __forceinline__ int nonfinite_kind(double v) {
  const unsigned long long b = static_cast<unsigned long long>(__double_as_longlong(v));
  if ((b & 0x7ff0000000000000ull) != 0x7ff0000000000000ull) return -1;
  return (b & 0x000fffffffffffffull) ? 1 : 0;
}

template <class C>
__device__ __forceinline__ void count_nonfinite(C v, unsigned long long* counts) {
  const int kind = nonfinite_kind(v);
  if (kind >= 0) atomicAdd(counts + kind, 1ull);  // counts[0]: inf, counts[1]: NaN
}

template <class T>
__global__ void unscale_kernel(T* g, int64_t n, float inv, unsigned long long* counts) {
  using C = compute_t<T>;
  const C s = static_cast<C>(inv);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{blockDim.x} * gridDim.x) {
    const C v = load(g[i]);
    count_nonfinite(v, counts);
    g[i] = convert<T>(v * s);
  }
}

// Block b handles chunk b: elements [start, min(start + kChunk, n)) of tensor t.
constexpr int64_t kChunk = 16384;

template <class T>
__global__ void unscale_many_kernel(const int64_t* meta, int64_t tensors, int64_t chunks, float inv,
                                    unsigned long long* counts) {
  using C = compute_t<T>;
  const C s = static_cast<C>(inv);
  const int64_t* ptrs = meta;
  const int64_t* sizes = meta + tensors;
  const int64_t* chunk_tensor = meta + 2 * tensors;
  const int64_t* chunk_start = meta + 2 * tensors + chunks;
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    const int64_t t = chunk_tensor[c], start = chunk_start[c];
    T* g = reinterpret_cast<T*>(ptrs[t]);
    const int64_t end = start + kChunk < sizes[t] ? start + kChunk : sizes[t];
    for (int64_t i = start + threadIdx.x; i < end; i += blockDim.x) {
      const C v = load(g[i]);
      count_nonfinite(v, counts + 2 * t);
      g[i] = convert<T>(v * s);
    }
  }
}

void check_grad(const Tensor& g, const Tensor& first) {
  MINIDL_CHECK(g.is_contiguous(), "non_finite_check_and_unscale", "expected a contiguous gradient, got a strided ",
               g.meta_str());
  MINIDL_CHECK(g.device() == first.device() && g.dtype() == first.dtype(), "non_finite_check_and_unscale",
               "one call takes gradients of one device and dtype, got ", first.meta_str(), " and ", g.meta_str());
}

bool unscale(const Tensor& grad, float inv, std::pair<int64_t, int64_t>* counts) {
  check_grad(grad, grad);
  const int64_t n = grad.numel();
  if (counts) *counts = {0, 0};
  if (n == 0) return false;
  minidl::cuda::DeviceGuard guard(grad.device());
  const int dev = grad.device().index;
  cudaStream_t s = stream_of(grad);
  Tensor dcounts = scratch({2}, DType::I64, grad);
  MINIDL_CUDA_CHECK(cudaMemsetAsync(dcounts.raw_data(), 0, 2 * sizeof(int64_t), s));
  auto* pc = static_cast<unsigned long long*>(dcounts.raw_data());
  visit_floating(grad.dtype(), "non_finite_check_and_unscale", [&](auto tag) {
    using T = typename decltype(tag)::type;
    unscale_kernel<T><<<grid_for(n, dev), kThreads, 0, s>>>(static_cast<T*>(grad.raw_data()), n, inv, pc);
  });
  MINIDL_CUDA_CHECK_LAUNCH("non_finite_check_and_unscale");
  int64_t h[2] = {0, 0};
  MINIDL_CUDA_CHECK(cudaMemcpyAsync(h, pc, sizeof h, cudaMemcpyDeviceToHost, s));
  minidl::cuda::sync_stream(dev);
  if (counts) *counts = {h[0], h[1]};
  return h[0] + h[1] > 0;
}

bool unscale_many(const std::vector<Tensor>& grads, float inv, std::vector<std::pair<int64_t, int64_t>>* counts) {
  if (counts) counts->assign(grads.size(), {0, 0});
  if (grads.empty()) return false;
  const Tensor& first = grads[0];
  for (const Tensor& g : grads) check_grad(g, first);
  const int64_t T_ = static_cast<int64_t>(grads.size());
  // Host-side table: pointers, sizes, then one (tensor, start) pair per chunk.
  std::vector<int64_t> ptrs, sizes, chunk_tensor, chunk_start;
  for (int64_t t = 0; t < T_; ++t) {
    ptrs.push_back(reinterpret_cast<int64_t>(grads[t].raw_data()));
    sizes.push_back(grads[t].numel());
    for (int64_t st = 0; st < grads[t].numel(); st += kChunk) {
      chunk_tensor.push_back(t);
      chunk_start.push_back(st);
    }
  }
  const int64_t chunks = static_cast<int64_t>(chunk_tensor.size());
  if (chunks == 0) return false;
  std::vector<int64_t> meta;
  meta.reserve(static_cast<size_t>(2 * T_ + 2 * chunks));
  for (auto* v : {&ptrs, &sizes, &chunk_tensor, &chunk_start}) meta.insert(meta.end(), v->begin(), v->end());

  minidl::cuda::DeviceGuard guard(first.device());
  const int dev = first.device().index;
  cudaStream_t s = stream_of(first);
  Tensor dmeta = scratch({static_cast<int64_t>(meta.size())}, DType::I64, first);
  Tensor dcounts = scratch({2 * T_}, DType::I64, first);
  MINIDL_CUDA_CHECK(cudaMemcpyAsync(dmeta.raw_data(), meta.data(), meta.size() * sizeof(int64_t), cudaMemcpyHostToDevice, s));
  MINIDL_CUDA_CHECK(cudaMemsetAsync(dcounts.raw_data(), 0, static_cast<size_t>(2 * T_) * sizeof(int64_t), s));
  auto* pc = static_cast<unsigned long long*>(dcounts.raw_data());
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(chunks, int64_t{minidl::cuda::sm_count(dev)} * 16));
  visit_floating(first.dtype(), "non_finite_check_and_unscale", [&](auto tag) {
    using T = typename decltype(tag)::type;
    unscale_many_kernel<T><<<blocks, kThreads, 0, s>>>(static_cast<const int64_t*>(dmeta.raw_data()), T_, chunks, inv, pc);
  });
  MINIDL_CUDA_CHECK_LAUNCH("non_finite_check_and_unscale");
  std::vector<int64_t> h(static_cast<size_t>(2 * T_));
  MINIDL_CUDA_CHECK(cudaMemcpyAsync(h.data(), pc, h.size() * sizeof(int64_t), cudaMemcpyDeviceToHost, s));
  minidl::cuda::sync_stream(dev);
  bool found = false;
  for (int64_t t = 0; t < T_; ++t) {
    found |= h[2 * t] + h[2 * t + 1] > 0;
    if (counts) (*counts)[static_cast<size_t>(t)] = {h[2 * t], h[2 * t + 1]};
  }
  return found;
}
}  // namespace

void register_amp(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    r.unscale.set(DeviceType::CUDA, t, unscale);
    r.unscale_many.set(DeviceType::CUDA, t, unscale_many);
  }
}

}  // namespace minidl::kernels::cuda
