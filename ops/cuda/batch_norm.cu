// CUDA batch norm kernels over contiguous x viewed as [N, C, S], with the CPU kernels' contracts
// (ops/kernels.h, ops/cpu/batch_norm.cpp): per-channel statistics, the per-channel affine apply and
// the backward, with batch_norm_relu's ReLU fused into both as on the CPU. Per-channel vectors are
// in the compute dtype (f32 for f16/bf16/f32 input, f64 for f64); the channel sums are accumulated in f64, shifted by the channel's first value as the CPU
// does (no cancellation when |mean| >> std). The channel sums split each channel over several blocks
// (a grid of C x P; one block per channel left most of an H200 idle: ResNet-20's 16-channel layers ran
// 16 blocks on 132 multiprocessors, ~120 us per pass on 2M elements, measured with ncu), each block
// writing its partial sums, and a second kernel adds a channel's partials in a fixed order
// (deterministic) and finishes the channel. One thread per element for the element-wise passes.
#include <algorithm>
#include <cmath>

#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/common.cuh"

namespace minidl::kernels::cuda {

namespace {

struct Layout {
  int64_t N, C, S;
  explicit Layout(const Tensor& x) : N(x.size(0)), C(x.size(1)), S(x.numel() / std::max<int64_t>(1, x.size(0) * x.size(1))) {}
  int64_t M() const { return N * S; }
};

// How a channel's M = N * S elements are split among blocks: P parts of `chunk` elements.
struct Split {
  int64_t P = 1, chunk = 0;
};
Split split_channels(const Layout& L, int device) {
  constexpr int64_t kMinPerBlock = 4 * kThreads;  // below this a block's own reduction dominates
  const int64_t M = L.M();
  const int64_t want = (4 * static_cast<int64_t>(minidl::cuda::sm_count(device)) + L.C - 1) / std::max<int64_t>(1, L.C);
  Split sp;
  sp.P = std::clamp<int64_t>(want, 1, std::max<int64_t>(1, M / kMinPerBlock));
  sp.P = std::min<int64_t>(sp.P, 65535);  // gridDim.y
  sp.chunk = (M + sp.P - 1) / sp.P;
  return sp;
}

// This block's part of channel c (blockIdx.x) calls f(offset) for each of its elements; the element
// index m in [0, N*S) maps to ((m / S) * C + c) * S + m % S, in 32-bit arithmetic where it fits
// (64-bit division costs several times more).
template <class F>
__device__ __forceinline__ void for_channel_part(int64_t C, int64_t S, int64_t M, int64_t chunk, F&& f) {
  const int64_t c = blockIdx.x;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * chunk, m1 = min(M, m0 + chunk);
  if (M <= INT32_MAX && S <= INT32_MAX) {
    const uint32_t s32 = static_cast<uint32_t>(S);
    for (int64_t m = m0 + threadIdx.x; m < m1; m += blockDim.x) {
      const uint32_t mm = static_cast<uint32_t>(m);
      f((static_cast<int64_t>(mm / s32) * C + c) * S + mm % s32);
    }
  } else {
    for (int64_t m = m0 + threadIdx.x; m < m1; m += blockDim.x) f(((m / S) * C + c) * S + m % S);
  }
}

// The block's two sums into part[(c * P + p) * 2 + {0, 1}] (c, p: the block's channel and part).
__device__ __forceinline__ void store_part(double* part, double s1, double s2) {
  s1 = group_sum<kThreads>(s1);
  s2 = group_sum<kThreads>(s2);
  if (threadIdx.x == 0) {
    double* out = part + (blockIdx.x * int64_t{gridDim.y} + blockIdx.y) * 2;
    out[0] = s1;
    out[1] = s2;
  }
}

// Channel c's P partial pairs, added in order (the same order every run).
__device__ __forceinline__ void add_parts(const double* part, int64_t c, int64_t P, double& s1, double& s2) {
  for (int64_t p = 0; p < P; ++p) {
    s1 += part[(c * P + p) * 2];
    s2 += part[(c * P + p) * 2 + 1];
  }
}

// Block (c, p) of the stats pass: the sums of d and d^2 over its part, d = x - (channel c's first
// element), into part[(c * P + p) * 2 + {0, 1}].
template <class T>
__global__ void stats_parts_kernel(double* part, const T* x, int64_t C, int64_t S, int64_t M, int64_t chunk) {
  const int64_t c = blockIdx.x;
  const double k = static_cast<double>(load(x[c * S]));
  double s1 = 0, s2 = 0;
  for_channel_part(C, S, M, chunk, [&](int64_t o) {
    const double d = static_cast<double>(load(x[o])) - k;
    s1 += d;
    s2 += d * d;
  });
  store_part(part, s1, s2);
}

// One thread per channel: the partials in order, then the mean and biased variance.
template <class T>
__global__ void stats_finish_kernel(compute_t<T>* mean, compute_t<T>* var, const double* part, const T* x, int64_t C,
                                    int64_t S, int64_t M, int64_t P) {
  using Cp = compute_t<T>;
  const int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (c >= C) return;
  double s1 = 0, s2 = 0;
  add_parts(part, c, P, s1, s2);
  const double k = M > 0 ? static_cast<double>(load(x[c * S])) : 0.0;
  const double m1 = s1 / static_cast<double>(M);
  mean[c] = static_cast<Cp>(k + m1);
  var[c] = static_cast<Cp>(fmax(0.0, s2 / static_cast<double>(M) - m1 * m1));
}

template <class T>
__global__ void apply_kernel(T* y, const T* x, const T* residual, const compute_t<T>* scale, const compute_t<T>* shift,
                             int64_t C, int64_t S, int64_t total, bool relu) {
  using Cp = compute_t<T>;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = (i / S) % C;
    Cp v = load(x[i]) * scale[c] + shift[c];
    if (residual != nullptr) v += load(residual[i]);  // batch_norm_add_relu's shortcut
    if (relu && v <= Cp(0)) v = Cp(0);  // ReLU's rule: NaN propagates
    y[i] = convert<T>(v);
  }
}

// The gradient reaching batch norm: gy, or under a fused ReLU with output y, gy where y > 0 (or NaN).
template <class T>
__device__ __forceinline__ compute_t<T> masked_grad(const T* gy, const T* relu_out, int64_t o) {
  using Cp = compute_t<T>;
  const Cp g = load(gy[o]);
  return relu_out != nullptr && load(relu_out[o]) <= Cp(0) ? Cp(0) : g;
}

// Block (c, p) of the backward: the sums of g and g (x - mean) over its part, g the gradient
// reaching batch norm, into part[(c * P + p) * 2 + {0, 1}].
template <class T>
__global__ void backward_parts_kernel(double* part, const T* gy, const T* relu_out, const T* x, const compute_t<T>* mean,
                                      int64_t C, int64_t S, int64_t M, int64_t chunk) {
  const int64_t c = blockIdx.x;
  const double mc = mean[c];
  double s1 = 0, s2 = 0;
  for_channel_part(C, S, M, chunk, [&](int64_t o) {
    const double g = masked_grad(gy, relu_out, o);
    s1 += g;
    s2 += g * (static_cast<double>(load(x[o])) - mc);
  });
  store_part(part, s1, s2);
}

// One thread per channel: sum_dy, sum_dy_xhat from the partials in order, and the coefficients of
// gx = a[c] * gy + b[c] * x + d[c], stored as coef[0..3][c].
template <class T>
__global__ void backward_finish_kernel(compute_t<T>* sum_dy, compute_t<T>* sum_dy_xhat, compute_t<T>* coef, const double* part,
                                       const compute_t<T>* mean, const compute_t<T>* invstd, const compute_t<T>* scale,
                                       int64_t C, int64_t M, int64_t P, bool training) {
  using Cp = compute_t<T>;
  const int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (c >= C) return;
  double s1 = 0, s2 = 0;
  add_parts(part, c, P, s1, s2);
  const double mc = mean[c];
  const Cp sdy = static_cast<Cp>(s1), sdx = static_cast<Cp>(s2 * invstd[c]);
  sum_dy[c] = sdy;
  sum_dy_xhat[c] = sdx;
  if (coef == nullptr) return;
  coef[c] = scale[c];
  if (training) {
    const double Md = static_cast<double>(M);
    const double kk = static_cast<double>(scale[c]) * invstd[c] * sdx / Md;
    coef[C + c] = static_cast<Cp>(-kk);
    coef[2 * C + c] = static_cast<Cp>(-static_cast<double>(scale[c]) * sdy / Md + mc * kk);
  } else {
    coef[C + c] = 0;
    coef[2 * C + c] = 0;
  }
}

template <class T>
__global__ void backward_apply_kernel(T* gx, const T* gy, const T* relu_out, const T* x, const compute_t<T>* coef,
                                      int64_t C, int64_t S, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = (i / S) % C;
    gx[i] = convert<T>(coef[c] * masked_grad(gy, relu_out, i) + coef[C + c] * load(x[i]) + coef[2 * C + c]);
  }
}

