// CUDA softmax family over the last dim of contiguous [rows, n] tensors: softmax / log_softmax
// (max-subtracted), their backward, and the fused cross-entropy forward (logsumexp and the target's
// logit in one pass over the logits) and backward (softmax minus one-hot, scaled, in one pass).
// One warp per row when rows are short (n <= 1024: the classifier case), one block per row
// otherwise; every row is read from global memory a few times (max, sum, write), which the L1/L2
// caches absorb. f16/bf16 compute in f32; the loss and row statistics are f32 (f64 for f64 logits).
// The cross-entropy forward validates the targets itself (the op does not wait for the device to
// read them): a target outside [0, C) that is not ignore_index is recorded as a deferred error
// (framework/deferred_error.h) and its row's loss is NaN; the backward only compares targets with
// column numbers, so it reads nothing through a bad one.
#include <cmath>

#include "framework/cuda/deferred_error.cuh"
#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/common.cuh"

namespace minidl::kernels::cuda {

namespace {
// Hands each group of G threads one row per iteration: body(row, live). Every thread of a block
// runs the same number of iterations, and threads past the last row (live false) still join the
// group reductions (which may synchronize the block) before returning from body.
template <int G, class Body>
__device__ __forceinline__ void for_each_row(int64_t rows, Body&& body) {
  constexpr int kGroups = kThreads / G;
  for (int64_t base = int64_t{blockIdx.x} * kGroups; base < rows; base += int64_t{gridDim.x} * kGroups) {
    const int64_t row = base + threadIdx.x / G;
    body(row, row < rows);
  }
}

template <class C>
struct MaxAndSumExp {
  C max, sum;
};

// The max of row xr and the sum of exp(x - max) over it, reduced over the group (lane: this
// thread's place in it). Threads with live false must call it too; their values are unused.
template <int G, class T>
__device__ __forceinline__ MaxAndSumExp<compute_t<T>> row_max_and_sum_exp(const T* xr, int64_t n, int64_t lane, bool live) {
  using C = compute_t<T>;
  C m = -INFINITY;
  if (live)
    for (int64_t j = lane; j < n; j += G) {
      const C v = load(xr[j]);
      m = (m != m || m > v) ? m : v;
    }
  m = group_max<G>(m);
  C s = 0;
  if (live)
    for (int64_t j = lane; j < n; j += G) s += exp(load(xr[j]) - m);
  s = group_sum<G>(s);
  return {m, s};
}

template <class T, int G>
__global__ void softmax_kernel(T* out, const T* x, int64_t rows, int64_t n, bool log) {
  using C = compute_t<T>;
  const int64_t lane = threadIdx.x % G;
  for_each_row<G>(rows, [&](int64_t row, bool live) {
    const T* xr = x + (live ? row : 0) * n;
    const MaxAndSumExp<C> r = row_max_and_sum_exp<G>(xr, n, lane, live);
    if (!live) return;
    T* yr = out + row * n;
    if (log) {
      // (x - max) - log(sum), as PyTorch (and the CPU kernel): exact low bits next to a large max.
      const C log_sum = ::log(r.sum);
      for (int64_t j = lane; j < n; j += G) yr[j] = convert<T>((load(xr[j]) - r.max) - log_sum);
    } else {
      const C inv = C(1) / r.sum;
      for (int64_t j = lane; j < n; j += G) yr[j] = convert<T>(exp(load(xr[j]) - r.max) * inv);
    }
  });
}

template <class T, int G>
__global__ void softmax_backward_kernel(T* gi, const T* go, const T* y, int64_t rows, int64_t n, bool log) {
  using C = compute_t<T>;
  const int64_t lane = threadIdx.x % G;
  for_each_row<G>(rows, [&](int64_t row, bool live) {
    const int64_t o = (live ? row : 0) * n;
    C s = 0;  // log: sum g; else: sum g * y
    if (live)
      for (int64_t j = lane; j < n; j += G) s += log ? load(go[o + j]) : load(go[o + j]) * load(y[o + j]);
    s = group_sum<G>(s);
    if (!live) return;
    for (int64_t j = lane; j < n; j += G) {
      const C g = load(go[o + j]), yv = load(y[o + j]);
      gi[o + j] = convert<T>(log ? g - exp(yv) * s : yv * (g - s));
    }
  });
}

template <class T, class L, int G>
__global__ void cross_entropy_kernel(L* loss, L* stats, const T* x, const int64_t* target, int64_t rows, int64_t n,
                                     int64_t ignore_index, minidl::cuda::DeferredErrorRecord* err) {
  using C = compute_t<T>;
  const int64_t lane = threadIdx.x % G;
  for_each_row<G>(rows, [&](int64_t row, bool live) {
    const T* xr = x + (live ? row : 0) * n;
    const MaxAndSumExp<C> r = row_max_and_sum_exp<G>(xr, n, lane, live);
    if (!live || lane != 0) return;
    const C log_sum = ::log(r.sum);
    const int64_t t = target[row];
    stats[2 * row] = static_cast<L>(r.max);
    stats[2 * row + 1] = static_cast<L>(log_sum);
    if (t == ignore_index) {
      loss[row] = L(0);
    } else if (minidl::cuda::in_bounds(t, n)) {
      loss[row] = static_cast<L>(log_sum - (load(xr[t]) - r.max));
    } else {
      minidl::cuda::record_deferred_error(err, minidl::cuda::DeferredOp::CrossEntropy, t, n, ignore_index);
      loss[row] = static_cast<L>(NAN);
    }
  });
}

// One thread per logit: grad = (softmax - onehot) * scale * g[row or 0]; ignored rows get 0.
template <class T, class L>
__global__ void cross_entropy_backward_kernel(T* gx, const T* x, const L* stats, const int64_t* target, const L* g,
                                              bool per_row, L scale, int64_t rows, int64_t n, int64_t ignore_index,
                                              bool use32) {
  const int64_t total = rows * n;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{blockDim.x} * gridDim.x) {
    int64_t row, col;
    if (use32) {
      row = static_cast<uint32_t>(i) / static_cast<uint32_t>(n);
      col = static_cast<uint32_t>(i) - static_cast<uint32_t>(row) * static_cast<uint32_t>(n);
    } else {
      row = i / n;
      col = i - row * n;
    }
    const int64_t t = target[row];
    if (t == ignore_index) {
      gx[i] = convert<T>(L(0));
      continue;
    }
    const L k = scale * g[per_row ? row : 0];
    const L e = exp((static_cast<L>(load(x[i])) - stats[2 * row]) - stats[2 * row + 1]);
    gx[i] = convert<T>(col == t ? e * k - k : e * k);
  }
}

// Launches kernel<G> with G = 32 (rows of at most 1024) or the whole block.
template <class Launch>
void by_row_length(int64_t rows, int64_t n, int dev, Launch&& launch) {
  if (n <= 1024) launch(std::integral_constant<int, 32>{}, grid_for(rows * 32, dev));
  else launch(std::integral_constant<int, kThreads>{}, grid_for(rows * kThreads, dev));
}

int64_t last_dim(const Tensor& t) { return t.dim() == 0 ? 1 : t.shape().back(); }

void softmax(const Tensor& out, const Tensor& x, bool log) {
  const int64_t n = last_dim(x);
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  if (rows == 0) return;
  minidl::cuda::DeviceGuard guard(x.device());
  const int dev = x.device().index;
  visit_floating(x.dtype(), "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    by_row_length(rows, n, dev, [&](auto g, unsigned blocks) {
      softmax_kernel<T, decltype(g)::value><<<blocks, kThreads, 0, stream_of(x)>>>(
          static_cast<T*>(out.raw_data()), static_cast<const T*>(x.raw_data()), rows, n, log);
    });
  });
  MINIDL_CUDA_CHECK_LAUNCH("softmax");
}

