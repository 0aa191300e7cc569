// Element-wise losses beside mse_loss and l1_loss (ops/loss.cpp), as torch.nn.functional:
// smooth_l1_loss, huber_loss, kl_div and gaussian_nll_loss. Each is an element-wise loss followed by
// a reduction. Autocast policy: FP32 on both devices (PyTorch's CPU and CUDA fp32 lists), none for
// gaussian_nll_loss (on neither list).
//
// All three are composed of existing ops, so they run wherever those have kernels (CUDA included).
// kl_div is differentiable through its parts, which gives PyTorch's gradients exactly (a NaN
// target gradient at a zero target probability too). smooth_l1 and huber compute their values
// from the difference d = input - target and record one node on d whose gradient is PyTorch's
// clamp form, written in differentiable ops (so second order works): the parts' own gradients
// would give 0 * inf = NaN at an infinite difference, where PyTorch's gradient is +-1 (or
// +-delta). The difference is an ordinary sub, so broadcasting and promotion are sub's.
#include <cmath>

#include "ops/loss_common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;

// Autocast policies of this family (the policy table is built from these rows).
namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kSmoothL1Loss{"smooth_l1_loss", P::FP32, P::FP32};
const amp::OpPolicy kHuberLoss{"huber_loss", P::FP32, P::FP32};
const amp::OpPolicy kKlDiv{"kl_div", P::FP32, P::FP32};
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::pointwise_loss_policies() { return {&kSmoothL1Loss, &kHuberLoss, &kKlDiv}; }

namespace {
// PyTorch's huber value of the difference d: c (z - c/2) with z = |d| and c = min(z, delta), which
// is 0.5 z^2 below delta and delta (z - 0.5 delta) from it on, each rounded as PyTorch's branch
// (z - 0.5 z is exact); NaN stays NaN, an infinite d gives inf. No autograd (d is detached).
Tensor huber_values(const Tensor& d, double delta) {
  const Tensor z = abs(d);
  const Tensor c = clamp(z, std::nullopt, delta);
  return mul(c, sub(z, c, 0.5));
}

// The loss of d under one node: value = huber_values(d, threshold) / scale, gradient
// g * clamp(d, -threshold, threshold) / scale (scale = beta for smooth_l1, 1 for huber).
Tensor huber_node(const char* node, const Tensor& d, double threshold, bool smooth_l1) {
  Tensor out;
  {
    NoGradGuard ng;
    out = huber_values(d.detach(), threshold);
    if (smooth_l1) out = div(out, threshold);
  }
  autograd::record(node, {d}, {out}, {d}, [threshold, smooth_l1](const TensorList& g, const TensorList& s) {
    // PyTorch's smooth_l1_loss_backward and huber_loss_backward.
    if (smooth_l1) return TensorList{mul(g[0], clamp(div(s[0], threshold), -1.0, 1.0))};
    return TensorList{mul(g[0], clamp(s[0], -threshold, threshold))};
  });
  return out;
}
}  // namespace

Tensor smooth_l1_loss(const Tensor& input_arg, const Tensor& target_arg, Reduction reduction, double beta) {
  amp::AutocastInputs in(kSmoothL1Loss, {input_arg, target_arg});
  const Tensor &input = in[0], &target = in[1];
  const char* op = "smooth_l1_loss";
  check_loss_pair(op, input, target);
  MINIDL_CHECK(beta >= 0, op, "does not support negative values for beta, got ", beta);
  warn_if_target_broadcasts(op, input, target);
  const Tensor d = sub(input, target);
  // beta = 0 is l1_loss, as PyTorch 2.x (its gradient at d = 0 is 0; 1.13's kernel gave -1).
  if (beta == 0.0) return apply_reduction(abs(d), reduction);
  return apply_reduction(huber_node("SmoothL1LossBackward", d, beta, true), reduction);
}

