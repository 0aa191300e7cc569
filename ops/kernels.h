// Raw kernels: no autograd, no autocast, no type promotion. The differentiable ops in ops/*.cpp
// validate arguments, allocate outputs and call these through their dispatch tables. CPU kernels
// live in ops/cpu, CUDA kernels in ops/cuda; each backend fills the tables in its register
// function, called once on first use (no static-initialisation order or linker-dropping issues).
#pragma once
#include <vector>

#include "framework/dispatch.h"
#include "framework/tensor.h"

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
};
// out (contiguous, broadcast shape) <- a op b. b undefined means the scalar `scalar`. a and b share
// a dtype; the table is keyed by a's dtype. alpha: Add/Sub multiplier, LeakyRelu slope, Softplus beta.
using BinaryFn = void (*)(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, double scalar, double alpha);

enum class UnaryOp : uint8_t {
  Neg, Exp, Log, Sqrt, Rsqrt, Abs, Sign, Tanh, Sigmoid, Relu, LeakyRelu, Gelu, GeluTanh, Softplus, Square, Reciprocal,
  Clamp,  // p0 = min, p1 = max (use +-inf for none)
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

// Gathers/scatters along `dim` with an i64 index of the same rank (gather) or 1-D (index_select).
using IndexSelectFn = void (*)(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index);
using IndexAddFn = void (*)(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src);  // out[.., idx[i], ..] += src[.., i, ..]
using GatherFn = void (*)(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index);
using ScatterAddFn = void (*)(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src);

// Fused cross-entropy over contiguous logits x [N, C] and i64 targets [N] (validated by the op):
// loss[n] = lse[n] - x[n, t[n]] with lse[n] = logsumexp(x[n, :]); rows whose target is
// ignore_index get loss 0. loss and lse are contiguous [N] in the compute dtype (f64 for f64, else f32).
using CrossEntropyFn = void (*)(const Tensor& loss, const Tensor& lse, const Tensor& x, const Tensor& target,
                                int64_t ignore_index);
// grad_x[n, c] = (exp(x[n, c] - lse[n]) - [c == t[n]]) * scale * g[n] (g: [N] or 1 element, compute
// dtype); ignored rows get 0. grad_x has x's dtype.
using CrossEntropyBackwardFn = void (*)(const Tensor& grad_x, const Tensor& x, const Tensor& lse, const Tensor& target,
                                        const Tensor& g, double scale, int64_t ignore_index);

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
  KernelTable<CrossEntropyFn> cross_entropy{"cross_entropy"};
  KernelTable<CrossEntropyBackwardFn> cross_entropy_backward{"cross_entropy_backward"};
  KernelTable<RandomFn> random{"random"};
};

const Registry& registry();

namespace cpu {
void register_kernels(Registry& r);
}
#ifdef MINIDL_WITH_CUDA
namespace cuda {
void register_kernels(Registry& r);
}
#endif

}  // namespace minidl::kernels
