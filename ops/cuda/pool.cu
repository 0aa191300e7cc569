// CUDA 2-D pooling over contiguous [N, C, H, W] tensors, with the CPU kernels' contracts
// (ops/kernels.h, ops/cpu/pool.cpp): max pool with flat indices ih*W + iw (a value wins when it is
// greater or NaN, so NaN propagates, ties keep the first), average pool with PyTorch's windows and
// divisors (count_include_pad, adaptive windows), and both backward passes. Forward: one thread per
// output element. Backward: one thread per output element scattering into gx with atomics; f16/bf16
// accumulate in an f32 buffer rounded once (as the CPU kernels accumulate a plane in f32).
#include <cmath>

#include "ops/cuda/common.cuh"

namespace minidl::kernels::cuda {

namespace {


// Max pool window, as PyTorch: the end clipped to the input, the start moved to the first tap
// inside (taps are dilation apart).
__device__ __forceinline__ PoolWindow max_window(const Pool2dGeometry& g, int64_t oh, int64_t ow) {
  if (g.adaptive) return avg_pool_window(g, oh, ow);  // adaptive max pooling: the same windows, taps 1 apart
  PoolWindow w;
  int64_t s = oh * g.sh - g.ph;
  w.he = min(s + (g.kH - 1) * g.dh + 1, g.H);
  while (s < 0) s += g.dh;
  w.hs = s;
  s = ow * g.sw - g.pw;
  w.we = min(s + (g.kW - 1) * g.dw + 1, g.W);
  while (s < 0) s += g.dw;
  w.ws = s;
  w.divisor = 1;
  return w;
}


// Output element o of the [N*C, OH, OW] output: its plane and position.
struct OutPos {
  int64_t plane, oh, ow;
};
__device__ __forceinline__ OutPos out_pos(const Pool2dGeometry& g, int64_t o) {
  const int64_t ow = o % g.OW, r = o / g.OW;
  return {r / g.OH, r % g.OH, ow};
}

template <class T>
__global__ void max_pool_kernel(T* y, int64_t* indices, const T* x, Pool2dGeometry g, int64_t total) {
  using C = compute_t<T>;
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < total; o += int64_t{gridDim.x} * blockDim.x) {
    const OutPos p = out_pos(g, o);
    const PoolWindow w = max_window(g, p.oh, p.ow);
    const T* xp = x + p.plane * g.H * g.W;
    int64_t best = w.hs * g.W + w.ws;
    C m = -INFINITY;
    for (int64_t ih = w.hs; ih < w.he; ih += g.dh)
      for (int64_t iw = w.ws; iw < w.we; iw += g.dw) {
        const C v = load(xp[ih * g.W + iw]);
        if (v > m || v != v) {  // the CPU kernel's rule: greater, or NaN
          m = v;
          best = ih * g.W + iw;
        }
      }
    y[o] = convert<T>(m);
    indices[o] = best;
  }
}

template <class T>
__global__ void max_pool_backward_kernel(atomic_acc_t<T>* gx, const T* gy, const int64_t* indices, Pool2dGeometry g,
                                         int64_t total) {
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < total; o += int64_t{gridDim.x} * blockDim.x) {
    const int64_t plane = o / (g.OH * g.OW), i = indices[o];
    // A window wholly inside the padding has an index past the plane (as the CPU kernel): no gradient.
    if (static_cast<uint64_t>(i) < static_cast<uint64_t>(g.H * g.W))
      atomic_accumulate(gx + plane * g.H * g.W + i, static_cast<atomic_acc_t<T>>(load(gy[o])));
  }
}

template <class T>
__global__ void avg_pool_kernel(T* y, const T* x, Pool2dGeometry g, int64_t total) {
  using C = compute_t<T>;
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < total; o += int64_t{gridDim.x} * blockDim.x) {
    const OutPos p = out_pos(g, o);
    const PoolWindow w = avg_pool_window(g, p.oh, p.ow);
    const T* xp = x + p.plane * g.H * g.W;
    C s = 0;
    for (int64_t ih = w.hs; ih < w.he; ++ih)
      for (int64_t iw = w.ws; iw < w.we; ++iw) s += load(xp[ih * g.W + iw]);
    y[o] = convert<T>((w.hs >= w.he || w.ws >= w.we) ? C(0) : static_cast<C>(s / static_cast<C>(w.divisor)));
  }
}

