// Raw kernels: no autograd, no autocast, no type promotion. The differentiable ops in ops/*.cpp
// validate arguments, allocate outputs and call these through their dispatch tables. CPU kernels
// live in ops/cpu, CUDA kernels in ops/cuda; each backend fills the tables in its register
// function, called once on first use (no static-initialisation order or linker-dropping issues).
#pragma once
#include <cmath>
#include <type_traits>
#include <vector>

#include "framework/deferred_error.h"
#include "framework/dispatch.h"
#include "ops/tensor.h"

// Helpers both backends compute with the same code (host and device): pool windows, integer pow.
#if defined(__CUDACC__)
#define MINIDL_HOST_DEVICE __host__ __device__
#else
#define MINIDL_HOST_DEVICE
#endif

namespace minidl::kernels {

// out <- value (any dtype, any strides).
using FillFn = void (*)(const Tensor& out, double value);
// dst <- src, converting dtype; src broadcasts to dst's shape; both may be strided. Keyed by dst.
using CopyFn = void (*)(const Tensor& dst, const Tensor& src);

enum class BinaryOp : uint8_t {
  Add, Sub, Mul, Div, Pow, Max, Min,   // out = a op (alpha * b) for Add/Sub; same dtype as a
  Eq, Ne, Lt, Le, Gt, Ge,              // out is bool
  // Fused activation backward: a is the incoming gradient, b the saved forward value.
  ReluBackward,       // a * (b > 0), b = output
  LeakyReluBackward,  // a * (b > 0 ? 1 : alpha), b = input
  SigmoidBackward,    // a * b * (1 - b), b = output
  TanhBackward,       // a * (1 - b^2), b = output
  GeluBackward,       // a * gelu'(b), b = input (erf form)
  GeluTanhBackward,   // a * gelu'(b), b = input (tanh approximation)
  SoftplusBackward,   // a * sigmoid(alpha * b) (or a where alpha*b > scalar threshold), b = input
  // Modulo (integer and floating): Remainder has b's sign (Python's %), Fmod a's (C's fmod); the
  // helpers below define them. DivFloor/DivTrunc: PyTorch's div(a, b, rounding_mode) (integer forms below).
  Remainder, Fmod, DivFloor, DivTrunc,
  Atan2,  // atan2(a, b), floating only
};
// Integer x^y by squaring, wrapping on overflow (unsigned arithmetic: no UB); a negative exponent
// gives 1/x^|y| truncated: 0 unless |x| == 1 (PyTorch's integer pow). Both backends' Pow kernel.
template <class C>
MINIDL_HOST_DEVICE inline C integer_pow(C x, C y) {
  if constexpr (std::is_signed_v<C>)
    if (y < 0) return x == 1 ? C(1) : (x == -1 ? C((y & 1) ? -1 : 1) : C(0));
  using U = std::make_unsigned_t<C>;
  U r = 1, b = static_cast<U>(x);
  for (U e = static_cast<U>(y); e; e >>= 1) {
    if (e & 1) r = static_cast<U>(r * b);
    b = static_cast<U>(b * b);
  }
  return static_cast<C>(r);
}
// Integer fmod (C's %, the dividend's sign) and remainder (the divisor's sign). The ops refuse a zero
// divisor (PyTorch's ZeroDivisionError); here it gives 0 instead of a trap, as does the most negative
// value modulo -1 (the CPU's division traps on it; PyTorch's CPU kernel dies of SIGFPE there).
template <class C>
MINIDL_HOST_DEVICE inline C integer_fmod(C x, C y) {
  if (y == C(0)) return C(0);
  if constexpr (std::is_signed_v<C>)
    if (y == C(-1)) return C(0);
  return static_cast<C>(x % y);
}
template <class C>
MINIDL_HOST_DEVICE inline C integer_remainder(C x, C y) {
  C r = integer_fmod(x, y);
  if constexpr (std::is_signed_v<C>)
    if (r != C(0) && ((r < C(0)) != (y < C(0)))) r = static_cast<C>(r + y);  // opposite signs: no overflow
  return r;
}
// Integer division rounded toward negative infinity (div(a, b, rounding_mode='floor') of integers);
// a zero divisor gives 0 and the most negative value over -1 wraps (the ops refuse a zero divisor).
template <class C>
MINIDL_HOST_DEVICE inline C integer_floor_divide(C x, C y) {
  if (y == C(0)) return C(0);
  if constexpr (std::is_signed_v<C>) {
    if (y == C(-1)) return static_cast<C>(C(0) - static_cast<std::make_unsigned_t<C>>(x));  // wraps, no UB
    const C q = static_cast<C>(x / y);
    return (x % y != C(0) && ((x < C(0)) != (y < C(0)))) ? static_cast<C>(q - 1) : q;
  }
  return static_cast<C>(x / y);
}
template <class C>
MINIDL_HOST_DEVICE inline C integer_trunc_divide(C x, C y) {
  if (y == C(0)) return C(0);
  if constexpr (std::is_signed_v<C>)
    if (y == C(-1)) return static_cast<C>(C(0) - static_cast<std::make_unsigned_t<C>>(x));
  return static_cast<C>(x / y);
}
// Floating remainder as PyTorch's: fmod moved to the divisor's side (an exact zero keeps the
// dividend's sign, so remainder(-6, 3) is -0; NaN for a zero divisor or an infinite dividend).
template <class C>
MINIDL_HOST_DEVICE inline C floating_remainder(C x, C y) {
  C m = std::fmod(x, y);
  if (m != C(0) && ((y < C(0)) != (m < C(0)))) m += y;
  return m;
}
// PyTorch's div(x, y, rounding_mode='floor') for floating types: the quotient through fmod, so that
// it agrees with floating_remainder (its gradient in y is -this); rounded to the nearest integer
// against the division's error; a zero divisor gives x / y.
template <class C>
MINIDL_HOST_DEVICE inline C floating_floor_divide(C x, C y) {
  if (y == C(0)) return x / y;
  const C mod = std::fmod(x, y);
  C div = (x - mod) / y;
  if (mod != C(0) && ((y < C(0)) != (mod < C(0)))) div -= C(1);
  if (div == C(0)) return std::copysign(C(0), x / y);
  C floordiv = std::floor(div);
  if (div - floordiv > C(0.5)) floordiv += C(1);
  return floordiv;
}

// out (contiguous, broadcast shape) <- a op b. b undefined means the scalar `scalar`. a and b share
// a dtype; the table is keyed by a's dtype. alpha: Add/Sub multiplier, LeakyRelu slope, Softplus beta.
using BinaryFn = void (*)(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, double scalar, double alpha);

enum class UnaryOp : uint8_t {
  Neg, Exp, Log, Sqrt, Rsqrt, Abs, Sign, Tanh, Sigmoid, Relu, LeakyRelu, Gelu, GeluTanh, Softplus, Square, Reciprocal,
  Clamp,  // p0 = min, p1 = max (use +-inf for none)
  // Element-wise math (ops/math.cpp): the C library's functions; Round is half to even (rint).
  Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh,
  Log1p, Expm1, Log2, Log10, Exp2, Erf, Erfc, Erfinv, Floor, Ceil, Round, Trunc,
  // Activations with PyTorch's formulas (ops/activation_more.cpp): x relu6(x + 3) / 6, relu6(x + 3) / 6,
  // x tanh(log1p(exp x)), min(x, 0) - log1p(exp(-|x|)).
  Hardswish, Hardsigmoid, Mish, LogSigmoid,
};
// out (contiguous, same shape and dtype as x) <- op(x). p0/p1: LeakyRelu slope; Softplus beta, threshold.
using UnaryFn = void (*)(UnaryOp op, const Tensor& out, const Tensor& x, double p0, double p1);

// where: out <- cond ? a : b (broadcast; a, b, out share a dtype; cond is bool).
using WhereFn = void (*)(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);

enum class ReduceOp : uint8_t { Sum, Max, Min, ArgMax, ArgMin };
// out has x's shape with `dims` set to 1 (keepdim form, contiguous). Sum accumulates in f32 (f64 for
// f64). ArgMax/ArgMin write i64 indices along a single dim; Max/Min with a defined `indices` also
// write them (first occurrence, NaN propagates).
using ReduceFn = void (*)(ReduceOp op, const Tensor& out, const Tensor& indices, const Tensor& x,
                          const std::vector<int64_t>& dims);

// c <- alpha * op(a) @ op(b) + beta * c for 2-D or batched 3-D a, b, c (c contiguous; a, b may be
// transposed views). Keyed by a's dtype; a, b, c share it. Low precision computes in f32.
using GemmFn = void (*)(const Tensor& c, const Tensor& a, const Tensor& b, double alpha, double beta);

// Softmax family along the last dim of a contiguous [rows, n] view.
using SoftmaxFn = void (*)(const Tensor& out, const Tensor& x, bool log);
// grad_in <- softmax backward given grad_out and the saved output y (log: y is log-softmax).
using SoftmaxBackwardFn = void (*)(const Tensor& grad_in, const Tensor& grad_out, const Tensor& y, bool log);

// A tensor seen as [outer, size(dim), inner]: how the index kernels of both backends address it.
struct Split3 {
  int64_t outer = 1, mid = 1, inner = 1;
};
inline Split3 split_at(const Shape& shape, int64_t dim) {
  Split3 s;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < dim) s.outer *= shape[d];
    else if (d == dim) s.mid = shape[d];
    else s.inner *= shape[d];
  }
  return s;
}
// Gathers/scatters along `dim` with an i64 index of the same rank (gather) or 1-D (index_select).
using IndexSelectFn = void (*)(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index);
using IndexAddFn = void (*)(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src);  // out[.., idx[i], ..] += src[.., i, ..]
using GatherFn = void (*)(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index);
using ScatterAddFn = void (*)(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src);
// On CUDA the index kernels (and the fused cross-entropy) check every index they read: a bad one is
// recorded as a deferred error (framework/deferred_error.h; select and gather read nothing for it
// and write 0, the scatters skip it) and reported at the host's next wait. The CPU kernels trust
// indices the ops have checked on the host.

