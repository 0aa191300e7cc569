// The differentiable op library (the functional API). Each op family lives in one file under ops/
// with its forward, backward and autocast policy together; device kernels are in ops/cpu and
// ops/cuda. All ops follow PyTorch's broadcasting and type promotion and raise minidl::Error naming
// the op on bad shapes, dtypes or devices.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "framework/generator.h"
#include "ops/reduction.h"
#include "ops/tensor.h"

namespace minidl {

// ---- element-wise binary (ops/binary.cpp); broadcasting, promotion
Tensor add(const Tensor& a, const Tensor& b, double alpha = 1.0);  // a + alpha * b
Tensor sub(const Tensor& a, const Tensor& b, double alpha = 1.0);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);
// div with rounding_mode "floor" or "trunc" (torch.div's): integers stay integers (a zero divisor is
// PyTorch's ZeroDivisionError), floats round the quotient; zero gradient. floor_divide is "floor".
Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode);
Tensor div(const Tensor& a, double b, const std::string& rounding_mode);
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor floor_divide(const Tensor& a, double b);
// atan2(a, b): the angle of (b, a) in (-pi, pi], integers give f32; autocast promotes on CUDA.
Tensor atan2(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, double exponent);
Tensor rsub(const Tensor& a, double b);  // b - a
Tensor neg(const Tensor& a);
// lerp: start + weight * (end - start) in PyTorch's form (end - (end - start) * (1 - weight) for
// |weight| >= 0.5); start, end and a tensor weight share a floating dtype and broadcast. addcmul /
// addcdiv: x + value * t1 * t2 and x + value * t1 / t2, as torch's (integer addcdiv refused).
Tensor lerp(const Tensor& start, const Tensor& end, double weight);
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight);
Tensor addcmul(const Tensor& x, const Tensor& t1, const Tensor& t2, double value = 1.0);
Tensor addcdiv(const Tensor& x, const Tensor& t1, const Tensor& t2, double value = 1.0);
// a - b * floor(a / b), with b's sign (Python's %, torch.remainder), and a - b * trunc(a / b), with
// a's sign (C's fmod, torch.fmod). Integer and floating dtypes; an integer divisor of 0 throws
// (PyTorch's ZeroDivisionError), a floating one gives NaN. An f16/bf16 tensor's scalar divisor is
// rounded to its dtype first, as PyTorch's kernels take it. Gradients: 1 in a, -floor(a / b) or
// -trunc(a / b) in b.
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, double b);
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, double b);

// ---- comparisons and selection (ops/compare.cpp); results are bool, not differentiable
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, double b);
Tensor ne(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor le(const Tensor& a, double b);
Tensor gt(const Tensor& a, double b);
Tensor ge(const Tensor& a, double b);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);  // differentiable in a and b
// isnan/isinf/isfinite: bool, element-wise; integer and bool inputs are finite, as PyTorch's.
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);
// Bool results of the operands' truth values (nonzero, NaN included, is true), with broadcasting.
Tensor logical_not(const Tensor& x);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
// x with value where the bool mask (broadcast to x's shape) is true; keeps x's dtype.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);
// tril/triu: x (at least 2-D; leading dims are a batch) with the elements above / below diagonal
// `diagonal` of its last two dims set to 0 (column - row > diagonal / < diagonal), as torch.tril/triu
// (NaN there too); differentiable, any dtype.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max);