template <class T>
__global__ void avg_pool_backward_kernel(atomic_acc_t<T>* gx, const T* gy, Pool2dGeometry g, int64_t total) {
  using C = compute_t<T>;
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < total; o += int64_t{gridDim.x} * blockDim.x) {
    const OutPos p = out_pos(g, o);
    const PoolWindow w = avg_pool_window(g, p.oh, p.ow);
    if (w.hs >= w.he || w.ws >= w.we) continue;
    const C v = load(gy[o]) / static_cast<C>(w.divisor);
    atomic_acc_t<T>* gp = gx + p.plane * g.H * g.W;
    for (int64_t ih = w.hs; ih < w.he; ++ih)
      for (int64_t iw = w.ws; iw < w.we; ++iw) atomic_accumulate(gp + ih * g.W + iw, static_cast<atomic_acc_t<T>>(v));
  }
}

int64_t outputs(const Pool2dGeometry& g) { return g.N * g.C * g.OH * g.OW; }

void max_fwd(const Tensor& y, const Tensor& indices, const Tensor& x, const Pool2dGeometry& g) {
  minidl::cuda::DeviceGuard guard(x.device());
  const int64_t n = outputs(g);
  if (n == 0) return;
  visit_floating(x.dtype(), "max_pool2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    max_pool_kernel<T><<<grid_for(n, x.device().index), kThreads, 0, stream_of(x)>>>(
        static_cast<T*>(y.raw_data()), static_cast<int64_t*>(indices.raw_data()), static_cast<const T*>(x.raw_data()), g, n);
    MINIDL_CUDA_CHECK_LAUNCH("max_pool2d");
  });
}

void max_bwd(const Tensor& gx, const Tensor& gy, const Tensor& indices, const Pool2dGeometry& g) {
  minidl::cuda::DeviceGuard guard(gy.device());
  visit_floating(gy.dtype(), "max_pool2d_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    AtomicAccumulator<T> acc(gx, /*start_from_zero=*/true);
    const int64_t n = outputs(g);
    if (n > 0) {
      max_pool_backward_kernel<T><<<grid_for(n, gy.device().index), kThreads, 0, stream_of(gy)>>>(
          acc.data(), static_cast<const T*>(gy.raw_data()), static_cast<const int64_t*>(indices.raw_data()), g, n);
      MINIDL_CUDA_CHECK_LAUNCH("max_pool2d_backward");
    }
    acc.finish();
  });
}

void avg_fwd(const Tensor& y, const Tensor& x, const Pool2dGeometry& g) {
  minidl::cuda::DeviceGuard guard(x.device());
  const int64_t n = outputs(g);
  if (n == 0) return;
  visit_floating(x.dtype(), "avg_pool2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    avg_pool_kernel<T><<<grid_for(n, x.device().index), kThreads, 0, stream_of(x)>>>(
        static_cast<T*>(y.raw_data()), static_cast<const T*>(x.raw_data()), g, n);
    MINIDL_CUDA_CHECK_LAUNCH("avg_pool2d");
  });
}

void avg_bwd(const Tensor& gx, const Tensor& gy, const Pool2dGeometry& g) {
  minidl::cuda::DeviceGuard guard(gy.device());
  visit_floating(gy.dtype(), "avg_pool2d_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    AtomicAccumulator<T> acc(gx, /*start_from_zero=*/true);
    const int64_t n = outputs(g);
    if (n > 0) {
      avg_pool_backward_kernel<T><<<grid_for(n, gy.device().index), kThreads, 0, stream_of(gy)>>>(
          acc.data(), static_cast<const T*>(gy.raw_data()), g, n);
      MINIDL_CUDA_CHECK_LAUNCH("avg_pool2d_backward");
    }
    acc.finish();
  });
}
}  // namespace

void register_pool(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    r.max_pool2d.set(DeviceType::CUDA, t, max_fwd);
    r.max_pool2d_backward.set(DeviceType::CUDA, t, max_bwd);
    r.avg_pool2d.set(DeviceType::CUDA, t, avg_fwd);
    r.avg_pool2d_backward.set(DeviceType::CUDA, t, avg_bwd);
  }
}

}  // namespace minidl::kernels::cuda
