// Distances and similarities as torch.nn.functional's: normalize, cosine_similarity,
// pairwise_distance and cdist. Compositions of norm, sum, clamp and broadcasting arithmetic, so
// they run on every backend and differentiate to any order (norm's gradient is 0 at a zero norm,
// as PyTorch's). Autocast: cosine_similarity FP32 on CUDA; cdist FP32 on both (PyTorch's lists);
// normalize and pairwise_distance on none.
#include "ops/common.h"

namespace minidl {

using namespace ops_detail;

namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kCosineSimilarity{"cosine_similarity", P::None, P::FP32};
const amp::OpPolicy kCdist{"cdist", P::FP32, P::FP32};
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::distance_policies() { return {&kCosineSimilarity, &kCdist}; }

Tensor normalize(const Tensor& x, double p, int64_t dim, double eps) {
  check_defined(x, "normalize", "input");
  check_floating("normalize", x);
  // x / max(||x||_p, eps) along dim, as F.normalize.
  return div(x, clamp(norm(x, p, {dim}, true), eps, std::nullopt));
}

Tensor cosine_similarity(const Tensor& x1_arg, const Tensor& x2_arg, int64_t dim, double eps) {
  check_defined(x1_arg, "cosine_similarity", "x1");
  check_defined(x2_arg, "cosine_similarity", "x2");
  amp::AutocastInputs in(kCosineSimilarity, {x1_arg, x2_arg});
  // Promoted to one dtype first (an integer and a floating tensor give the floating one), as torch's.
  const DType t = result_type(in[0], in[1]);
  MINIDL_CHECK(is_floating(t), "cosine_similarity", "expected floating inputs (got ", in[0].meta_str(), " and ", in[1].meta_str(), ")");
  const Tensor x1 = cast(in[0], t), x2 = cast(in[1], t);
  // Both broadcast first (a norm along a broadcast dim counts every copy), as torch's.
  const Shape shape = broadcast_shapes(x1.shape(), x2.shape(), "cosine_similarity");
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(shape.size()), "cosine_similarity");
  const Tensor a = x1.expand(shape), b = x2.expand(shape);
  // a . b / (max(||a||, eps) max(||b||, eps)), as PyTorch 1.12 and later: each norm clamped on its own.
  const Tensor n1 = clamp(norm(a, 2.0, {d}), eps, std::nullopt), n2 = clamp(norm(b, 2.0, {d}), eps, std::nullopt);
  return div(sum(mul(a, b), {d}), mul(n1, n2));
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  check_defined(x1, "pairwise_distance", "x1");
  check_defined(x2, "pairwise_distance", "x2");
  // ||x1 - x2 + eps||_p over the last dim, as PyTorch's (eps keeps the gradient finite at x1 == x2).
  const Tensor diff = add(sub(x1, x2), eps);
  return norm(diff, p, {diff.dim() == 0 ? 0 : -1}, keepdim);
}

Tensor cdist(const Tensor& x1_arg, const Tensor& x2_arg, double p) {
  check_defined(x1_arg, "cdist", "x1");
  check_defined(x2_arg, "cdist", "x2");
  amp::AutocastInputs in(kCdist, {x1_arg, x2_arg});
  const Tensor &x1 = in[0], &x2 = in[1];
  MINIDL_CHECK(x1.dim() >= 2, "cdist", "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  MINIDL_CHECK(x2.dim() >= 2, "cdist", "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  MINIDL_CHECK(x1.size(-1) == x2.size(-1), "cdist", "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
               " X2: ", x2.size(-1));
  MINIDL_CHECK(p >= 0, "cdist", "cdist only supports non-negative p values");
  check_floating("cdist", x1);
  check_floating("cdist", x2);
  // [..., P, 1, M] - [..., 1, R, M], normed over M: the p-norm distance of every pair of rows.
  return norm(sub(x1.unsqueeze(-2), x2.unsqueeze(-3)), p, {-1});
}

// cdist's strict upper triangle, row by row. Its gradient reaches only those pairs, so equal rows
// (a zero distance) get cdist's zero-distance gradient, 0, as PyTorch's pdist.
Tensor pdist(const Tensor& x, double p) {
  check_defined(x, "pdist", "input");
  MINIDL_CHECK(x.dim() == 2, "pdist", "pdist only supports 2D tensors, got: ", x.dim(), "D");
  MINIDL_CHECK(p >= 0, "pdist", "pdist only supports non-negative p values");
  const int64_t n = x.size(0);
  const Tensor upper = triu(ones({n, n}, TensorOptions(DType::Bool).device(x.device())), 1);
  return masked_select(cdist(x, x, p), upper);
}

}  // namespace minidl
