// CUDA fill and copy: fill of any dtype and strides; device copies with dtype conversion,
// broadcasting and any strides; host <-> device copies (a contiguous same-dtype transfer is one
// cudaMemcpyAsync, uploads of 64 KiB and more through pinned staging buffers; anything else is
// converted/packed on the side that has the kernels for it).
#include <cstring>
#include <mutex>
#include <vector>

#include "ops/cuda/common.cuh"

namespace minidl::kernels::cuda {

namespace {
// Same-dtype kernels only move bytes: one instantiation per element size.
template <int Size> struct Bits;
template <> struct Bits<1> { using type = uint8_t; };
template <> struct Bits<2> { using type = uint16_t; };
template <> struct Bits<4> { using type = uint32_t; };
template <> struct Bits<8> { using type = uint64_t; };

template <class U>
__global__ void fill_contiguous_kernel(U* out, int64_t n, U value) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{blockDim.x} * gridDim.x)
    out[i] = value;
}

template <class U>
__global__ void fill_strided_kernel(U* out, int64_t n, OffsetCalc<1> oc, U value) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[1];
    oc.get(i, off);
    out[off[0]] = value;
  }
}

template <class To, class From>
__global__ void convert_contiguous_kernel(To* dst, const From* src, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{blockDim.x} * gridDim.x)
    dst[i] = convert<To>(src[i]);
}

template <class To, class From>
__global__ void convert_strided_kernel(To* dst, const From* src, int64_t n, OffsetCalc<2> oc) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[2];
    oc.get(i, off);
    dst[off[0]] = convert<To>(src[off[1]]);
  }
}

template <int Size, class F>
void with_bits(F&& f) {
  f(TypeTag<typename Bits<Size>::type>{});
}
template <class F>
void visit_size(int size, F&& f) {
  switch (size) {
    case 1: return with_bits<1>(f);
    case 2: return with_bits<2>(f);
    case 4: return with_bits<4>(f);
    case 8: return with_bits<8>(f);
    default: MINIDL_FAIL("copy_", "unsupported element size ", size);
  }
}

void fill(const Tensor& out, double value) {
  const int64_t n = out.numel();
  if (n == 0) return;
  minidl::cuda::DeviceGuard guard(out.device());
  // The value in out's storage type, converted on the host with the kernels' rules.
  uint64_t bits = 0;
  visit(out.dtype(), "fill_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = convert<T>(value);
    std::memcpy(&bits, &v, sizeof(T));
  });
  const int dev = out.device().index;
  visit_size(element_size(out.dtype()), [&](auto tag) {
    using U = typename decltype(tag)::type;
    U v;
    std::memcpy(&v, &bits, sizeof(U));
    U* p = static_cast<U*>(out.raw_data());
    if (out.is_contiguous()) {
      fill_contiguous_kernel<U><<<grid_for(n, dev, 4), kThreads, 0, stream_of(out)>>>(p, n, v);
    } else {
      auto oc = make_offset_calc<1>(out.shape(), {&out}, "fill_");
      fill_strided_kernel<U><<<grid_for(n, dev, 4), kThreads, 0, stream_of(out)>>>(p, n, oc, v);
    }
    MINIDL_CUDA_CHECK_LAUNCH("fill_");
  });
}

// Whether src, broadcast to dst's shape, walks memory exactly like dst and both are dense.
bool same_dense_layout(const Tensor& dst, const Tensor& src) {
  return dst.shape() == src.shape() && dst.is_contiguous() && src.is_contiguous();
}
}  // namespace