// A device-side check of an i64 index, for the ops that must name the problem in their own words
// before another kernel consumes the index (class targets, embedding, one_hot): records a deferred
// error for a value outside [0, bound) that is not skipped (one of them: the thread that claims the
// slot first), and never waits. CUDA only: on
// the CPU the ops check at once.
struct IndexRangeCheck {
  ::minidl::cuda::DeferredOp op = ::minidl::cuda::DeferredOp::None;  // names the op and its message
  int64_t bound = 0;          // valid values: 0 .. bound - 1
  int64_t detail = 0;         // the record's detail (a dimension or ignore_index)
  bool skip_detail = false;   // values equal to detail pass (ignore_index)
};
using IndexRangeCheckFn = void (*)(const Tensor& index, const IndexRangeCheck& check);

// Fused cross-entropy over contiguous logits x [N, C] and i64 targets [N] (validated by the op on
// the CPU; on CUDA by this kernel, as cross_entropy, a bad target's row getting a NaN loss):
// stats[n] = {m, l} with m = max(x[n, :]) and l = log(sum(exp(x[n, :] - m))), and
// loss[n] = l - (x[n, t[n]] - m) (PyTorch's -log_softmax(x)[t], rounded as its (x - m) - l); rows whose
// target is ignore_index get loss 0. loss [N] and stats [N, 2] are contiguous in the compute dtype
// (f64 for f64, else f32).
using CrossEntropyFn = void (*)(const Tensor& loss, const Tensor& stats, const Tensor& x, const Tensor& target,
                                int64_t ignore_index);
