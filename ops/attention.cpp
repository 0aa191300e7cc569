// Scaled dot-product attention (torch.nn.functional.scaled_dot_product_attention), PyTorch's math
// path written in differentiable ops: softmax(q k^T * scale + mask) v, dropout on the weights.
// q is scaled before the product (L x E multiplies instead of L x S). Every backward, also second
// order, comes from the parts. Autocast policy: LowerPrecision on CPU and CUDA (PyTorch 2.x lists
// it so); the op consults autocast once, so its matmuls and softmax run in the cast dtype (the
// softmax kernel accumulates in f32 and rounds once), as PyTorch's fused kernels do.
#include <cmath>
#include <limits>

#include "ops/common.h"
#include "ops/sequence_ops.h"

namespace minidl {

using namespace ops_detail;

// Autocast policies of this family (the policy table is built from these rows).
namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kScaledDotProductAttention{"scaled_dot_product_attention", P::LowerPrecision, P::LowerPrecision};

void check_qkv(const char* op, const Tensor& q, const Tensor& k, const Tensor& v) {
  check_defined(q, op, "query");
  check_defined(k, op, "key");
  check_defined(v, op, "value");
  check_floating(op, q);
  check_same_device(op, q, k);
  check_same_device(op, q, v);
  MINIDL_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), op,
               "expected query, key and value to have the same dtype, but got ", q.meta_str(), ", ", k.meta_str(),
               " and ", v.meta_str());
  MINIDL_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, op, "expected query, key and value of at least 2 dims "
               "[..., L, E], got ", q.meta_str(), ", ", k.meta_str(), " and ", v.meta_str());
  MINIDL_CHECK(q.size(-1) == k.size(-1), op, "query and key must have the same embedding size, got ", q.meta_str(),
               " and ", k.meta_str());
  MINIDL_CHECK(k.size(-2) == v.size(-2), op, "key and value must have the same sequence length, got ", k.meta_str(),
               " and ", v.meta_str());
}

// Bool [L, S]: true where key j <= query i (the top-left aligned lower triangle, as PyTorch).
Tensor causal_mask(int64_t L, int64_t S, Device device) {
  Tensor rows = arange(static_cast<double>(L), TensorOptions(DType::I64).device(device)).unsqueeze(1);
  Tensor cols = arange(static_cast<double>(S), TensorOptions(DType::I64).device(device)).unsqueeze(0);
  return ge(rows, cols);
}

// scores with the mask applied: a bool mask keeps the true entries (others -inf), a float mask is added.
Tensor apply_mask(const char* op, const Tensor& scores, const Tensor& mask) {
  check_same_device(op, scores, mask);
  if (mask.dtype() == DType::Bool) {
    Tensor neg_inf = full({}, -std::numeric_limits<double>::infinity(), TensorOptions(scores.dtype()).device(scores.device()));
    return where(mask, scores, neg_inf);
  }
  MINIDL_CHECK(mask.is_floating_point(), op, "attn_mask must be a bool or floating tensor, got ", mask.meta_str());
  // As PyTorch 2.x's "Expected attn_mask dtype to be bool or float or to match query dtype".
  MINIDL_CHECK(mask.dtype() == scores.dtype(), op, "a floating attn_mask must have the query's dtype ",
               dtype_name(scores.dtype()), ", got ", mask.meta_str());
  return add(scores, mask);
}
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::attention_policies() { return {&kScaledDotProductAttention}; }

namespace {
AttentionWithWeights attention_impl(const Tensor& q_arg, const Tensor& k_arg, const Tensor& v_arg, const AttentionOptions& o) {
  amp::AutocastInputs in(kScaledDotProductAttention, {q_arg, k_arg, v_arg, o.attn_mask});
  const Tensor &q = in[0], &k = in[1], &v = in[2], &mask = in[3];
  const char* op = "scaled_dot_product_attention";
  check_qkv(op, q, k, v);
  MINIDL_CHECK(!(o.is_causal && mask.defined()), op, "attn_mask and is_causal cannot both be set");
  MINIDL_CHECK(o.dropout_p >= 0.0 && o.dropout_p <= 1.0, op, "dropout_p must be in [0, 1], got ", o.dropout_p);
  const double scale = o.scale ? *o.scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  Tensor scores = matmul(mul(q, scale), k.transpose(-2, -1));
  if (o.is_causal) scores = apply_mask(op, scores, causal_mask(q.size(-2), k.size(-2), q.device()));
  if (mask.defined()) scores = apply_mask(op, scores, mask);
  Tensor weights = softmax(scores, -1);
  if (o.dropout_p > 0.0) weights = dropout(weights, o.dropout_p, true, o.generator);
  return {matmul(weights, v), weights};
}
}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& o) {
  return attention_impl(q, k, v, o).output;
}

AttentionWithWeights scaled_dot_product_attention_with_weights(const Tensor& q, const Tensor& k, const Tensor& v,
                                                               const AttentionOptions& o) {
  return attention_impl(q, k, v, o);
}

}  // namespace minidl