// ---- element-wise unary (ops/unary.cpp, ops/activation.cpp)
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);  // zero gradient (its result requires grad, as PyTorch's)
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor gelu(const Tensor& x, bool tanh_approximation = false);
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
// Composites of the ops above (no kernel of their own; autograd differentiates the composite):
Tensor silu(const Tensor& x);                     // x * sigmoid(x), torch.nn.functional.silu
Tensor elu(const Tensor& x, double alpha = 1.0);  // x > 0 ? x : alpha (exp(x) - 1)
// min(max(x, min_val), max_val), gradient 1 strictly inside (min_val, max_val) (torch's hardtanh).
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);
Tensor relu6(const Tensor& x);  // hardtanh(x, 0, 6)
// x > 0 ? x : weight * x, weight one slope or one per channel (dim 1); autocast lower precision.
Tensor prelu(const Tensor& x, const Tensor& weight);
// More of torch.nn.functional's activations (ops/activation_more.cpp), with its defaults, values and
// gradients: hardswish, hardsigmoid, mish and logsigmoid are kernels; the rest are composites.
Tensor hardswish(const Tensor& x);    // x relu6(x + 3) / 6
Tensor hardsigmoid(const Tensor& x);  // relu6(x + 3) / 6
Tensor mish(const Tensor& x);         // x tanh(softplus(x))
Tensor logsigmoid(const Tensor& x);   // log(sigmoid(x)), stable: min(x, 0) - log1p(exp(-|x|))
Tensor selu(const Tensor& x);         // scale * elu(x, alpha) with PyTorch's constants
Tensor celu(const Tensor& x, double alpha = 1.0);  // x > 0 ? x : alpha (exp(x / alpha) - 1)
Tensor softsign(const Tensor& x);                  // x / (1 + |x|)
Tensor tanhshrink(const Tensor& x);                // x - tanh(x)
Tensor softshrink(const Tensor& x, double lambd = 0.5);  // x -+ lambd outside [-lambd, lambd], else 0
Tensor hardshrink(const Tensor& x, double lambd = 0.5);  // x outside [-lambd, lambd], else 0
Tensor threshold(const Tensor& x, double threshold, double value);  // x <= threshold ? value : x
Tensor glu(const Tensor& x, int64_t dim = -1);  // a * sigmoid(b), a and b the halves of x along dim

// ---- element-wise math (ops/math.cpp), as torch's: integer and bool inputs give f32; floor, ceil,
// round (half to even) and trunc keep an integer tensor's dtype. Inside namespace minidl these names
// hide the C library's: call std::sin etc. for numbers there.
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor atan(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor asinh(const Tensor& x);
Tensor acosh(const Tensor& x);
Tensor atanh(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor log10(const Tensor& x);
Tensor exp2(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor erfc(const Tensor& x);
Tensor erfinv(const Tensor& x);
Tensor reciprocal(const Tensor& x);  // 1 / x
Tensor square(const Tensor& x);      // pow(x, 2), as torch.square
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);
Tensor trunc(const Tensor& x);
Tensor frac(const Tensor& x);  // x - trunc(x), floating only

// ---- reductions (ops/reduce.cpp). dims empty = all dims.
Tensor sum(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor var(const Tensor& x, std::vector<int64_t> dims = {}, int64_t correction = 1, bool keepdim = false);
// sqrt(var). Call it minidl::std: after `using namespace minidl`, an unqualified std(x) is ambiguous.
Tensor std(const Tensor& x, std::vector<int64_t> dims = {}, int64_t correction = 1, bool keepdim = false);
// max/min of a bool tensor is a bool (a logical or/and), as PyTorch's.
Tensor max(const Tensor& x);  // over all elements
Tensor min(const Tensor& x);
struct ValuesIndices {
  Tensor values;
  Tensor indices;  // i64
};
ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim = false);
// argmax/argmin: the index of the first extreme (the first NaN wins), i64; bool tensors are
// refused, as PyTorch's.
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& x);  // index into the flattened tensor
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& x);  // index into the flattened tensor
Tensor sum_to(const Tensor& x, const Shape& shape);  // reduce broadcast dims back to shape
// amax/amin: the largest/smallest value over dims (empty = all), torch.amax/amin. NaN propagates;
// the gradient is shared evenly by the elements equal to the result (NaN across a NaN slice), as
// PyTorch's; max(x, dim) instead sends it to the one index it returns. A zero-size reduced dim is
// refused. bool and integer inputs keep their dtype.
Tensor amax(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false);
// any/all: whether some / every element is non-zero (NaN is non-zero), over all elements or along
// dim; an empty slice gives false / true. bool results (u8 for a u8 input, as PyTorch 1.13).
Tensor any(const Tensor& x);
Tensor all(const Tensor& x);
Tensor any(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor all(const Tensor& x, int64_t dim, bool keepdim = false);
// log(sum(exp(x))) over dims (empty = all), torch.logsumexp: the max over dims is subtracted first,
// so large values do not overflow; a slice of only -inf gives -inf, any +inf gives +inf, NaN
// propagates, an empty slice gives -inf. Integer and bool inputs give f32 (PyTorch's default
// dtype); f16/bf16 compute in f32 and round once. Gradient g * exp(x - result) (softmax-like; NaN
// in an all -inf or +inf slice, as PyTorch's). Autocast: None on CPU, FP32 on CUDA.
Tensor logsumexp(const Tensor& x, std::vector<int64_t> dims, bool keepdim = false);

// ---- vector norm (ops/reduce.cpp; torch.linalg.vector_norm, torch.norm): (sum |x|^p)^(1/p) over dims
// (empty = all). p = 2, 1, INFINITY (max |x|), -INFINITY (min |x|), 0 (count of non-zeros) or any
// other value. Floating inputs only; f16/bf16 accumulate in f32 and return their own dtype.
// Autocast: None on CPU, f32 on CUDA (PyTorch's fp32_append_dtype for norm).
Tensor norm(const Tensor& x, double p = 2.0, std::vector<int64_t> dims = {}, bool keepdim = false);

// ---- linear algebra (ops/linear.cpp); autocast LowerPrecision
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());  // x @ w^T + b
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, double beta = 1.0, double alpha = 1.0);