// grad_x[n, c] = (exp((x[n, c] - m) - l) - [c == t[n]]) * scale * g[n] with {m, l} = stats[n] (g: [N]
// or 1 element, compute dtype); ignored rows get 0. grad_x has x's dtype.
using CrossEntropyBackwardFn = void (*)(const Tensor& grad_x, const Tensor& x, const Tensor& stats, const Tensor& target,
                                        const Tensor& g, double scale, int64_t ignore_index);

// Sorting along `dim` of a contiguous x: values (x's dtype) and indices (i64), both contiguous with
// x's shape, get each line of x in order, stable (equal values keep their order), NaN above every
// number (last ascending, first descending), as PyTorch's sort(stable=True).
using SortFn = void (*)(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t dim, bool descending);
// The strict order both backends sort by, on values as their kernels widen them (f16/bf16 to f32):
// a before b when a < b (descending: a > b), NaN after every number (descending: before).
template <class K>
MINIDL_HOST_DEVICE inline bool sort_comes_before(K a, K b, bool descending) {
  const bool a_nan = a != a, b_nan = b != b;  // false for integers and bool
  if (a_nan || b_nan) return descending ? (a_nan && !b_nan) : (!a_nan && b_nan);
  return descending ? b < a : a < b;
}

// Cumulative sum or product along `dim` of a contiguous x into out (contiguous, same shape and
// dtype); reverse: from the end of each line (out[i] = x[i] + ... + x[n-1], cumsum's backward).
// Accumulates in scan_accumulator_t (PyTorch's CPU acc_type; integers wrap as its do, without
// signed overflow); each output rounded once.
enum class ScanOp : uint8_t { Sum, Prod };
using ScanFn = void (*)(ScanOp op, const Tensor& out, const Tensor& x, int64_t dim, bool reverse);
// f32 for f16/bf16 (low_precision: the backend's own test), f64 for f32/f64, and for integers and
// bool a u64 whose modular sums and products are the two's-complement i64 results.
template <class T, bool low_precision>
using scan_accumulator_t =
    std::conditional_t<low_precision, float, std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>>;