void copy_on_device(const Tensor& dst, const Tensor& src) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  minidl::cuda::DeviceGuard guard(dst.device());
  const int dev = dst.device().index;
  cudaStream_t s = stream_of(dst);
  if (dst.dtype() == src.dtype() && same_dense_layout(dst, src)) {
    if (dst.raw_data() != src.raw_data())
      MINIDL_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), dst.nbytes(), cudaMemcpyDeviceToDevice, s));
    return;
  }
  if (dst.dtype() == src.dtype()) {
    auto oc = make_offset_calc<2>(dst.shape(), {&dst, &src}, "copy_");
    visit_size(element_size(dst.dtype()), [&](auto tag) {
      using U = typename decltype(tag)::type;
      convert_strided_kernel<U, U><<<grid_for(n, dev, 4), kThreads, 0, s>>>(
          static_cast<U*>(dst.raw_data()), static_cast<const U*>(src.raw_data()), n, oc);
    });
    MINIDL_CUDA_CHECK_LAUNCH("copy_");
    return;
  }
  visit(dst.dtype(), "copy_", [&](auto to_tag) {
    using To = typename decltype(to_tag)::type;
    visit(src.dtype(), "copy_", [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      To* d = static_cast<To*>(dst.raw_data());
      const From* p = static_cast<const From*>(src.raw_data());
      if (same_dense_layout(dst, src)) {
        convert_contiguous_kernel<To, From><<<grid_for(n, dev, 4), kThreads, 0, s>>>(d, p, n);
      } else {
        auto oc = make_offset_calc<2>(dst.shape(), {&dst, &src}, "copy_");
        convert_strided_kernel<To, From><<<grid_for(n, dev, 4), kThreads, 0, s>>>(d, p, n, oc);
      }
    });
  });
  MINIDL_CUDA_CHECK_LAUNCH("copy_");
}

Tensor contiguous_on_device(const Tensor& x) {
  if (x.is_contiguous()) return x;
  Tensor out = scratch(x.shape(), x.dtype(), x);
  copy_on_device(out, x);
  return out;
}

namespace {
const Registry& reg() { return registry(); }

// Host-to-device transfers of at least kStageMin bytes go through pinned staging buffers: the
// host copies the source into pinned memory (memcpy speed) and queues the DMA on the device's
// stream without waiting for it, so uploading a data-loader batch overlaps with the kernels still
// queued from the previous step, and the pageable source may be freed at once. Two buffers per
// device alternate; a buffer is reused only after the event recorded behind its last DMA.
constexpr size_t kStageMin = size_t{64} << 10;   // below this the driver's own staging is as good
constexpr size_t kStageMax = size_t{256} << 20;  // above this, plain pageable copies

class PinnedStaging {
 public:
  // False when the size is out of range (the caller copies directly).
  bool copy(void* dst, const void* src, size_t n, cudaStream_t s) {
    if (n < kStageMin || n > kStageMax) return false;
    std::lock_guard<std::mutex> lock(mu_);
    Slot& slot = slots_[next_];
    next_ = 1 - next_;
    if (slot.pending) MINIDL_CUDA_CHECK(cudaEventSynchronize(slot.done));
    slot.pending = false;
    if (slot.cap < n) {
      if (slot.host) MINIDL_CUDA_CHECK(cudaFreeHost(slot.host));
      slot.host = nullptr;
      slot.cap = 0;
      size_t cap = kStageMin;
      while (cap < n) cap *= 2;
      MINIDL_CUDA_CHECK(cudaHostAlloc(&slot.host, cap, cudaHostAllocDefault));
      slot.cap = cap;
    }
    if (!slot.done) MINIDL_CUDA_CHECK(cudaEventCreateWithFlags(&slot.done, cudaEventDisableTiming));
    std::memcpy(slot.host, src, n);
    MINIDL_CUDA_CHECK(cudaMemcpyAsync(dst, slot.host, n, cudaMemcpyHostToDevice, s));
    MINIDL_CUDA_CHECK(cudaEventRecord(slot.done, s));
    slot.pending = true;
    return true;
  }

 private:
  struct Slot {
    void* host = nullptr;
    size_t cap = 0;
    cudaEvent_t done = nullptr;
    bool pending = false;
  };
  std::mutex mu_;
  Slot slots_[2];
  int next_ = 0;
};

// One per device, never destroyed (static destruction may run after the CUDA context is gone).
PinnedStaging& staging(int device) {
  static std::mutex mu;
  static std::vector<PinnedStaging*> all;
  std::lock_guard<std::mutex> lock(mu);
  if (all.size() <= static_cast<size_t>(device)) all.resize(static_cast<size_t>(device) + 1, nullptr);
  if (!all[static_cast<size_t>(device)]) all[static_cast<size_t>(device)] = new PinnedStaging();
  return *all[static_cast<size_t>(device)];
}

void upload(void* dst, const void* src, size_t n, int device, cudaStream_t s) {
  if (staging(device).copy(dst, src, n, s)) return;
  // From pageable memory, cudaMemcpyAsync returns once the driver has staged the source, so the
  // source may be freed when this returns.
  MINIDL_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, s));
}

