// CUDA kernels of the foreach families other than unscale (that one is in amp.cu): norms, the
// in-place multiply by a scalar (a double, or a 0-dim tensor in device memory), and the SGD and
// Adam/AdamW steps. One launch per (device, dtype) group over a multi-tensor chunk table
// (multi_tensor.cuh). Updates compute in f32 for f16/bf16 (in the dtype otherwise) and round once
// per element; norms accumulate in f64, one partial per chunk, combined per tensor in chunk order
// by a second kernel, so results do not depend on scheduling and stay on the device.
#include <cmath>
#include <vector>

#include "ops/cuda/multi_tensor.cuh"

namespace minidl::kernels::cuda {

namespace {
// ---- norms: per chunk, sum |x|^p (or max |x| when p is infinite; NaN propagates)

enum class NormKind : int { One, Two, Inf, General };

// max(a, b), NaN if either is NaN.
__device__ __forceinline__ double nan_max(double a, double b) { return (a != a) ? a : (b != b || b > a) ? b : a; }
__device__ __forceinline__ double norm_combine(NormKind k, double a, double b) { return k == NormKind::Inf ? nan_max(a, b) : a + b; }

template <class T>
__global__ void foreach_norm_kernel(MultiTensorTable<1> tab, NormKind kind, double p, double* partials) {
  __shared__ double shared[kThreads];
  for (int64_t c = blockIdx.x; c < tab.chunks; c += gridDim.x) {
    int64_t t, start, end;
    tab.chunk(c, t, start, end);
    const T* x = tab.ptr<T>(0, t);
    double acc = 0.0;
    for (int64_t i = start + threadIdx.x; i < end; i += blockDim.x) {
      const double a = fabs(static_cast<double>(load(x[i])));
      switch (kind) {
        case NormKind::One: acc += a; break;
        case NormKind::Two: acc += a * a; break;
        case NormKind::Inf: acc = nan_max(acc, a); break;
        case NormKind::General: acc += pow(a, p); break;
      }
    }
    shared[threadIdx.x] = acc;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) shared[threadIdx.x] = norm_combine(kind, shared[threadIdx.x], shared[threadIdx.x + half]);
      __syncthreads();
    }
    if (threadIdx.x == 0) partials[c] = shared[0];
    __syncthreads();  // shared is reused by the next chunk
  }
}

// out[t] <- tensor t's chunk partials combined in chunk order (0 for a tensor without chunks); one
// thread per tensor. Chunks are in tensor order, so tensor t's first chunk is found by bisection.
__global__ void foreach_norm_combine_kernel(MultiTensorTable<1> tab, NormKind kind, const double* partials, double* out) {
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < tab.tensors; t += int64_t{gridDim.x} * blockDim.x) {
    int64_t lo = 0, hi = tab.chunks;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (tab.chunk_tensor[mid] < t) lo = mid + 1;
      else hi = mid;
    }
    double acc = 0.0;
    for (int64_t c = lo; c < tab.chunks && tab.chunk_tensor[c] == t; ++c) acc = norm_combine(kind, acc, partials[c]);
    out[t] = acc;
  }
}

void foreach_norm(const std::vector<Tensor>& tensors, double p, const Tensor& out) {
  if (tensors.empty()) return;
  minidl::cuda::DeviceGuard guard(tensors[0].device());
  MultiTensorLaunch<1> launch({&tensors});
  const NormKind kind = std::isinf(p) ? NormKind::Inf : p == 1.0 ? NormKind::One : p == 2.0 ? NormKind::Two : NormKind::General;
  const int64_t chunks = launch.table.chunks;
  Tensor dpartials = scratch({std::max<int64_t>(chunks, 1)}, DType::F64, tensors[0]);
  auto* pp = static_cast<double*>(dpartials.raw_data());
  if (chunks > 0) {
    visit_floating(tensors[0].dtype(), "foreach_norm", [&](auto tag) {
      using T = typename decltype(tag)::type;
      foreach_norm_kernel<T><<<launch.blocks, kThreads, 0, launch.stream>>>(launch.table, kind, p, pp);
    });
    MINIDL_CUDA_CHECK_LAUNCH("foreach_norm");
  }
  const int64_t n = static_cast<int64_t>(tensors.size());
  const unsigned blocks = static_cast<unsigned>((n + kThreads - 1) / kThreads);
  foreach_norm_combine_kernel<<<blocks, kThreads, 0, launch.stream>>>(launch.table, kind, pp, static_cast<double*>(out.raw_data()));
  MINIDL_CUDA_CHECK_LAUNCH("foreach_norm");
}

