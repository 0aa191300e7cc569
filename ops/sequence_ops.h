// Feature normalization, embedding, 1-D convolution and attention: the layer ops of sequence and
// transformer models (torch.nn.functional names and semantics). Included by ops/ops.h.
//   layer_norm, group_norm, rms_norm (ops/norm.cpp): statistics in f32 (f64 for f64 inputs), the
//     result in the input's dtype. Autocast: layer_norm and group_norm are FP32 on CUDA (PyTorch's
//     fp32 list) and None on CPU (not on PyTorch's CPU lists: a bf16 input with f32 weights computes
//     in f32 and returns bf16, as PyTorch's CPU kernels); rms_norm is on neither list (None).
//   embedding (ops/embedding.cpp): a row gather, backward a scatter-add; autocast None.
//   embedding_bag (ops/embedding_bag.cpp): gathered rows added into their bags (scatter_add), mean
//     and max from those; autocast None.
//   ctc_loss (ops/ctc_loss.cpp): the forward recursion in whole-batch ops, its own backward node (PyTorch's
//     gradient formula); autocast FP32 on CPU, None on CUDA (PyTorch's lists).
//   conv1d (ops/conv.cpp): conv2d over a height of 1 (exact: the same kernels); LowerPrecision.
//   scaled_dot_product_attention (ops/attention.cpp): LowerPrecision on CPU and CUDA (PyTorch 2.x);
//     its matmuls and softmax run in the cast dtype (the softmax kernel accumulates in f32).
// These (ctc_loss apart) are composites of differentiable ops, so every backward (also second order) is exact and
// every device that has the parts runs them.
#pragma once
#include <cstdint>
#include <optional>

#include "framework/generator.h"
#include "ops/nn_ops.h"  // ConvPadding
#include "ops/reduction.h"
#include "ops/tensor.h"

namespace minidl {

// ---- normalization over features (ops/norm.cpp)
// Normalizes over the last normalized_shape.size() dims of x (which must equal normalized_shape):
// y = (x - mean) / sqrt(var + eps) * weight + bias, biased variance; weight/bias of normalized_shape
// (optional).
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// x [N, C, *]: statistics per (sample, group of C/num_groups channels); weight/bias [C] optional.
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  double eps = 1e-5);
// y = x / sqrt(mean(x^2) + eps) over the last normalized_shape dims, in f32 and cast back to x's
// dtype, then * weight with ordinary promotion (as torch.nn.functional.rms_norm: a bf16 input with
// an f32 weight gives f32); eps defaults to the machine epsilon of f32 (f64 for f64 inputs).
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                std::optional<double> eps = std::nullopt);

// ---- embedding (ops/embedding.cpp)
// indices (i64 or i32, any shape) into the rows of weight [num_embeddings, embedding_dim] ->
// [*indices.shape, embedding_dim]. padding_idx (negative counts from the end): that row's output is
// the row itself, but it receives no gradient.
// max_norm: first embedding_renorm_ (below), as torch.nn.functional.embedding.
Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt,
                 std::optional<double> max_norm = std::nullopt, double norm_type = 2.0);
// torch.embedding_renorm_: in place and without recording a graph, each row of weight that indices
// name and whose norm_type-norm exceeds max_norm is scaled by max_norm / (norm + 1e-7). Returns weight.
const Tensor& embedding_renorm_(const Tensor& weight, const Tensor& indices, double max_norm, double norm_type = 2.0);

// ---- embedding bags (ops/embedding_bag.cpp)
enum class EmbeddingBagMode { Sum, Mean, Max };
// (libtorch's names: EmbeddingBagFuncOptions here, EmbeddingBagOptions for nn::EmbeddingBag.)
struct EmbeddingBagFuncOptions {
  Tensor offsets_;                     // 1-D i64/i32 bag starts, with a 1-D input (a 2-D input: one bag a row)
  EmbeddingBagMode mode_ = EmbeddingBagMode::Mean;
  Tensor per_sample_weights_;          // the input's shape; each row scaled before the sum (mode Sum only)
  bool include_last_offset_ = false;   // offsets has one more entry: the end of the last bag
  std::optional<int64_t> padding_idx_; // rows of this index take no part (not counted in a mean)
  std::optional<double> max_norm_;     // embedding_renorm_ the rows the input names first
  double norm_type_ = 2.0;