// dst (CUDA) <- src (CPU): the host side converts/packs src into dst's dtype and shape (the CPU
// copy kernel), one transfer moves it, and a device copy scatters it when dst is strided.
void copy_host_to_device(const Tensor& dst, const Tensor& src) {
  Tensor h = src;
  if (src.dtype() != dst.dtype() || src.shape() != dst.shape() || !src.is_contiguous()) {
    h = empty(dst.shape(), TensorOptions(dst.dtype()));
    reg().copy.get(Device::cpu(), dst.dtype())(h, src);
  }
  minidl::cuda::DeviceGuard guard(dst.device());
  const int dev = dst.device().index;
  cudaStream_t s = stream_of(dst);
  if (dst.is_contiguous()) {
    upload(dst.raw_data(), h.raw_data(), dst.nbytes(), dev, s);
  } else {
    Tensor d = scratch(dst.shape(), dst.dtype(), dst);
    upload(d.raw_data(), h.raw_data(), d.nbytes(), dev, s);
    copy_on_device(dst, d);
  }
  // No wait: the source has been copied (staging) by the time upload returns; h may die now.
}

// dst (CPU) <- src (CUDA): the device packs src into dst's dtype and shape, one transfer brings it
// back, and the CPU copy kernel scatters it when dst is strided.
void copy_device_to_host(const Tensor& dst, const Tensor& src) {
  minidl::cuda::DeviceGuard guard(src.device());  // before any scratch allocation: blocks come from the current device
  Tensor d = src;
  if (src.dtype() != dst.dtype() || src.shape() != dst.shape() || !src.is_contiguous()) {
    d = scratch(dst.shape(), dst.dtype(), src);
    copy_on_device(d, src);
  }
  cudaStream_t s = stream_of(src);
  if (dst.is_contiguous()) {
    MINIDL_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), d.raw_data(), dst.nbytes(), cudaMemcpyDeviceToHost, s));
    minidl::cuda::sync_stream(src.device().index);
  } else {
    Tensor h = empty(dst.shape(), TensorOptions(dst.dtype()));
    MINIDL_CUDA_CHECK(cudaMemcpyAsync(h.raw_data(), d.raw_data(), h.nbytes(), cudaMemcpyDeviceToHost, s));
    minidl::cuda::sync_stream(src.device().index);
    reg().copy.get(Device::cpu(), dst.dtype())(dst, h);
  }
}

// Keyed by the CUDA side's dtype (Tensor::copy_ and to() pick the non-CPU side's kernel).
void copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  const bool dst_cuda = dst.device().is_cuda(), src_cuda = src.device().is_cuda();
  if (dst_cuda && src_cuda) {
    if (dst.device() == src.device()) return copy_on_device(dst, src);
    // Between two GPUs: bring src to dst's device contiguous in its own dtype, then convert there.
    Tensor c;
    {
      minidl::cuda::DeviceGuard g(src.device());
      c = contiguous_on_device(src);
    }
    minidl::cuda::DeviceGuard g(dst.device());
    Tensor t = scratch(src.shape(), src.dtype(), dst);
    minidl::cuda::sync_stream(src.device().index);
    MINIDL_CUDA_CHECK(cudaMemcpyPeerAsync(t.raw_data(), dst.device().index, c.raw_data(), src.device().index,
                                          c.nbytes(), stream_of(dst)));
    // c belongs to src's device, whose stream may reuse the block once this returns: finish the read.
    minidl::cuda::sync_stream(dst.device().index);
    return copy_on_device(dst, t);
  }
  if (dst_cuda) return copy_host_to_device(dst, src);
  if (src_cuda) return copy_device_to_host(dst, src);
  reg().copy.get(Device::cpu(), dst.dtype())(dst, src);
}
}  // namespace

void register_copy(Registry& r) {
  r.fill.set_all(DeviceType::CUDA, fill);
  r.copy.set_all(DeviceType::CUDA, copy);
}

}  // namespace minidl::kernels::cuda