// Random fills from the Philox4x32-10 stream (framework/generator.h) of `seed`, starting at block
// `offset`; the op reserves random_blocks(numel) blocks. Element k uses only block offset + k/4
// (32-bit draws) or offset + k/2 (64-bit draws), so results are independent of threading.
enum class RandomDist : uint8_t {
  Uniform,    // U[a, b)
  Normal,     // N(a, b^2), Box-Muller
  Integer,    // uniform integer in [a, b)
  KeepMask,   // dropout mask: b (= 1/(1-p)) with probability 1-a (a = p), else 0
};
using RandomFn = void (*)(RandomDist dist, const Tensor& out, uint64_t seed, uint64_t offset, double a, double b);
inline uint64_t random_blocks(int64_t numel) { return static_cast<uint64_t>((numel + 1) / 2); }

// ---- foreach families (ops/foreach.cpp; CPU kernels in ops/cpu/foreach_*.cpp, CUDA kernels in
// ops/cuda/amp.cu and ops/cuda/foreach.cu). One call covers a list of tensors; the op validates
// that every tensor is contiguous, floating, of the table's (device, dtype), and that the lists
// of one call have equal lengths and matching shapes. Empty tensors are allowed. Low precision
// computes in f32 and rounds once per element.

// What unscale-and-check found in one tensor: whether it held inf/NaN, and (when counted) how
// many infs and NaNs. The incoming (scaled) values are classified.
struct NonFiniteCount {
  bool found = false;
  int64_t inf = 0;
  int64_t nan = 0;
};
// GradScaler's pass: t *= inv_scale in place for every tensor (in the compute type, inv_scale
// converted to it); out[i] <- what tensor i held. count: also count infs and NaNs (else 0).
using ForeachUnscaleFn = void (*)(const std::vector<Tensor>& tensors, float inv_scale, bool count,
                                  std::vector<NonFiniteCount>& out);
