// Distance and margin/embedding loss modules (nn/metric_losses.h): each forward calls its op.
#include "nn/metric_losses.h"

#include "framework/error.h"
#include "nn/loss.h"

namespace minidl::nn {

Tensor CosineSimilarity::forward(const Tensor& x1, const Tensor& x2) {
  auto scope = forward_scope();
  return cosine_similarity(x1, x2, dim, eps);
}
std::string CosineSimilarity::describe() const { return detail::concat("CosineSimilarity(dim=", dim, ", eps=", eps, ")"); }

Tensor PairwiseDistance::forward(const Tensor& x1, const Tensor& x2) {
  auto scope = forward_scope();
  return pairwise_distance(x1, x2, p, eps, keepdim);
}
std::string PairwiseDistance::describe() const {
  return detail::concat("PairwiseDistance(p=", p, ", eps=", eps, keepdim ? ", keepdim=True)" : ")");
}

Tensor MarginRankingLoss::forward(const Tensor& x1, const Tensor& x2, const Tensor& target) {
  auto scope = forward_scope();
  return margin_ranking_loss(x1, x2, target, margin, reduction);
}
std::string MarginRankingLoss::describe() const {
  return detail::concat("MarginRankingLoss(margin=", margin, ", reduction=", reduction_name(reduction), ")");
}

Tensor CosineEmbeddingLoss::forward(const Tensor& x1, const Tensor& x2, const Tensor& target) {
  auto scope = forward_scope();
  return cosine_embedding_loss(x1, x2, target, margin, reduction);
}
std::string CosineEmbeddingLoss::describe() const {
  return detail::concat("CosineEmbeddingLoss(margin=", margin, ", reduction=", reduction_name(reduction), ")");
}

Tensor HingeEmbeddingLoss::forward(const Tensor& input, const Tensor& target) {
  auto scope = forward_scope();
  return hinge_embedding_loss(input, target, margin, reduction);
}
std::string HingeEmbeddingLoss::describe() const {
  return detail::concat("HingeEmbeddingLoss(margin=", margin, ", reduction=", reduction_name(reduction), ")");
}

Tensor SoftMarginLoss::forward(const Tensor& input, const Tensor& target) {
  auto scope = forward_scope();
  return soft_margin_loss(input, target, reduction);
}
std::string SoftMarginLoss::describe() const { return detail::concat("SoftMarginLoss(reduction=", reduction_name(reduction), ")"); }

MultiLabelSoftMarginLoss::MultiLabelSoftMarginLoss(Tensor w, Reduction reduction) : reduction(reduction) {
  weight = register_buffer("weight", w.defined() ? w.detach() : Tensor());
}
Tensor MultiLabelSoftMarginLoss::forward(const Tensor& input, const Tensor& target) {
  auto scope = forward_scope();
  return multilabel_soft_margin_loss(input, target, weight, reduction);
}
std::string MultiLabelSoftMarginLoss::describe() const {
  return detail::concat("MultiLabelSoftMarginLoss(reduction=", reduction_name(reduction), weight.defined() ? ", weight)" : ")");
}

MultiMarginLoss::MultiMarginLoss(int64_t p, double margin, Tensor w, Reduction reduction) : p(p), margin(margin), reduction(reduction) {
  MINIDL_CHECK(p == 1 || p == 2, "MultiMarginLoss", "only p == 1 and p == 2 supported");
  MINIDL_CHECK(!w.defined() || w.dim() == 1, "MultiMarginLoss", "weight must be 1-D (got ", w.meta_str(), ")");
  weight = register_buffer("weight", w.defined() ? w.detach() : Tensor());
}
Tensor MultiMarginLoss::forward(const Tensor& input, const Tensor& target) {
  auto scope = forward_scope();
  return multi_margin_loss(input, target, p, margin, weight, reduction);
}
std::string MultiMarginLoss::describe() const {
  return detail::concat("MultiMarginLoss(p=", p, ", margin=", margin, ", reduction=", reduction_name(reduction),
                        weight.defined() ? ", weight)" : ")");
}

Tensor PoissonNLLLoss::forward(const Tensor& input, const Tensor& target) {
  auto scope = forward_scope();
  return poisson_nll_loss(input, target, log_input, full, eps, reduction);
}
std::string PoissonNLLLoss::describe() const {
  return detail::concat("PoissonNLLLoss(log_input=", log_input ? "True" : "False", ", full=", full ? "True" : "False",
                        ", reduction=", reduction_name(reduction), ")");
}

Tensor TripletMarginWithDistanceLoss::forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative) {
  auto scope = forward_scope();
  return triplet_margin_with_distance_loss(anchor, positive, negative, distance_function, margin, swap, reduction);
}
std::string TripletMarginWithDistanceLoss::describe() const {
  return detail::concat("TripletMarginWithDistanceLoss(margin=", margin, swap ? ", swap=True" : "", ", reduction=",
                        reduction_name(reduction), ")");
}

Tensor MultiLabelMarginLoss::forward(const Tensor& input, const Tensor& target) {
  auto scope = forward_scope();
  return multilabel_margin_loss(input, target, reduction);
}
std::string MultiLabelMarginLoss::describe() const {
  return detail::concat("MultiLabelMarginLoss(reduction=", reduction_name(reduction), ")");
}

Tensor TripletMarginLoss::forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative) {
  auto scope = forward_scope();
  return triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction);
}
std::string TripletMarginLoss::describe() const {
  return detail::concat("TripletMarginLoss(margin=", margin, ", p=", p, swap ? ", swap=True" : "", ", reduction=",
                        reduction_name(reduction), ")");
}

Tensor GaussianNLLLoss::forward(const Tensor& input, const Tensor& target, const Tensor& var) {
  auto scope = forward_scope();
  return gaussian_nll_loss(input, target, var, full, eps, reduction);
}

}  // namespace minidl::nn
