// Loss modules.
#include "nn/loss.h"

#include "framework/error.h"

namespace minidl::nn {

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::None: return "none";
    case Reduction::Mean: return "mean";
    case Reduction::Sum: return "sum";
  }
  return "?";
}

const char* reduction_name(KLDivReduction r) {
  switch (r) {
    case KLDivReduction::None: return "none";
    case KLDivReduction::Mean: return "mean";
    case KLDivReduction::Sum: return "sum";
    case KLDivReduction::BatchMean: return "batchmean";
  }
  return "?";
}

namespace {
// Applies an element-wise weight to an unreduced loss, then the reduction (PyTorch's BCE weight).
// The weight broadcasts to the loss's shape, never beyond it (PyTorch: "output with shape [2]
// doesn't match the broadcast shape [2, 2]"), or mean would divide by the wrong count.
Tensor weighted(const char* op, const Tensor& loss, const Tensor& weight, Reduction reduction) {
  MINIDL_CHECK(broadcast_shapes(loss.shape(), weight.shape(), op) == loss.shape(), op, "weight ",
               shape_str(weight.shape()), " does not broadcast to the input's shape ", shape_str(loss.shape()));
  // PyTorch multiplies in place (loss.mul_(weight)): the loss keeps its dtype whatever the weight's.
  Tensor l = mul(loss, weight);
  if (l.dtype() != loss.dtype()) l = cast(l, loss.dtype());
  switch (reduction) {
    case Reduction::None: return l;
    case Reduction::Sum: return sum(l);
    case Reduction::Mean: return mean(l);
  }
  return l;
}
}  // namespace

CrossEntropyLoss::CrossEntropyLoss(const CrossEntropyLossOptions& opts) : options(opts) {
  MINIDL_CHECK(opts.label_smoothing_ >= 0.0 && opts.label_smoothing_ <= 1.0, "CrossEntropyLoss",
               "label_smoothing must be between 0.0 and 1.0, got ", opts.label_smoothing_);
  weight = register_buffer("weight", opts.weight_.defined() ? opts.weight_.detach() : Tensor());
}

Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  auto scope = forward_scope();
  CrossEntropyOptions o;
  o.reduction = options.reduction_;
  o.ignore_index = options.ignore_index_;
  o.label_smoothing = options.label_smoothing_;
  o.weight = weight;
  return cross_entropy(input, target, o);
}

std::string CrossEntropyLoss::describe() const {
  std::string s = detail::concat("CrossEntropyLoss(reduction=", reduction_name(options.reduction_));
  if (options.ignore_index_ != -100) s += detail::concat(", ignore_index=", options.ignore_index_);
  if (options.label_smoothing_ != 0.0) s += detail::concat(", label_smoothing=", options.label_smoothing_);
  if (weight.defined()) s += ", weighted";
  return s + ")";
}

NLLLoss::NLLLoss(const NLLLossOptions& opts) : options(opts) {
  weight = register_buffer("weight", opts.weight_.defined() ? opts.weight_.detach() : Tensor());
}

Tensor NLLLoss::forward(const Tensor& input, const Tensor& target) {
  auto scope = forward_scope();
  CrossEntropyOptions o;
  o.reduction = options.reduction_;
  o.ignore_index = options.ignore_index_;
  o.weight = weight;
  return nll_loss(input, target, o);
}

std::string NLLLoss::describe() const {
  std::string s = detail::concat("NLLLoss(reduction=", reduction_name(options.reduction_));
  if (options.ignore_index_ != -100) s += detail::concat(", ignore_index=", options.ignore_index_);
  if (weight.defined()) s += ", weighted";
  return s + ")";
}

Tensor MSELoss::forward(const Tensor& input, const Tensor& target) {
  auto scope = forward_scope();
  return mse_loss(input, target, options.reduction_);
}
std::string MSELoss::describe() const { return detail::concat("MSELoss(reduction=", reduction_name(options.reduction_), ")"); }