  EmbeddingBagFuncOptions& offsets(Tensor t) { offsets_ = std::move(t); return *this; }
  EmbeddingBagFuncOptions& mode(EmbeddingBagMode m) { mode_ = m; return *this; }
  EmbeddingBagFuncOptions& per_sample_weights(Tensor t) { per_sample_weights_ = std::move(t); return *this; }
  EmbeddingBagFuncOptions& include_last_offset(bool b) { include_last_offset_ = b; return *this; }
  EmbeddingBagFuncOptions& padding_idx(int64_t i) { padding_idx_ = i; return *this; }
  EmbeddingBagFuncOptions& max_norm(double v) { max_norm_ = v; return *this; }
  EmbeddingBagFuncOptions& norm_type(double v) { norm_type_ = v; return *this; }
};
// indices [B, n] (B bags of n) or [L] with offsets [B] (B + 1 with include_last_offset), into the
// rows of weight [num_embeddings, dim] -> [B, dim]: each bag's sum, mean or max (an empty bag: zeros).
// Offsets must start at 0, not decrease and not pass the input's end (checked on the host).
Tensor embedding_bag(const Tensor& indices, const Tensor& weight, const EmbeddingBagFuncOptions& options = {});

// ---- CTC loss (ops/ctc_loss.cpp)
// log_probs [T, N, C] (log-softmax outputs; unbatched [T, C]), targets [N, S] padded or 1-D (each
// sample's labels one after another; unbatched [S]), input_lengths and target_lengths [N] (i64 or
// i32; or host vectors) -> the negative log likelihood of each target over its alignments: [N] with
// Reduction::None, the sum, or PyTorch's mean (each divided by its target length, at least 1, then
// averaged). zero_infinity: an impossible alignment gives 0 and no gradient instead of inf. The
// gradient is PyTorch's (exact after a log_softmax). f32 or f64 (bf16/f16 under CPU autocast run in
// f32). Labels must lie in [0, C); blank in them is allowed, as PyTorch.
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths, const Tensor& target_lengths,
                int64_t blank = 0, Reduction reduction = Reduction::Mean, bool zero_infinity = false);
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const std::vector<int64_t>& input_lengths,
                const std::vector<int64_t>& target_lengths, int64_t blank = 0, Reduction reduction = Reduction::Mean,
                bool zero_infinity = false);

// ---- 1-D convolution (ops/conv.cpp)
// x [N, C, L] (or unbatched [C, L]), weight [O, C/groups, K], bias [O] -> [N, O, OL] with
// OL = (L + 2*padding - dilation*(K-1) - 1) / stride + 1.
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), int64_t stride = 1,
              int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1);
// padding="valid" or "same" (stride 1; an odd total padding d*(k-1) puts the extra column at the
// end, as PyTorch).
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, ConvPadding padding,
              int64_t dilation = 1, int64_t groups = 1);

// conv_transpose1d (torch.nn.functional.conv_transpose1d): x [N, C, L] (or [C, L]), weight [C,
// O/groups, K], bias [O] -> [N, O, (L-1)*stride - 2*padding + dilation*(K-1) + output_padding + 1]:
// conv_transpose2d over a height of 1, LowerPrecision under autocast.
Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), int64_t stride = 1,
                        int64_t padding = 0, int64_t output_padding = 0, int64_t groups = 1, int64_t dilation = 1);

// ---- attention (ops/attention.cpp)
struct AttentionOptions {
  Tensor attn_mask;              // bool (true = may attend) or float (added to the scores), broadcast to [..., L, S]
  double dropout_p = 0.0;        // dropout on the attention weights (applied whenever > 0, as PyTorch)
  bool is_causal = false;        // query i attends to keys j <= i; exclusive with attn_mask
  std::optional<double> scale;   // default 1/sqrt(E)
  Generator* generator = nullptr;  // for the dropout; the default generator when null

  AttentionOptions& mask(Tensor m) { attn_mask = std::move(m); return *this; }
  AttentionOptions& dropout(double p) { dropout_p = p; return *this; }
  AttentionOptions& causal(bool c) { is_causal = c; return *this; }
  AttentionOptions& with_scale(double s) { scale = s; return *this; }
};
// q [..., L, E], k [..., S, E], v [..., S, Ev] -> [..., L, Ev]:
// softmax(q k^T * scale + mask) v. A row whose keys are all masked gives NaN (as PyTorch's math path).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionOptions& options = {});
// The same, also returning the attention weights (softmax(q k^T * scale + mask) after the dropout,
// [..., L, S]): what torch.nn.MultiheadAttention returns with need_weights.
struct AttentionWithWeights {
  Tensor output, weights;
};
AttentionWithWeights scaled_dot_product_attention_with_weights(const Tensor& q, const Tensor& k, const Tensor& v,
                                                               const AttentionOptions& options = {});

}  // namespace minidl