// ---- softmax family (ops/softmax.cpp)
// dtype (PyTorch's dtype=): x is cast to it first and the result has it; such a call is not
// autocast (the explicit dtype wins over FP32SetOptDtype's f32).
Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
// Gradient of softmax (log=false) or log_softmax (log=true) given the forward output; differentiable.
Tensor softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim, bool log);

// ---- losses (ops/loss.cpp); autocast FP32 (Reduction: ops/reduction.h)
struct CrossEntropyOptions {
  Reduction reduction = Reduction::Mean;
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
  Tensor weight;  // optional per-class weight
};
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& opts = {});
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const CrossEntropyOptions& opts = {});
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor binary_cross_entropy(const Tensor& probs, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        Reduction reduction = Reduction::Mean, const Tensor& pos_weight = Tensor());

// Element-wise losses (ops/pointwise_loss.cpp), torch.nn.functional's. With z = |input - target|:
//   smooth_l1_loss: z < beta ? 0.5 z^2 / beta : z - 0.5 beta; beta >= 0, and beta = 0 is l1_loss
//     (as PyTorch 2.x, so the gradient at input == target is 0; 1.13 gave -1 there);
//   huber_loss:     z < delta ? 0.5 z^2 : delta (z - 0.5 delta); delta > 0 (= delta * smooth_l1
//     with beta = delta).
// The target broadcasts against the input, with PyTorch's warning when their shapes differ (as
// mse_loss and l1_loss). Gradients are PyTorch's: g * clamp((input - target) / beta, -1, 1) and
// g * clamp(input - target, -delta, delta), so an infinite difference has a finite gradient.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean, double beta = 1.0);
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean, double delta = 1.0);

// kl_div's reductions: Reduction's three and BatchMean, the sum divided by input.size(0) (the
// mathematical KL divergence per sample; Mean divides by every element, as PyTorch, which warns
// about it). BatchMean is a value of its own enum rather than a fourth Reduction because only
// kl_div has it (PyTorch refuses 'batchmean' for every other loss): no other loss can be handed it,
// the compiler says so instead of a run-time check in each of them, and every switch over
// Reduction stays complete.
enum class KLDivReduction { None, Mean, Sum, BatchMean };
// torch.nn.functional.kl_div: input holds log-probabilities; target holds probabilities, or
// log-probabilities when log_target. Element-wise loss: target * (log(target) - input), with
// 0 where target == 0 (PyTorch's xlogy: a zero target contributes 0, whatever the input, unless
// the input is -inf or NaN, where 0 * input is NaN); with log_target: exp(target) * (target -
// input). Both broadcast without a warning, as PyTorch; both must be floating. The target's
// gradient is NaN where a target probability is 0, as PyTorch's (xlogy's gradient there is 0/0).
Tensor kl_div(const Tensor& input, const Tensor& target, KLDivReduction reduction = KLDivReduction::Mean,
              bool log_target = false);
// ---- distances (ops/distance.cpp) and margin/embedding losses (ops/margin_loss.cpp), as
// torch.nn.functional's, with its defaults; cdist and the losses but multilabel_soft_margin_loss
// compute in f32 under autocast (cosine_similarity on CUDA).
Tensor normalize(const Tensor& x, double p = 2.0, int64_t dim = 1, double eps = 1e-12);
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8);
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2.0, double eps = 1e-6, bool keepdim = false);
Tensor cdist(const Tensor& x1, const Tensor& x2, double p = 2.0);  // [..., P, M] x [..., R, M] -> [..., P, R]
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0.0,
                           Reduction reduction = Reduction::Mean);
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin = 1.0, Reduction reduction = Reduction::Mean);
Tensor soft_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                                   Reduction reduction = Reduction::Mean);
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0.0,
                             Reduction reduction = Reduction::Mean);
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin = 1.0,
                           double p = 2.0, double eps = 1e-6, bool swap = false, Reduction reduction = Reduction::Mean);