// ---- t *= factor

// This block's chunks of every tensor in the table multiplied by factor.
template <class T>
__device__ void scale_chunks(const MultiTensorTable<1>& tab, compute_t<T> factor) {
  for (int64_t c = blockIdx.x; c < tab.chunks; c += gridDim.x) {
    int64_t t, start, end;
    tab.chunk(c, t, start, end);
    T* x = tab.ptr<T>(0, t);
    for (int64_t i = start + threadIdx.x; i < end; i += blockDim.x) x[i] = convert<T>(load(x[i]) * factor);
  }
}

template <class T>
__global__ void foreach_scale_kernel(MultiTensorTable<1> tab, compute_t<T> factor) {
  scale_chunks<T>(tab, factor);
}

// One launch of a scale kernel over the tensors (one device, one dtype): go(tag, launch) launches it.
template <class Go>
void launch_scale(const std::vector<Tensor>& tensors, Go&& go) {
  if (tensors.empty()) return;
  minidl::cuda::DeviceGuard guard(tensors[0].device());
  MultiTensorLaunch<1> launch({&tensors});
  if (launch.empty()) return;
  visit_floating(tensors[0].dtype(), "foreach_mul_", [&](auto tag) { go(tag, launch); });
  MINIDL_CUDA_CHECK_LAUNCH("foreach_mul_");
}

void foreach_scale(const std::vector<Tensor>& tensors, double factor) {
  launch_scale(tensors, [&](auto tag, const MultiTensorLaunch<1>& launch) {
    using T = typename decltype(tag)::type;
    foreach_scale_kernel<T><<<launch.blocks, kThreads, 0, launch.stream>>>(launch.table, static_cast<compute_t<T>>(factor));
  });
}

// ---- t *= *scalar, the scalar read from device memory (no host synchronisation)

template <class T>
__global__ void foreach_scale_by_tensor_kernel(MultiTensorTable<1> tab, const T* scalar) {
  scale_chunks<T>(tab, load(*scalar));
}

void foreach_scale_by_tensor(const std::vector<Tensor>& tensors, const Tensor& scalar) {
  launch_scale(tensors, [&](auto tag, const MultiTensorLaunch<1>& launch) {
    using T = typename decltype(tag)::type;
    foreach_scale_by_tensor_kernel<T><<<launch.blocks, kThreads, 0, launch.stream>>>(
        launch.table, static_cast<const T*>(scalar.raw_data()));
  });
}

// ---- SGD: lists 0 params, 1 grads, 2 momentum buffers (null without momentum)

template <class T>
__global__ void foreach_sgd_kernel(MultiTensorTable<3> tab, SgdHyper h, bool first_step) {
  using C = compute_t<T>;
  const C lr = static_cast<C>(h.lr), wd = static_cast<C>(h.weight_decay), mom = static_cast<C>(h.momentum);
  const C keep = static_cast<C>(1.0 - h.dampening);
  const bool use_wd = h.weight_decay != 0.0;
  for (int64_t c = blockIdx.x; c < tab.chunks; c += gridDim.x) {
    int64_t t, start, end;
    tab.chunk(c, t, start, end);
    T* p = tab.ptr<T>(0, t);
    const T* g = tab.ptr<T>(1, t);
    T* buf = tab.ptr<T>(2, t);
    for (int64_t i = start + threadIdx.x; i < end; i += blockDim.x) {
      const C pi = load(p[i]);
      C d = h.maximize ? -load(g[i]) : load(g[i]);
      if (use_wd) d = d + wd * pi;
      if (buf) {
        const C b = first_step ? d : load(buf[i]) * mom + keep * d;
        buf[i] = convert<T>(b);
        d = h.nesterov ? d + mom * b : b;
      }
      p[i] = convert<T>(pi + (-lr) * d);
    }
  }
}

