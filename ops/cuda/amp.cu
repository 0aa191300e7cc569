// CUDA kernel of the foreach unscale-and-check family (GradScaler's pass): every tensor of a
// (device, dtype) group is multiplied by inv_scale in place in one launch, with inf and NaN counts
// per tensor, read back with one transfer. A value is non-finite exactly when its exponent bits
// are all ones; counting happens only on such values, so the atomics cost nothing in a clean step.
// Counts classify the incoming value.
#include <vector>

#include "ops/cuda/multi_tensor.cuh"

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

template <class T>
__global__ void foreach_unscale_kernel(MultiTensorTable<1> tab, float inv, unsigned long long* counts) {
  using C = compute_t<T>;
  const C s = static_cast<C>(inv);
  for (int64_t c = blockIdx.x; c < tab.chunks; c += gridDim.x) {
    int64_t t, start, end;
    tab.chunk(c, t, start, end);
    T* g = tab.ptr<T>(0, t);
    for (int64_t i = start + threadIdx.x; i < end; i += blockDim.x) {
      const C v = load(g[i]);
      const int kind = nonfinite_kind(v);
      if (kind >= 0) atomicAdd(counts + 2 * t + kind, 1ull);  // [2t]: inf, [2t + 1]: NaN
      g[i] = convert<T>(v * s);
    }
  }
}

void foreach_unscale(const std::vector<Tensor>& tensors, float inv, bool count, std::vector<NonFiniteCount>& out) {
  out.assign(tensors.size(), {});
  if (tensors.empty()) return;
  minidl::cuda::DeviceGuard guard(tensors[0].device());
  MultiTensorLaunch<1> launch({&tensors});
  if (launch.empty()) return;
  const int64_t n = static_cast<int64_t>(tensors.size());
  Tensor dcounts = scratch({2 * n}, DType::I64, tensors[0]);
  MINIDL_CUDA_CHECK(cudaMemsetAsync(dcounts.raw_data(), 0, static_cast<size_t>(2 * n) * sizeof(int64_t), launch.stream));
  auto* pc = static_cast<unsigned long long*>(dcounts.raw_data());
  visit_floating(tensors[0].dtype(), "foreach_non_finite_check_and_unscale_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    foreach_unscale_kernel<T><<<launch.blocks, kThreads, 0, launch.stream>>>(launch.table, inv, pc);
  });
  MINIDL_CUDA_CHECK_LAUNCH("foreach_non_finite_check_and_unscale_");
  std::vector<int64_t> h(static_cast<size_t>(2 * n));
  MINIDL_CUDA_CHECK(cudaMemcpyAsync(h.data(), pc, h.size() * sizeof(int64_t), cudaMemcpyDeviceToHost, launch.stream));
  minidl::cuda::sync_stream(launch.device);
  for (int64_t t = 0; t < n; ++t) {
    const int64_t inf = h[2 * t], nan = h[2 * t + 1];
    out[t] = {inf + nan > 0, count ? inf : 0, count ? nan : 0};
  }
}
}  // namespace

void register_foreach_unscale(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16})
    r.foreach_unscale.set(DeviceType::CUDA, t, foreach_unscale);
}

}  // namespace minidl::kernels::cuda