void softmax_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& y, bool log) {
  const int64_t n = last_dim(y);
  const int64_t rows = n == 0 ? 0 : y.numel() / n;
  if (rows == 0) return;
  minidl::cuda::DeviceGuard guard(y.device());
  const int dev = y.device().index;
  visit_floating(y.dtype(), "softmax_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    by_row_length(rows, n, dev, [&](auto g, unsigned blocks) {
      softmax_backward_kernel<T, decltype(g)::value><<<blocks, kThreads, 0, stream_of(y)>>>(
          static_cast<T*>(grad_in.raw_data()), static_cast<const T*>(grad_out.raw_data()),
          static_cast<const T*>(y.raw_data()), rows, n, log);
    });
  });
  MINIDL_CUDA_CHECK_LAUNCH("softmax_backward");
}

void cross_entropy(const Tensor& loss, const Tensor& stats, const Tensor& x, const Tensor& target, int64_t ignore_index) {
  const int64_t rows = x.shape()[0], n = x.shape()[1];
  if (rows == 0) return;
  minidl::cuda::DeviceGuard guard(x.device());
  const int dev = x.device().index;
  minidl::cuda::DeferredErrorSlot err(dev);
  visit_floating(x.dtype(), "cross_entropy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using L = std::conditional_t<std::is_same_v<T, double>, double, float>;
    by_row_length(rows, n, dev, [&](auto g, unsigned blocks) {
      cross_entropy_kernel<T, L, decltype(g)::value><<<blocks, kThreads, 0, stream_of(x)>>>(
          static_cast<L*>(loss.raw_data()), static_cast<L*>(stats.raw_data()), static_cast<const T*>(x.raw_data()),
          static_cast<const int64_t*>(target.raw_data()), rows, n, ignore_index, err.get());
    });
  });
  MINIDL_CUDA_CHECK_LAUNCH("cross_entropy");
}

void cross_entropy_backward(const Tensor& grad_x, const Tensor& x, const Tensor& stats, const Tensor& target,
                            const Tensor& g, double scale, int64_t ignore_index) {
  const int64_t rows = x.shape()[0], n = x.shape()[1];
  if (rows * n == 0) return;
  minidl::cuda::DeviceGuard guard(x.device());
  const int dev = x.device().index;
  const bool per_row = g.numel() == rows && g.dim() > 0;
  const bool use32 = rows * n <= INT32_MAX;
  visit_floating(x.dtype(), "cross_entropy_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using L = std::conditional_t<std::is_same_v<T, double>, double, float>;
    cross_entropy_backward_kernel<T, L><<<grid_for(rows * n, dev), kThreads, 0, stream_of(x)>>>(
        static_cast<T*>(grad_x.raw_data()), static_cast<const T*>(x.raw_data()), static_cast<const L*>(stats.raw_data()),
        static_cast<const int64_t*>(target.raw_data()), static_cast<const L*>(g.raw_data()), per_row,
        static_cast<L>(scale), rows, n, ignore_index, use32);
  });
  MINIDL_CUDA_CHECK_LAUNCH("cross_entropy_backward");
}
}  // namespace

void register_softmax(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    r.softmax.set(DeviceType::CUDA, t, softmax);
    r.softmax_backward.set(DeviceType::CUDA, t, softmax_backward);
    r.cross_entropy.set(DeviceType::CUDA, t, cross_entropy);
    r.cross_entropy_backward.set(DeviceType::CUDA, t, cross_entropy_backward);
  }
}

}  // namespace minidl::kernels::cuda