void foreach_sgd(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                 const std::vector<Tensor>& momentum_buffers, bool first_step, const SgdHyper& h) {
  if (params.empty()) return;
  minidl::cuda::DeviceGuard guard(params[0].device());
  MultiTensorLaunch<3> launch({&params, &grads, &momentum_buffers});
  if (launch.empty()) return;
  visit_floating(params[0].dtype(), "foreach_sgd_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    foreach_sgd_kernel<T><<<launch.blocks, kThreads, 0, launch.stream>>>(launch.table, h, first_step);
  });
  MINIDL_CUDA_CHECK_LAUNCH("foreach_sgd_");
}

// ---- Adam/AdamW: lists 0 params, 1 grads, 2 exp_avg, 3 exp_avg_sq, 4 max_exp_avg_sq (null
// without amsgrad); per-tensor scalars 0 sqrt(1 - beta2^step), 1 -lr / (1 - beta1^step).

template <class T>
__global__ void foreach_adam_kernel(MultiTensorTable<5> tab, AdamHyper h) {
  using C = compute_t<T>;
  const C w1 = static_cast<C>(1.0 - h.beta1), beta2 = static_cast<C>(h.beta2), w2 = static_cast<C>(1.0 - h.beta2);
  const C wd = static_cast<C>(h.weight_decay), decay = static_cast<C>(1.0 - h.lr * h.weight_decay);
  const C eps = static_cast<C>(h.eps);
  const bool l2 = !h.decoupled && h.weight_decay != 0.0;
  const bool lerp_low = fabs(1.0 - h.beta1) < 0.5;  // torch.lerp's two forms
  for (int64_t c = blockIdx.x; c < tab.chunks; c += gridDim.x) {
    int64_t t, start, end;
    tab.chunk(c, t, start, end);
    T* p = tab.ptr<T>(0, t);
    const T* g = tab.ptr<T>(1, t);
    T* m = tab.ptr<T>(2, t);
    T* v = tab.ptr<T>(3, t);
    T* vmax = tab.ptr<T>(4, t);
    const C bc2_sqrt = static_cast<C>(tab.scalar(t, 0)), neg_step = static_cast<C>(tab.scalar(t, 1));
    for (int64_t i = start + threadIdx.x; i < end; i += blockDim.x) {
      C gi = h.maximize ? -load(g[i]) : load(g[i]);
      C pi = load(p[i]);
      if (h.decoupled) pi = pi * decay;
      if (l2) gi = gi + wd * pi;
      const C mo = load(m[i]);
      const C mi = lerp_low ? mo + w1 * (gi - mo) : gi - (gi - mo) * (C(1) - w1);
      const C vi = load(v[i]) * beta2 + w2 * gi * gi;
      m[i] = convert<T>(mi);
      v[i] = convert<T>(vi);
      C used = vi;
      if (vmax) {
        const C old = load(vmax[i]);
        used = old > vi ? old : vi;
        vmax[i] = convert<T>(used);
      }
      const C denom = sqrt(used) / bc2_sqrt + eps;
      p[i] = convert<T>(pi + neg_step * (mi / denom));
    }
  }
}

void foreach_adam(const AdamLists& l, const AdamHyper& h) {
  if (l.params.empty()) return;
  std::vector<double> scalars;
  for (int64_t step_count : l.steps) {
    const double step = static_cast<double>(step_count);
    scalars.push_back(std::sqrt(1.0 - std::pow(h.beta2, step)));
    scalars.push_back(-(h.lr / (1.0 - std::pow(h.beta1, step))));
  }
  minidl::cuda::DeviceGuard guard(l.params[0].device());
  MultiTensorLaunch<5> launch({&l.params, &l.grads, &l.exp_avg, &l.exp_avg_sq, &l.max_exp_avg_sq}, scalars, 2);
  if (launch.empty()) return;
  visit_floating(l.params[0].dtype(), "foreach_adam_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    foreach_adam_kernel<T><<<launch.blocks, kThreads, 0, launch.stream>>>(launch.table, h);
  });
  MINIDL_CUDA_CHECK_LAUNCH("foreach_adam_");
}
}  // namespace

void register_foreach(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    r.foreach_norm.set(DeviceType::CUDA, t, foreach_norm);
    r.foreach_scale.set(DeviceType::CUDA, t, foreach_scale);
    r.foreach_scale_by_tensor.set(DeviceType::CUDA, t, foreach_scale_by_tensor);
    r.foreach_sgd.set(DeviceType::CUDA, t, foreach_sgd);
    r.foreach_adam.set(DeviceType::CUDA, t, foreach_adam);
  }
}

}  // namespace minidl::kernels::cuda
