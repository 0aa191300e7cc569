// The embedding and margin losses of torch.nn.functional: margin_ranking_loss, hinge_embedding_loss,
// soft_margin_loss, multilabel_soft_margin_loss, cosine_embedding_loss, triplet_margin_loss,
// multi_margin_loss and poisson_nll_loss, each PyTorch's formula in differentiable ops followed by
// the reduction. Autocast: FP32 on both devices (PyTorch's CPU and CUDA fp32 lists), except
// multilabel_soft_margin_loss, which is on neither (a composite there too).
#include <cmath>
#include <numbers>

#include "ops/loss_common.h"

namespace minidl {

using namespace ops_detail;

namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kMarginRankingLoss{"margin_ranking_loss", P::FP32, P::FP32};
const amp::OpPolicy kHingeEmbeddingLoss{"hinge_embedding_loss", P::FP32, P::FP32};
const amp::OpPolicy kSoftMarginLoss{"soft_margin_loss", P::FP32, P::FP32};
const amp::OpPolicy kCosineEmbeddingLoss{"cosine_embedding_loss", P::FP32, P::FP32};
const amp::OpPolicy kTripletMarginLoss{"triplet_margin_loss", P::FP32, P::FP32};
const amp::OpPolicy kMultiMarginLoss{"multi_margin_loss", P::FP32, P::FP32};
const amp::OpPolicy kPoissonNllLoss{"poisson_nll_loss", P::FP32, P::FP32};
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::margin_loss_policies() {
  return {&kMarginRankingLoss, &kHingeEmbeddingLoss, &kSoftMarginLoss, &kCosineEmbeddingLoss,
          &kTripletMarginLoss, &kMultiMarginLoss,    &kPoissonNllLoss};
}

Tensor margin_ranking_loss(const Tensor& x1_arg, const Tensor& x2_arg, const Tensor& target_arg, double margin, Reduction reduction) {
  check_defined(x1_arg, "margin_ranking_loss", "input1");
  check_defined(x2_arg, "margin_ranking_loss", "input2");
  check_defined(target_arg, "margin_ranking_loss", "target");
  MINIDL_CHECK(x1_arg.dim() == x2_arg.dim() && x1_arg.dim() == target_arg.dim(), "margin_ranking_loss",
               "All input tensors should have same dimension but got sizes: input1: ", shape_str(x1_arg.shape()),
               ", input2: ", shape_str(x2_arg.shape()), ", target: ", shape_str(target_arg.shape()));
  amp::AutocastInputs in(kMarginRankingLoss, {x1_arg, x2_arg, target_arg});
  // max(0, -y (x1 - x2) + margin)
  const Tensor loss = clamp(add(mul(neg(in[2]), sub(in[0], in[1])), margin), 0.0, std::nullopt);
  return apply_reduction(loss, reduction);
}

Tensor hinge_embedding_loss(const Tensor& input_arg, const Tensor& target_arg, double margin, Reduction reduction) {
  check_loss_pair("hinge_embedding_loss", input_arg, target_arg);
  amp::AutocastInputs in(kHingeEmbeddingLoss, {input_arg, target_arg});
  const Tensor &x = in[0], &y = in[1];
  // x where y != -1, plus max(0, margin - x) where y != 1, as PyTorch's (a target of other values gets both).
  const Tensor zero = zeros_like(x);
  const Tensor margin_part = where(ne(y, 1.0), clamp(rsub(x, margin), 0.0, std::nullopt), zero);
  const Tensor self_part = where(ne(y, -1.0), x, zero);
  return apply_reduction(add(margin_part, self_part), reduction);
}

Tensor soft_margin_loss(const Tensor& input_arg, const Tensor& target_arg, Reduction reduction) {
  check_loss_pair("soft_margin_loss", input_arg, target_arg);
  amp::AutocastInputs in(kSoftMarginLoss, {input_arg, target_arg});
  broadcast_shapes(in[0].shape(), in[1].shape(), "soft_margin_loss");  // broadcasts, as PyTorch's (no warning)
  return apply_reduction(log1p(exp(neg(mul(in[0], in[1])))), reduction);  // log(1 + exp(-y x))
}

Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction reduction) {
  check_loss_pair("multilabel_soft_margin_loss", input, target);
  MINIDL_CHECK(input.dim() >= 1, "multilabel_soft_margin_loss", "expected an input of at least 1 dim (got ", input.meta_str(), ")");
  // -(y logsigmoid(x) + (1 - y) logsigmoid(-x)), weighted, averaged over the classes (the last dim).
  Tensor loss = neg(add(mul(target, logsigmoid(input)), mul(rsub(target, 1.0), logsigmoid(neg(input)))));
  if (weight.defined()) loss = mul(loss, weight);
  loss = mean(loss, {-1});
  return apply_reduction(loss, reduction);
}