// out[i] <- sum over tensor i of |x|^p, or max |x| when p is infinite (NaN propagates; 0 for an
// empty tensor), accumulated in f64. out: a contiguous f64 [tensors] tensor on the tensors' device,
// written there (on CUDA: one partial per chunk, combined per tensor in chunk order by a second
// kernel; no host synchronisation). Not rooted: callers combine tensors, then take the root.
using ForeachNormFn = void (*)(const std::vector<Tensor>& tensors, double p, const Tensor& out);
// t *= factor in place for every tensor (factor converted to the compute type).
using ForeachScaleFn = void (*)(const std::vector<Tensor>& tensors, double factor);
// t *= scalar in place for every tensor; scalar: a contiguous 0-dim tensor of the tensors' dtype and
// device, read by the kernel where it lies (device memory on CUDA: no host synchronisation), widened
// to the compute type.
using ForeachScaleByTensorFn = void (*)(const std::vector<Tensor>& tensors, const Tensor& scalar);

// SGD step over lists of parameters, gradients (same dtype) and momentum buffers (empty list when
// momentum is 0); the update of optim/sgd.h. first_step: the buffers are new (buf = d).
struct SgdHyper {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, maximize = false;
};
using ForeachSgdFn = void (*)(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                              const std::vector<Tensor>& momentum_buffers, bool first_step, const SgdHyper& h);

// Adam/AdamW step (optim/adam.h's update) over lists of parameters, gradients, first and second
// moments and (amsgrad only; else an empty list) the running maximum of the second moment.
// steps[i]: parameter i's step count after this step (its bias corrections, computed in double).
struct AdamHyper {
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  bool amsgrad = false, maximize = false;
  bool decoupled = false;  // AdamW: weight decay multiplies the parameter instead of joining the gradient
};
struct AdamLists {
  std::vector<Tensor> params, grads, exp_avg, exp_avg_sq, max_exp_avg_sq;
  std::vector<int64_t> steps;
};
using ForeachAdamFn = void (*)(const AdamLists& lists, const AdamHyper& h);

// ---- convolution (ops/conv.cpp; CPU kernels in ops/cpu/conv.cpp)
// Geometry of a 2-D convolution, validated by the op: input x [N, C, H, W], weight
// [O, C/groups, kH, kW], output y [N, O, OH, OW]. Output (oh, ow) reads input row
// oh*sh - ph + i*dh and column ow*sw - pw + j*dw for tap (i, j); taps outside the input read 0.
// ph/pw are the top/left padding; the bottom/right padding is implied by OH/OW (so asymmetric
// "same" padding needs no copy).
struct Conv2dGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0;
  int64_t O = 0, kH = 1, kW = 1;
  int64_t OH = 0, OW = 0;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int64_t groups = 1;
};
// All four take tensors of one floating dtype (the table's key), images NCHW-contiguous, or all
// channels-last where conv2d_channels_last says so; f16/bf16 compute in f32.
// y <- conv(x, w) (+ b[o] when b is defined).
using Conv2dFn = void (*)(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dGeometry& g);
// gx <- the adjoint of conv in x applied to gy, i.e. a transposed convolution (+ b[c] when defined).
using Conv2dInputGradFn = void (*)(const Tensor& gx, const Tensor& gy, const Tensor& w, const Tensor& b,
                                   const Conv2dGeometry& g);
// gw <- sum over the batch of gy[n] times im2col(x[n])^T; gb[o] <- sum of gy[:, o] when gb is defined.
using Conv2dWeightGradFn = void (*)(const Tensor& gw, const Tensor& gb, const Tensor& x, const Tensor& gy,
                                    const Conv2dGeometry& g);
// Both at once, gx as conv2d_input_grad (no bias) and gw, gb as conv2d_weight_grad: the backward of
// a conv whose gradients need no graph, so a backend may share work between the two (the CPU's
// oneDNN path puts gy into its blocked layout once, as PyTorch's mkldnn_convolution_backward does).
using Conv2dBackwardFn = void (*)(const Tensor& gx, const Tensor& gw, const Tensor& gb, const Tensor& x,
                                  const Tensor& gy, const Tensor& w, const Conv2dGeometry& g);