Tensor huber_loss(const Tensor& input_arg, const Tensor& target_arg, Reduction reduction, double delta) {
  amp::AutocastInputs in(kHuberLoss, {input_arg, target_arg});
  const Tensor &input = in[0], &target = in[1];
  const char* op = "huber_loss";
  check_loss_pair(op, input, target);
  MINIDL_CHECK(delta > 0, op, "does not support non-positive values for delta, got ", delta);
  warn_if_target_broadcasts(op, input, target);
  // PyTorch's huber_loss writes into a tensor like the input (unlike smooth_l1_loss and mse_loss,
  // which promote): an f32 input with an f64 target gives f32, computed in f64 and rounded once.
  Tensor loss = huber_node("HuberLossBackward", sub(input, target), delta, false);
  if (loss.dtype() != input.dtype()) loss = cast(loss, input.dtype());
  return apply_reduction(loss, reduction);
}

Tensor kl_div(const Tensor& input_arg, const Tensor& target_arg, KLDivReduction reduction, bool log_target) {
  amp::AutocastInputs in(kKlDiv, {input_arg, target_arg});
  const Tensor &input = in[0], &target = in[1];
  const char* op = "kl_div";
  check_defined(input, op, "input");
  check_defined(target, op, "target");
  MINIDL_CHECK(input.is_floating_point() && target.is_floating_point(), op,
               "Integral inputs not supported: input and target must be floating point, got ", input.meta_str(),
               " and ", target.meta_str());
  check_same_device(op, input, target);
  broadcast_shapes(input.shape(), target.shape(), op);  // an error names kl_div, not its mul
  Tensor loss;
  if (log_target) {
    loss = mul(exp(target), sub(target, input));
  } else {
    // xlogy(target, target): 0 where target == 0 (selected out, so 0 * log 0 = NaN never shows).
    const Tensor xlogx = where(eq(target, 0.0), zeros_like(target), mul(target, log(target)));
    loss = sub(xlogx, mul(target, input));
  }
  switch (reduction) {
    case KLDivReduction::None: return loss;
    case KLDivReduction::Sum: return sum(loss);
    case KLDivReduction::Mean:
      // PyTorch's warning for 'mean', in our names.
      warn("kl_div: reduction Mean divides the total loss by both the batch size and the support size. BatchMean "
           "divides only by the batch size, and aligns with the KL div math definition.");
      return mean(loss);
    case KLDivReduction::BatchMean:
      // PyTorch divides by the input's first dim (not the broadcast result's); a 0-dim input: the sum.
      return input.dim() == 0 ? sum(loss) : div(sum(loss), static_cast<double>(input.shape()[0]));
  }
  return loss;
}

namespace {
// max(var, eps) whose gradient passes to var unchanged: PyTorch clamps a clone of var in place
// under no_grad, so autograd sees the clone (identity) and the loss the clamped values.
Tensor clamped_variance(const Tensor& var, double eps) {
  Tensor out = clamp(var.detach(), eps, std::nullopt);
  autograd::record("GaussianNllVarianceClampBackward", {var}, {out}, {}, [](const TensorList& g, const TensorList&) {
    return TensorList{g[0]};
  });
  return out;
}
}  // namespace

Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var_arg, bool full, double eps,
                         Reduction reduction) {
  const char* op = "gaussian_nll_loss";
  check_defined(input, op, "input");
  check_defined(target, op, "target");
  check_defined(var_arg, op, "var");
  check_floating(op, input);
  check_floating(op, var_arg);
  Tensor var = var_arg;
  if (var.shape() != input.shape()) {
    const Shape lead(input.shape().begin(), input.shape().end() - (input.dim() > 0 ? 1 : 0));
    const bool one_short = input.dim() > 0 && var.shape() == lead;
    const bool last_one = input.dim() > 0 && var.dim() == input.dim() && var.size(-1) == 1 &&
                          Shape(var.shape().begin(), var.shape().end() - 1) == lead;
    MINIDL_CHECK(one_short || last_one, op, "var is of incorrect size: got ", shape_str(var.shape()), " for input ",
                 shape_str(input.shape()));
    if (one_short) var = var.unsqueeze(-1);
  }
  MINIDL_CHECK(!any(lt(var, 0.0)).item(), op, "var has negative entry/entries");
  const Tensor v = clamped_variance(var, eps);
  Tensor loss = mul(add(log(v), div(square(sub(input, target)), v)), 0.5);
  if (full) loss = add(loss, 0.5 * std::log(2.0 * M_PI));
  return apply_reduction(loss, reduction);
}

}  // namespace minidl