Tensor L1Loss::forward(const Tensor& input, const Tensor& target) {
  auto scope = forward_scope();
  return l1_loss(input, target, options.reduction_);
}
std::string L1Loss::describe() const { return detail::concat("L1Loss(reduction=", reduction_name(options.reduction_), ")"); }

SmoothL1Loss::SmoothL1Loss(const SmoothL1LossOptions& opts) : options(opts) {
  MINIDL_CHECK(opts.beta_ >= 0, "SmoothL1Loss", "beta must not be negative, got ", opts.beta_);
}

Tensor SmoothL1Loss::forward(const Tensor& input, const Tensor& target) {
  auto scope = forward_scope();
  return smooth_l1_loss(input, target, options.reduction_, options.beta_);
}
std::string SmoothL1Loss::describe() const {
  std::string s = detail::concat("SmoothL1Loss(reduction=", reduction_name(options.reduction_));
  if (options.beta_ != 1.0) s += detail::concat(", beta=", options.beta_);
  return s + ")";
}

HuberLoss::HuberLoss(const HuberLossOptions& opts) : options(opts) {
  MINIDL_CHECK(opts.delta_ > 0, "HuberLoss", "delta must be positive, got ", opts.delta_);
}

Tensor HuberLoss::forward(const Tensor& input, const Tensor& target) {
  auto scope = forward_scope();
  return huber_loss(input, target, options.reduction_, options.delta_);
}
std::string HuberLoss::describe() const {
  std::string s = detail::concat("HuberLoss(reduction=", reduction_name(options.reduction_));
  if (options.delta_ != 1.0) s += detail::concat(", delta=", options.delta_);
  return s + ")";
}

Tensor KLDivLoss::forward(const Tensor& input, const Tensor& target) {
  auto scope = forward_scope();
  return kl_div(input, target, options.reduction_, options.log_target_);
}
std::string KLDivLoss::describe() const {
  return detail::concat("KLDivLoss(reduction=", reduction_name(options.reduction_),
                        options.log_target_ ? ", log_target=true)" : ")");
}

BCELoss::BCELoss(const BCELossOptions& opts) : options(opts) {
  MINIDL_CHECK(!opts.pos_weight_.defined(), "BCELoss", "pos_weight is only supported by BCEWithLogitsLoss");
  weight = register_buffer("weight", opts.weight_.defined() ? opts.weight_.detach() : Tensor());
}

Tensor BCELoss::forward(const Tensor& input, const Tensor& target) {
  auto scope = forward_scope();
  if (!weight.defined()) return binary_cross_entropy(input, target, options.reduction_);
  return weighted("BCELoss", binary_cross_entropy(input, target, Reduction::None), weight, options.reduction_);
}
std::string BCELoss::describe() const {
  return detail::concat("BCELoss(reduction=", reduction_name(options.reduction_), weight.defined() ? ", weighted)" : ")");
}

BCEWithLogitsLoss::BCEWithLogitsLoss(const BCELossOptions& opts) : options(opts) {
  weight = register_buffer("weight", opts.weight_.defined() ? opts.weight_.detach() : Tensor());
  pos_weight = register_buffer("pos_weight", opts.pos_weight_.defined() ? opts.pos_weight_.detach() : Tensor());
}

Tensor BCEWithLogitsLoss::forward(const Tensor& input, const Tensor& target) {
  auto scope = forward_scope();
  if (!weight.defined()) return binary_cross_entropy_with_logits(input, target, options.reduction_, pos_weight);
  return weighted("BCEWithLogitsLoss", binary_cross_entropy_with_logits(input, target, Reduction::None, pos_weight), weight,
                  options.reduction_);
}
std::string BCEWithLogitsLoss::describe() const {
  std::string s = detail::concat("BCEWithLogitsLoss(reduction=", reduction_name(options.reduction_));
  if (weight.defined()) s += ", weighted";
  if (pos_weight.defined()) s += ", pos_weight";
  return s + ")";
}

}  // namespace minidl::nn