// Whether this backend's four conv kernels run geometry g fastest with every image operand (x, y,
// gx, gy) channels-last (MemoryFormat::ChannelsLast); they then take them so, and conv2d gives
// channels-last results. Otherwise, and on a backend without this entry, images are NCHW-contiguous.
using Conv2dChannelsLastFn = bool (*)(const Conv2dGeometry& g);

// ---- pooling (ops/pool.cpp; CPU kernels in ops/cpu/pool.cpp)
// x [N, C, H, W] -> y [N, C, OH, OW], contiguous. Max: window (oh, ow) has kH x kW taps dh/dw apart
// starting at (oh*sh - ph, ow*sw - pw), clipped to the input. Avg: PyTorch's windows and divisors
// (count_include_pad: divide by the window clipped to the padded input; a non-zero divisor_override
// replaces the divisor of every window); adaptive: rows
// floor(oh*H/OH) .. ceil((oh+1)*H/OH), likewise columns (kernel, stride and padding unused).
struct Pool2dGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0, OH = 0, OW = 0;
  int64_t kH = 1, kW = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // average pool: 0 none, else the divisor of every window
  bool adaptive = false;
};
// The window of output (oh, ow): rows [hs, he), columns [ws, we).
struct PoolWindow {
  int64_t hs, he, ws, we;
  double divisor;  // average pool only
};
// The average-pool window of output (oh, ow) (empty when it lies in the padding only) and its
// divisor, as PyTorch.
MINIDL_HOST_DEVICE inline PoolWindow avg_pool_window(const Pool2dGeometry& g, int64_t oh, int64_t ow) {
  if (g.adaptive) {
    PoolWindow w{(oh * g.H) / g.OH, ((oh + 1) * g.H + g.OH - 1) / g.OH, (ow * g.W) / g.OW,
                 ((ow + 1) * g.W + g.OW - 1) / g.OW, 0};
    w.divisor = static_cast<double>((w.he - w.hs) * (w.we - w.ws));
    return w;
  }
  int64_t hs = oh * g.sh - g.ph, ws = ow * g.sw - g.pw;
  int64_t he = hs + g.kH < g.H + g.ph ? hs + g.kH : g.H + g.ph;
  int64_t we = ws + g.kW < g.W + g.pw ? ws + g.kW : g.W + g.pw;
  const int64_t pool_size = (he - hs) * (we - ws);
  hs = hs > 0 ? hs : 0;
  ws = ws > 0 ? ws : 0;
  he = he < g.H ? he : g.H;
  we = we < g.W ? we : g.W;
  if (g.divisor_override != 0) return {hs, he, ws, we, static_cast<double>(g.divisor_override)};
  return {hs, he, ws, we, static_cast<double>(g.count_include_pad ? pool_size : (he - hs) * (we - ws))};
}

// y <- window max; indices (i64, same shape) <- flat index ih*W + iw of the first max (NaN wins).
using MaxPool2dFn = void (*)(const Tensor& y, const Tensor& indices, const Tensor& x, const Pool2dGeometry& g);
// gx <- 0, then gx[n, c, indices[n, c, o]] += gy[n, c, o].
using MaxPool2dBackwardFn = void (*)(const Tensor& gx, const Tensor& gy, const Tensor& indices, const Pool2dGeometry& g);
using AvgPool2dFn = void (*)(const Tensor& y, const Tensor& x, const Pool2dGeometry& g);
// gx <- the adjoint of the average pool applied to gy.
using AvgPool2dBackwardFn = void (*)(const Tensor& gx, const Tensor& gy, const Pool2dGeometry& g);