Tensor cosine_embedding_loss(const Tensor& x1_arg, const Tensor& x2_arg, const Tensor& target_arg, double margin, Reduction reduction) {
  check_defined(x1_arg, "cosine_embedding_loss", "input1");
  check_defined(x2_arg, "cosine_embedding_loss", "input2");
  check_defined(target_arg, "cosine_embedding_loss", "target");
  amp::AutocastInputs in(kCosineEmbeddingLoss, {x1_arg, x2_arg, target_arg});
  const Tensor &x1 = in[0], &x2 = in[1], &y = in[2];
  MINIDL_CHECK(x1.dim() == x2.dim(), "cosine_embedding_loss", "the size of input1 (", shape_str(x1.shape()),
               ") must match the size of input2 (", shape_str(x2.shape()), ")");
  broadcast_shapes(x1.shape(), x2.shape(), "cosine_embedding_loss");  // same dims, broadcast sizes, as PyTorch's
  MINIDL_CHECK(x1.dim() == 1 || x1.dim() == 2, "cosine_embedding_loss", "1D target tensor expects 2D input tensors, but found inputs with sizes ",
               shape_str(x1.shape()), " and ", shape_str(x2.shape()), ".");
  MINIDL_CHECK(y.dim() == x1.dim() - 1, "cosine_embedding_loss", "expected a target of ", x1.dim() - 1, " dims (got ", y.meta_str(), ")");
  // PyTorch's formula: cos = x1.x2 / sqrt((|x1|^2 + 1e-12) (|x2|^2 + 1e-12)); 1 - cos where y == 1,
  // max(0, cos - margin) where y == -1, 0 elsewhere.
  const int64_t d = x1.dim() - 1;
  const double kEps = 1e-12;
  const Tensor dot = sum(mul(x1, x2), {d});
  const Tensor m1 = add(sum(mul(x1, x1), {d}), kEps), m2 = add(sum(mul(x2, x2), {d}), kEps);
  const Tensor cos = div(dot, sqrt(mul(m1, m2)));
  const Tensor zero = zeros_like(cos);
  const Tensor loss = add(where(eq(y, 1.0), rsub(cos, 1.0), zero), where(eq(y, -1.0), clamp(sub(cos, margin), 0.0, std::nullopt), zero));
  return apply_reduction(loss, reduction);
}

namespace {
// max(0, margin + d(a, p) - d(a, n)) reduced; swap takes min(d(a, n), d(p, n)). The triplet losses'
// shared body, after their own checks.
Tensor triplet_hinge(const char* op, const Tensor& a, const Tensor& pos, const Tensor& negative,
                     const DistanceFn& distance, double margin, bool swap, Reduction reduction) {
  MINIDL_CHECK(a.dim() == pos.dim() && a.dim() == negative.dim(), op,
               "The anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: anchor ",
               a.dim(), "D, positive ", pos.dim(), "D, and negative ", negative.dim(), "D inputs");
  const Tensor d_pos = distance(a, pos);
  Tensor d_neg = distance(a, negative);
  if (swap) d_neg = minimum(d_neg, distance(pos, negative));
  const Tensor loss = clamp(sub(add(d_pos, margin), d_neg), 0.0, std::nullopt);
  return apply_reduction(loss, reduction);
}
}  // namespace