// torch.nn.functional.triplet_margin_with_distance_loss: the triplet hinge with any distance
// (pairwise_distance when empty); margin > 0. A composite: no autocast row of its own.
using DistanceFn = std::function<Tensor(const Tensor&, const Tensor&)>;
Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const DistanceFn& distance_function = nullptr, double margin = 1.0,
                                         bool swap = false, Reduction reduction = Reduction::Mean);
// torch.nn.functional.multilabel_margin_loss: input [N, C] (or [C]); target of the same shape, i64,
// each row's class indices up to its first -1; per sample, the sum over its target classes j and
// its other classes i of max(0, 1 - (x[j] - x[i])), divided by C.
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
// torch.nn.functional.pdist: x [N, M] -> the p-norm distances of rows i < j, [N (N - 1) / 2], in
// row-major order (cdist's upper triangle).
Tensor pdist(const Tensor& x, double p = 2.0);
// input [N, C] (or [C]), integer target [N]; p 1 or 2; weight [C] optional.
Tensor multi_margin_loss(const Tensor& input, const Tensor& target, int64_t p = 1, double margin = 1.0,
                         const Tensor& weight = Tensor(), Reduction reduction = Reduction::Mean);
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input = true, bool full = false, double eps = 1e-8,
                        Reduction reduction = Reduction::Mean);
// 0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) when full), as
// torch.nn.functional.gaussian_nll_loss (ops/pointwise_loss.cpp): var of input's shape
// (heteroscedastic), or with the last dim 1 or missing (homoscedastic); a negative var is refused
// (a host check). The clamp to eps passes the gradient through unchanged, as PyTorch's clamp under
// no_grad does. Autocast None (on no list; its parts follow theirs).
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var, bool full = false, double eps = 1e-6,
                         Reduction reduction = Reduction::Mean);
// x1 [*, in1], x2 [*, in2], weight [out, in1, in2], bias [out] -> [*, out]:
// y_o = sum_ij x1_i weight_oij x2_j + b_o (torch.nn.functional.bilinear; ops/einsum.cpp, through einsum).
Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& weight, const Tensor& bias = Tensor());

// ---- shape and joining (ops/shape.cpp, ops/join.cpp)
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
// ---- rearranging (ops/rearrange.cpp), new tensors, differentiable: flip reverses x along dims
// (torch.flip); repeat tiles it repeats[i] times along dim i, repeats having at least x.dim()
// entries (leading extra ones add dims), as Tensor.repeat.
Tensor flip(const Tensor& x, const std::vector<int64_t>& dims);
Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats);
// torch.roll: elements shifted along dims (wrapping around); no dims rolls the flattened tensor.
Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims = {});
// torch.nn.functional.pixel_shuffle / pixel_unshuffle: [*, C r^2, H, W] <-> [*, C, H r, W r].
Tensor pixel_shuffle(const Tensor& x, int64_t upscale_factor);
// torch.nn.functional.channel_shuffle: [N, C, *] -> channel j of group i at j * groups + i.
Tensor channel_shuffle(const Tensor& x, int64_t groups);
Tensor pixel_unshuffle(const Tensor& x, int64_t downscale_factor);

// ---- diagonals and vector products (ops/diagonal.cpp), as torch's. diagonal puts the diagonal of
// dims dim1 and dim2 (offset above (> 0) or below it) last; a new tensor, not a view. diag: a 1-D x
// gives the matrix with x on diagonal `diagonal`, a 2-D x that diagonal. dot: 1-D, one dtype
// (autocast promotes on CUDA).
Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
Tensor diag(const Tensor& x, int64_t diagonal = 0);
Tensor trace(const Tensor& x);
Tensor outer(const Tensor& a, const Tensor& b);
Tensor dot(const Tensor& a, const Tensor& b);
// torch.einsum (ops/einsum.cpp): einsum("bij,bjk->bik", {a, b}); ellipsis, diagonals, implicit
// output, broadcasting; contracted left to right through bmm (so bmm's autocast row applies).
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);