// ---- batch norm (ops/batch_norm.cpp; CPU kernels in ops/cpu/batch_norm.cpp)
// x, y, gy, gx: contiguous [N, C, ...] viewed as [N, C, S]; keyed by x's dtype. Per-channel vectors
// are contiguous [C] in the compute dtype (f64 for f64 x, else f32). M = N*S.
// mean[c], var[c] <- batch mean and biased variance over (N, S).
using BatchNormStatsFn = void (*)(const Tensor& mean, const Tensor& var, const Tensor& x);
// y <- x * scale[c] + shift[c] (+ residual, when defined: x's shape, dtype and layout), in x's dtype;
// relu: then y <= 0 ? 0 : y (NaN kept). Computed in the compute dtype, rounded once.
using BatchNormApplyFn = void (*)(const Tensor& y, const Tensor& x, const Tensor& scale, const Tensor& shift, bool relu,
                                  const Tensor& residual);
// sum_dy[c] <- sum gy; sum_dy_xhat[c] <- sum gy * xhat with xhat = (x - mean[c]) * invstd[c]; then, when gx is
// defined: gx <- scale[c] * (gy - sum_dy[c]/M - xhat * sum_dy_xhat[c]/M) (training) or gy * scale[c] (eval).
// relu_out defined (batch_norm_relu's output, x's shape and dtype): gy is read as relu_out <= 0 ? 0 : gy
// (ReluBackward's rule) throughout.
using BatchNormBackwardFn = void (*)(const Tensor& gx, const Tensor& sum_dy, const Tensor& sum_dy_xhat, const Tensor& gy,
                                     const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& scale,
                                     bool training, const Tensor& relu_out);

struct Registry {
  KernelTable<FillFn> fill{"fill_"};
  KernelTable<CopyFn> copy{"copy_"};
  KernelTable<BinaryFn> binary{"binary"};
  KernelTable<UnaryFn> unary{"unary"};
  KernelTable<WhereFn> where{"where"};
  KernelTable<ReduceFn> reduce{"reduce"};
  KernelTable<GemmFn> gemm{"gemm"};
  KernelTable<SoftmaxFn> softmax{"softmax"};
  KernelTable<SoftmaxBackwardFn> softmax_backward{"softmax_backward"};
  KernelTable<IndexSelectFn> index_select{"index_select"};
  KernelTable<IndexAddFn> index_add{"index_add"};
  KernelTable<GatherFn> gather{"gather"};
  KernelTable<ScatterAddFn> scatter_add{"scatter_add"};
  KernelTable<SortFn> sort{"sort"};
  KernelTable<ScanFn> scan{"scan"};
  KernelTable<IndexRangeCheckFn> check_index_range{"check_index_range"};
  KernelTable<CrossEntropyFn> cross_entropy{"cross_entropy"};
  KernelTable<CrossEntropyBackwardFn> cross_entropy_backward{"cross_entropy_backward"};
  KernelTable<RandomFn> random{"random"};
  KernelTable<Conv2dFn> conv2d{"conv2d"};
  KernelTable<Conv2dInputGradFn> conv2d_input_grad{"conv2d_input_grad"};
  KernelTable<Conv2dWeightGradFn> conv2d_weight_grad{"conv2d_weight_grad"};
  KernelTable<Conv2dBackwardFn> conv2d_backward{"conv2d_backward"};
  KernelTable<Conv2dChannelsLastFn> conv2d_channels_last{"conv2d_channels_last"};
  KernelTable<MaxPool2dFn> max_pool2d{"max_pool2d"};
  KernelTable<MaxPool2dBackwardFn> max_pool2d_backward{"max_pool2d_backward"};
  KernelTable<AvgPool2dFn> avg_pool2d{"avg_pool2d"};
  KernelTable<AvgPool2dBackwardFn> avg_pool2d_backward{"avg_pool2d_backward"};
  KernelTable<BatchNormStatsFn> batch_norm_stats{"batch_norm_stats"};
  KernelTable<BatchNormApplyFn> batch_norm_apply{"batch_norm_apply"};
  KernelTable<BatchNormBackwardFn> batch_norm_backward{"batch_norm_backward"};
  KernelTable<ForeachUnscaleFn> foreach_unscale{"foreach_non_finite_check_and_unscale_"};
  KernelTable<ForeachNormFn> foreach_norm{"foreach_norm"};
  KernelTable<ForeachScaleFn> foreach_scale{"foreach_mul_"};
  KernelTable<ForeachScaleByTensorFn> foreach_scale_by_tensor{"foreach_mul_"};
  KernelTable<ForeachSgdFn> foreach_sgd{"foreach_sgd_"};
  KernelTable<ForeachAdamFn> foreach_adam{"foreach_adam_"};
};