template <class T>
const compute_t<T>* cptr(const Tensor& t) {
  return static_cast<const compute_t<T>*>(t.raw_data());
}
template <class T>
compute_t<T>* mptr(const Tensor& t) {
  return static_cast<compute_t<T>*>(t.raw_data());
}

void stats_fn(const Tensor& mean, const Tensor& var, const Tensor& x) {
  minidl::cuda::DeviceGuard guard(x.device());
  const Layout L(x);
  if (L.C == 0) return;
  visit_floating(x.dtype(), "batch_norm_stats", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const Split sp = split_channels(L, x.device().index);
    Tensor part = scratch({L.C, sp.P, 2}, DType::F64, x);
    const T* xp = static_cast<const T*>(x.raw_data());
    if (L.M() > 0) {
      stats_parts_kernel<T><<<dim3(static_cast<unsigned>(L.C), static_cast<unsigned>(sp.P)), kThreads, 0, stream_of(x)>>>(
          static_cast<double*>(part.raw_data()), xp, L.C, L.S, L.M(), sp.chunk);
      MINIDL_CUDA_CHECK_LAUNCH("batch_norm_stats (parts)");
    } else {
      registry().fill.get(part.device(), DType::F64)(part, 0.0);
    }
    stats_finish_kernel<T><<<static_cast<unsigned>((L.C + kThreads - 1) / kThreads), kThreads, 0, stream_of(x)>>>(
        mptr<T>(mean), mptr<T>(var), static_cast<const double*>(part.raw_data()), xp, L.C, L.S, L.M(), sp.P);
    MINIDL_CUDA_CHECK_LAUNCH("batch_norm_stats");
  });
}