// ---- indexing (ops/index.cpp)
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
Tensor one_hot(const Tensor& index, int64_t num_classes = -1);  // i64 result
// torch.scatter_add: a copy of x with src[i][j] added at [index[i][j]][j] (dim 0; likewise for
// any dim); index i64, of x's rank, no larger than src in any dim nor than x apart from dim; src of
// x's dtype. Repeated indices accumulate. Differentiable in x (the gradient passes through) and in
// src (the gradient gathered back; 0 for src elements the index does not reach, where PyTorch's
// backward refuses a src larger than index). Autocast: Promote on CUDA, as PyTorch's.
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);

// ---- sorting (ops/sort.cpp): stable along dim (equal values keep their order), NaN above every
// number (last ascending, first descending), as PyTorch's sort(stable=True). Indices are i64;
// gradients go to the selected elements. Every dtype; bool sorts false before true.
ValuesIndices sort(const Tensor& x, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);

// ---- selections of a size the values decide (ops/selection.cpp), as torch's; each reads a count
// back to the host (a wait for a GPU, as PyTorch's). nonzero: [count, x.dim()] i64 coordinates,
// row-major order; masked_select: the elements where the bool mask (both broadcast) is true, 1-D,
// differentiable in x; bincount: counts (or summed weights) of non-negative integers, at least
// minlength bins; unique: the distinct values sorted (NaNs last, each its own), the index of each
// element's value (x's shape) and each value's count (torch.unique(sorted=True, return_inverse=True,
// return_counts=True) of the flattened tensor).
Tensor nonzero(const Tensor& x);
Tensor masked_select(const Tensor& x, const Tensor& mask);
Tensor bincount(const Tensor& x, const Tensor& weights = Tensor(), int64_t minlength = 0);
struct UniqueResult {
  Tensor values, inverse, counts;
};
UniqueResult unique(const Tensor& x);
// The k largest (smallest with largest = false) along dim, in order; of equal values the earliest
// come first (PyTorch leaves that choice to its kernel). sorted = false is accepted and still
// sorts. 0 <= k <= size(dim).
ValuesIndices topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);

// ---- cumulative sum and product (ops/scan.cpp), torch.cumsum/cumprod: integer and bool inputs give
// i64; `dtype` casts the input first. f32 accumulates in f64 and f16/bf16 in f32, each output
// rounded once (PyTorch's CPU kernel; its CUDA one accumulates f32 in f32). cumprod's gradient is
// right at zeros too, as PyTorch's. Autocast: FP32SetOptDtype on CUDA, as PyTorch.
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);

// ---- casts (ops/cast.cpp): differentiable between floating dtypes
Tensor cast(const Tensor& x, DType dtype);

// ---- more factories (ops/factory.cpp), as torch's
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, TensorOptions opts = {});  // f32 by default
// steps values from start to end: each half counts from its own end, in the dtype's precision
// (PyTorch's vectorized kernel computes a few middle elements from the other end, with fused
// multiply-adds: a few ulp of the range's ends apart).
Tensor linspace(double start, double end, int64_t steps, TensorOptions opts = {});
Tensor logspace(double start, double end, int64_t steps, double base = 10.0, TensorOptions opts = {});
// 0-D or 1-D tensors -> one expanded view each; "ij" (matrix, torch's default) or "xy" indexing.
std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, const std::string& indexing = "ij");

// ---- random (ops/random.cpp) use the default generator unless one is given
Tensor rand(const Shape& shape, TensorOptions opts = {}, Generator* gen = nullptr);   // U[0, 1)
Tensor randn(const Shape& shape, TensorOptions opts = {}, Generator* gen = nullptr);  // N(0, 1)
Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions opts = DType::I64, Generator* gen = nullptr);
Tensor dropout(const Tensor& x, double p, bool training, Generator* gen = nullptr);

// ---- operators
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Tensor operator+(const Tensor& a, double b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, double b) { return div(a, b); }
inline Tensor operator+(double a, const Tensor& b) { return add(b, a); }
inline Tensor operator-(double a, const Tensor& b) { return rsub(b, a); }
inline Tensor operator*(double a, const Tensor& b) { return mul(b, a); }

}  // namespace minidl
#include "ops/nn_ops.h"  // conv, pooling, batch norm, dropout2d
#include "ops/sequence_ops.h"  // layer/group/rms norm, embedding, conv1d, attention
#include "ops/recurrent.h"  // RNN, LSTM and GRU cells and sequences