const Registry& registry();

namespace cpu {
void register_kernels(Registry& r);
}
#ifdef MINIDL_WITH_CUDA
namespace cuda {
void register_kernels(Registry& r);
// Fills the CUDA tables only (no device queries), on any machine with the backend compiled: lets
// the coverage test list them where no GPU is present. register_kernels calls it when a GPU is
// available (ops/cuda/register.cu).
void register_tables(Registry& r);
}
#endif

// ---- enumeration (tests/test_kernel_coverage.cpp prints and checks every table)
// Calls fn(family, table) for every table of a Registry, with the member's name as the family (two
// tables may share an op() name). Each member is listed here once; the coverage test checks that
// the list spans the whole struct, so a new table cannot be left out.
template <class R, class Fn>
void for_each_table(R& r, Fn&& fn) {
#define MINIDL_KERNEL_TABLE(member) fn(#member, r.member);
  MINIDL_KERNEL_TABLE(fill)
  MINIDL_KERNEL_TABLE(copy)
  MINIDL_KERNEL_TABLE(binary)
  MINIDL_KERNEL_TABLE(unary)
  MINIDL_KERNEL_TABLE(where)
  MINIDL_KERNEL_TABLE(reduce)
  MINIDL_KERNEL_TABLE(gemm)
  MINIDL_KERNEL_TABLE(softmax)
  MINIDL_KERNEL_TABLE(softmax_backward)
  MINIDL_KERNEL_TABLE(index_select)
  MINIDL_KERNEL_TABLE(index_add)
  MINIDL_KERNEL_TABLE(gather)
  MINIDL_KERNEL_TABLE(scatter_add)
  MINIDL_KERNEL_TABLE(sort)
  MINIDL_KERNEL_TABLE(scan)
  MINIDL_KERNEL_TABLE(check_index_range)
  MINIDL_KERNEL_TABLE(cross_entropy)
  MINIDL_KERNEL_TABLE(cross_entropy_backward)
  MINIDL_KERNEL_TABLE(random)
  MINIDL_KERNEL_TABLE(conv2d)
  MINIDL_KERNEL_TABLE(conv2d_input_grad)
  MINIDL_KERNEL_TABLE(conv2d_weight_grad)
  MINIDL_KERNEL_TABLE(conv2d_backward)
  MINIDL_KERNEL_TABLE(conv2d_channels_last)
  MINIDL_KERNEL_TABLE(max_pool2d)
  MINIDL_KERNEL_TABLE(max_pool2d_backward)
  MINIDL_KERNEL_TABLE(avg_pool2d)
  MINIDL_KERNEL_TABLE(avg_pool2d_backward)
  MINIDL_KERNEL_TABLE(batch_norm_stats)
  MINIDL_KERNEL_TABLE(batch_norm_apply)
  MINIDL_KERNEL_TABLE(batch_norm_backward)
  MINIDL_KERNEL_TABLE(foreach_unscale)
  MINIDL_KERNEL_TABLE(foreach_norm)
  MINIDL_KERNEL_TABLE(foreach_scale)
  MINIDL_KERNEL_TABLE(foreach_scale_by_tensor)
  MINIDL_KERNEL_TABLE(foreach_sgd)
  MINIDL_KERNEL_TABLE(foreach_adam)
#undef MINIDL_KERNEL_TABLE
}

}  // namespace minidl::kernels