void apply_fn(const Tensor& y, const Tensor& x, const Tensor& scale, const Tensor& shift, bool relu, const Tensor& residual) {
  minidl::cuda::DeviceGuard guard(x.device());
  const Layout L(x);
  const int64_t n = x.numel();
  if (n == 0) return;
  visit_floating(x.dtype(), "batch_norm_apply", [&](auto tag) {
    using T = typename decltype(tag)::type;
    apply_kernel<T><<<grid_for(n, x.device().index), kThreads, 0, stream_of(x)>>>(
        static_cast<T*>(y.raw_data()), static_cast<const T*>(x.raw_data()),
        residual.defined() ? static_cast<const T*>(residual.raw_data()) : nullptr, cptr<T>(scale), cptr<T>(shift), L.C, L.S,
        n, relu);
    MINIDL_CUDA_CHECK_LAUNCH("batch_norm_apply");
  });
}

void backward_fn(const Tensor& gx, const Tensor& sum_dy, const Tensor& sum_dy_xhat, const Tensor& gy, const Tensor& x,
                 const Tensor& mean, const Tensor& invstd, const Tensor& scale, bool training, const Tensor& relu_out) {
  minidl::cuda::DeviceGuard guard(x.device());
  const Layout L(x);
  if (L.C == 0) return;
  visit_floating(x.dtype(), "batch_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const DType cd = std::is_same_v<T, double> ? DType::F64 : DType::F32;
    Tensor coef = gx.defined() ? scratch({3, L.C}, cd, x) : Tensor();
    cudaStream_t s = stream_of(x);
    const T* masked_by = relu_out.defined() ? static_cast<const T*>(relu_out.raw_data()) : nullptr;
    const Split sp = split_channels(L, x.device().index);
    Tensor part = scratch({L.C, sp.P, 2}, DType::F64, x);
    if (L.M() > 0) {
      backward_parts_kernel<T><<<dim3(static_cast<unsigned>(L.C), static_cast<unsigned>(sp.P)), kThreads, 0, s>>>(
          static_cast<double*>(part.raw_data()), static_cast<const T*>(gy.raw_data()), masked_by,
          static_cast<const T*>(x.raw_data()), cptr<T>(mean), L.C, L.S, L.M(), sp.chunk);
      MINIDL_CUDA_CHECK_LAUNCH("batch_norm_backward (parts)");
    } else {
      registry().fill.get(part.device(), DType::F64)(part, 0.0);
    }
    backward_finish_kernel<T><<<static_cast<unsigned>((L.C + kThreads - 1) / kThreads), kThreads, 0, s>>>(
        mptr<T>(sum_dy), mptr<T>(sum_dy_xhat), coef.defined() ? mptr<T>(coef) : nullptr,
        static_cast<const double*>(part.raw_data()), cptr<T>(mean), cptr<T>(invstd), cptr<T>(scale), L.C, L.M(), sp.P,
        training);
    MINIDL_CUDA_CHECK_LAUNCH("batch_norm_backward (sums)");
    const int64_t n = x.numel();
    if (!gx.defined() || n == 0) return;
    backward_apply_kernel<T><<<grid_for(n, x.device().index), kThreads, 0, s>>>(
        static_cast<T*>(gx.raw_data()), static_cast<const T*>(gy.raw_data()), masked_by, static_cast<const T*>(x.raw_data()),
        cptr<T>(coef), L.C, L.S, n);
    MINIDL_CUDA_CHECK_LAUNCH("batch_norm_backward (gx)");
  });
}
}  // namespace

void register_batch_norm(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    r.batch_norm_stats.set(DeviceType::CUDA, t, stats_fn);
    r.batch_norm_apply.set(DeviceType::CUDA, t, apply_fn);
    r.batch_norm_backward.set(DeviceType::CUDA, t, backward_fn);
  }
}

}  // namespace minidl::kernels::cuda
