// Feature normalization, embedding, 1-D convolution and attention: the layer ops of sequence and
// transformer models (torch.nn.functional names and semantics). Included by ops/ops.h.
//   layer_norm, group_norm, rms_norm (ops/norm.cpp): statistics in f32 (f64 for f64 inputs), the
//     result in the input's dtype. Autocast: layer_norm and group_norm are FP32 on CUDA (PyTorch's
//     fp32 list) and None on CPU (not on PyTorch's CPU lists: a bf16 input with f32 weights computes
//     in f32 and returns bf16, as PyTorch's CPU kernels); rms_norm is on neither list (None).
//   embedding (ops/embedding.cpp): a row gather, backward a scatter-add; autocast None.
//   conv1d (ops/conv.cpp): conv2d over a height of 1 (exact: the same kernels); LowerPrecision.
//   scaled_dot_product_attention (ops/attention.cpp): LowerPrecision on CPU and CUDA (PyTorch 2.x);
//     its matmuls and softmax run in the cast dtype (the softmax kernel accumulates in f32).
// These are composites of differentiable ops, so every backward (also second order) is exact and
// every device that has the parts runs them.
#pragma once
#include <cstdint>
#include <optional>

#include "framework/generator.h"
#include "ops/nn_ops.h"  // ConvPadding
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
Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt);

// ---- 1-D convolution (ops/conv.cpp)
// x [N, C, L] (or unbatched [C, L]), weight [O, C/groups, K], bias [O] -> [N, O, OL] with
// OL = (L + 2*padding - dilation*(K-1) - 1) / stride + 1.
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), int64_t stride = 1,
              int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1);
// padding="valid" or "same" (stride 1; an odd total padding d*(k-1) puts the extra column at the
// end, as PyTorch).
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, ConvPadding padding,
              int64_t dilation = 1, int64_t groups = 1);

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

}  // namespace minidl