Tensor triplet_margin_loss(const Tensor& a_arg, const Tensor& p_arg, const Tensor& n_arg, double margin, double p, double eps,
                           bool swap, Reduction reduction) {
  check_defined(a_arg, "triplet_margin_loss", "anchor");
  check_defined(p_arg, "triplet_margin_loss", "positive");
  check_defined(n_arg, "triplet_margin_loss", "negative");
  amp::AutocastInputs in(kTripletMarginLoss, {a_arg, p_arg, n_arg});
  const DistanceFn distance = [p, eps](const Tensor& x1, const Tensor& x2) { return pairwise_distance(x1, x2, p, eps); };
  return triplet_hinge("triplet_margin_loss", in[0], in[1], in[2], distance, margin, swap, reduction);
}

Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const DistanceFn& distance_function, double margin, bool swap, Reduction reduction) {
  const char* op = "triplet_margin_with_distance_loss";
  check_defined(anchor, op, "anchor");
  check_defined(positive, op, "positive");
  check_defined(negative, op, "negative");
  MINIDL_CHECK(margin > 0, op, "expected margin to be greater than 0, got ", margin, " instead");
  const DistanceFn distance =
      distance_function ? distance_function : [](const Tensor& x1, const Tensor& x2) { return pairwise_distance(x1, x2); };
  return triplet_hinge(op, anchor, positive, negative, distance, margin, swap, reduction);
}

Tensor multi_margin_loss(const Tensor& input_arg, const Tensor& target, int64_t p, double margin, const Tensor& weight_arg,
                         Reduction reduction) {
  check_defined(input_arg, "multi_margin_loss", "input");
  check_defined(target, "multi_margin_loss", "target");
  MINIDL_CHECK(p == 1 || p == 2, "multi_margin_loss", "only p == 1 and p == 2 supported");
  amp::AutocastInputs in(kMultiMarginLoss, {input_arg, weight_arg});
  const Tensor &input = in[0], &weight = in[1];
  check_floating("multi_margin_loss", input);
  MINIDL_CHECK((input.dim() == 1 && input.numel() > 0) || (input.dim() == 2 && input.size(1) > 0), "multi_margin_loss",
               "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ", shape_str(input.shape()));
  MINIDL_CHECK(target.dim() <= 1 && target.numel() == (input.dim() == 2 ? input.size(0) : 1), "multi_margin_loss",
               "inconsistent target size, expected ", input.dim() == 2 ? input.size(0) : 1, " but got ", shape_str(target.shape()));
  MINIDL_CHECK(!target.is_floating_point() && target.dtype() != DType::Bool, "multi_margin_loss",
               "expected an integer target (got ", target.meta_str(), ")");
  const Tensor x = input.dim() == 1 ? input.reshape({1, -1}) : input;
  const Tensor y = target.reshape({-1, 1});
  const int64_t classes = x.size(1);
  MINIDL_CHECK(!weight.defined() || (weight.dim() <= 1 && weight.numel() == classes), "multi_margin_loss",
               "inconsistent weight size, expected ", classes, " but got ", weight.meta_str());
  // On the CPU the targets are checked here (the message names this loss); a device checks them in
  // gather's kernel without waiting (a deferred error naming gather).
  if (target.device().is_cpu() && target.numel() > 0)
    MINIDL_CHECK(amin(target).item_int() >= 0 && amax(target).item_int() < classes, "multi_margin_loss",
                 "target out of range: each target must be in [0, ", classes, ")");
  // sum over j != y of max(0, margin - x[y] + x[j])^p (times weight[y]), divided by the class count.
  const Tensor x_y = gather(x, 1, y);  // index_select's checks: a target out of range is an error
  Tensor z = clamp(add(sub(x, x_y), margin), 0.0, std::nullopt);
  if (p == 2) z = mul(z, z);
  if (weight.defined()) z = mul(z, index_select(weight, 0, target.reshape({-1})).reshape({-1, 1}));
  const Tensor not_target = ne(arange(0, static_cast<double>(classes), 1, TensorOptions(DType::I64).device(x.device())).reshape({1, -1}), y);
  Tensor loss = div(sum(where(not_target, z, zeros_like(z)), {1}), static_cast<double>(classes));
  loss = loss.reshape(target.shape());  // the unreduced loss has the target's shape, as PyTorch's
  return apply_reduction(loss, reduction);
}

Tensor poisson_nll_loss(const Tensor& input_arg, const Tensor& target_arg, bool log_input, bool full, double eps, Reduction reduction) {
  check_loss_pair("poisson_nll_loss", input_arg, target_arg);
  amp::AutocastInputs in(kPoissonNllLoss, {input_arg, target_arg});
  const Tensor &x = in[0], &y = in[1];
  // exp(x) - y x with log_input, else x - y log(x + eps); full adds Stirling's term
  // y log y - y + log(2 pi y) / 2 where y > 1.
  Tensor loss = log_input ? sub(exp(x), mul(y, x)) : sub(x, mul(y, log(add(x, eps))));
  if (full) {
    // Differentiable in the target too, as PyTorch's (whose target gradient is NaN where y is 0).
    const Tensor stirling = add(sub(mul(y, log(y)), y), mul(log(mul(y, 2 * std::numbers::pi)), 0.5));
    loss = add(loss, where(gt(y, 1.0), stirling, zeros_like(stirling)));
  }
  return apply_reduction(loss, reduction);
}

// As compositions: valid[n, j] marks the target entries before the row's first -1; is_target[n, c]
// whether class c is among them; the hinge max(0, 1 - (x[n, y[n, j]] - x[n, c])) over valid j and
// non-target c, summed and divided by C. A class listed twice counts twice, as PyTorch's loop.
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  const char* op = "multilabel_margin_loss";
  check_defined(input, op, "input");
  check_defined(target, op, "target");
  check_floating(op, input);
  check_same_device(op, input, target);
  MINIDL_CHECK((input.dim() == 1 && input.numel() > 0) || (input.dim() == 2 && input.size(1) > 0) || input.dim() == 0, op,
               "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ", shape_str(input.shape()));
  MINIDL_CHECK(target.dtype() == DType::I64, op, "expected scalar type Long but found ", dtype_name(target.dtype()));
  MINIDL_CHECK(target.shape() == input.shape(), op, "inconsistent size ", shape_str(target.shape()),
               " for argument #2 'target' (input ", shape_str(input.shape()), ")");
  const bool batched = input.dim() == 2;
  const Tensor x = input.dim() == 2 ? input : input.reshape({1, input.numel()});
  const Tensor y = target.reshape(x.shape());
  const int64_t c = x.size(1);
  if (y.numel() > 0) {
    NoGradGuard no_grad;
    MINIDL_CHECK(min(y).item() >= -1 && max(y).item() < static_cast<double>(c), op, "argument #2 'target' is out of range");
  }
  const Tensor valid = cast(cumprod(ne(y, -1.0), 1), x.dtype());                 // [N, J]
  const Tensor classes = clamp(y, 0.0, static_cast<double>(c - 1));              // [N, J]
  const Tensor listed = mul(cast(one_hot(classes, c), x.dtype()), valid.unsqueeze(2));  // [N, J, C]
  const Tensor is_target = gt(sum(listed, {1}), 0.0);                            // [N, C]
  const Tensor target_scores = gather(x, 1, classes);                            // [N, J]
  const Tensor hinge = clamp(add(sub(x.unsqueeze(1), target_scores.unsqueeze(2)), 1.0), 0.0, std::nullopt);  // [N, J, C]
  const Tensor counted = mul(mul(hinge, valid.unsqueeze(2)), cast(logical_not(is_target), x.dtype()).unsqueeze(1));
  Tensor loss = div(sum(counted, {1, 2}), static_cast<double>(c));  // [N]
  if (!batched) loss = loss.reshape({});
  return apply_reduction(loss, reduction);
}

}  // namespace minidl
