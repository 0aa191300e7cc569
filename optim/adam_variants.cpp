// optim::Adamax, optim::NAdam and optim::RAdam: options, validation and the steps, in element-wise
// ops on the detached parameter and state tensors (torch.optim's single-tensor form, op for op).
#include "optim/adam_variants.h"

#include <cmath>

#include "framework/error.h"
#include "ops/ops.h"
#include "optim/param_update.h"

namespace minidl::optim {

using detail::decay_square_into;
using detail::effective_grad;
using detail::state_buffer;

Json NAdamOptions::to_json() const {
  Json j = MomentOptionsBase::to_json();
  j["momentum_decay"] = momentum_decay_;
  j["decoupled_weight_decay"] = decoupled_weight_decay_;
  return j;
}
void NAdamOptions::from_json(const Json& j) {
  MomentOptionsBase::from_json(j);
  momentum_decay_ = j.get("momentum_decay", momentum_decay_);
  decoupled_weight_decay_ = j.get("decoupled_weight_decay", decoupled_weight_decay_);
}

Json RAdamOptions::to_json() const {
  Json j = MomentOptionsBase::to_json();
  j["decoupled_weight_decay"] = decoupled_weight_decay_;
  return j;
}
void RAdamOptions::from_json(const Json& j) {
  MomentOptionsBase::from_json(j);
  decoupled_weight_decay_ = j.get("decoupled_weight_decay", decoupled_weight_decay_);
}

namespace {
// The gradient the step uses; decoupled weight decay shrinks the parameter itself first (AdamW's
// form), L2 adds weight_decay * p to the gradient.
Tensor decayed_grad(const Tensor& param, const Tensor& p, double lr, double weight_decay, bool decoupled, bool maximize) {
  if (decoupled && weight_decay != 0.0) p.mul_(1.0 - lr * weight_decay);
  return effective_grad(param, p, maximize, decoupled ? 0.0 : weight_decay);
}

// m = beta1 m + (1 - beta1) g (torch's mul_(beta1).add_(g, alpha=1 - beta1)).
void decay_into(const Tensor& m, const Tensor& g, double beta1) {
  m.mul_(beta1);
  m.add_(g, 1.0 - beta1);
}

// scalar / t element-wise, one rounding (torch's Python `number / tensor`).
Tensor scalar_over(double scalar, const Tensor& t) {
  return div(full({}, scalar, TensorOptions(t.dtype()).device(t.device())), t);
}
}  // namespace

Adamax::Adamax(std::vector<ParamGroup> groups, const AdamaxOptions& defaults)
    : Optimizer("Adamax", std::move(groups), defaults.clone()) {
  for (const auto& g : param_groups()) validate_moment_options("Adamax", options_of<AdamaxOptions>(g));
}

void Adamax::step() {
  detail::for_each_update<AdamaxOptions>(*this, [&](const auto& o, const Tensor& param, const Tensor& p, ParamState& st) {
    const auto [beta1, beta2] = o.betas_;
    const Tensor g = effective_grad(param, p, o.maximize_, o.weight_decay_);
    Tensor exp_avg = state_buffer(st, "exp_avg", p, 0.0);
    Tensor exp_inf = state_buffer(st, "exp_inf", p, 0.0);
    decay_into(exp_avg, g, beta1);
    exp_inf.mul_(beta2);
    exp_inf.copy_(maximum(exp_inf, add(abs(g), o.eps_)));
    const double clr = o.lr_ / (1.0 - std::pow(beta1, static_cast<double>(st.step)));
    p.add_(div(exp_avg, exp_inf), -clr);
  });
}

NAdam::NAdam(std::vector<ParamGroup> groups, const NAdamOptions& defaults)
    : Optimizer("NAdam", std::move(groups), defaults.clone()) {
  for (const auto& g : param_groups()) {
    const auto& o = options_of<NAdamOptions>(g);
    validate_moment_options("NAdam", o);
    MINIDL_CHECK(o.momentum_decay_ >= 0.0, "NAdam", "Invalid momentum_decay value: ", o.momentum_decay_);
  }
}

void NAdam::step() {
  detail::for_each_update<NAdamOptions>(*this, [&](const auto& o, const Tensor& param, const Tensor& p, ParamState& st) {
    const auto [beta1, beta2] = o.betas_;
    const Tensor g = decayed_grad(param, p, o.lr_, o.weight_decay_, o.decoupled_weight_decay_, o.maximize_);
    const double t = static_cast<double>(st.step);
    const double bias_correction2 = 1.0 - std::pow(beta2, t);
    const double mu = beta1 * (1.0 - 0.5 * std::pow(0.96, t * o.momentum_decay_));
    const double mu_next = beta1 * (1.0 - 0.5 * std::pow(0.96, (t + 1.0) * o.momentum_decay_));
    // PyTorch keeps the product as a 0-dim f32 tensor: every factor rounds to f32.
    const Tensor* found = st.buffers.find("mu_product");
    Tensor mu_product_buffer = found ? *found : state_buffer(st, "mu_product", full({}, 1.0, DType::F32), 1.0);
    const float mu_product = static_cast<float>(mu_product_buffer.item()) * static_cast<float>(mu);
    mu_product_buffer.fill_(mu_product);
    const double mu_product_next = static_cast<double>(mu_product) * mu_next;
    Tensor exp_avg = state_buffer(st, "exp_avg", p, 0.0);
    Tensor exp_avg_sq = state_buffer(st, "exp_avg_sq", p, 0.0);
    decay_into(exp_avg, g, beta1);
    decay_square_into(exp_avg_sq, g, beta2);
    const Tensor denom = add(sqrt(div(exp_avg_sq, bias_correction2)), o.eps_);
    p.add_(div(g, denom), -o.lr_ * (1.0 - mu) / (1.0 - static_cast<double>(mu_product)));
    p.add_(div(exp_avg, denom), (-o.lr_ * mu_next) / (1.0 - mu_product_next));
  });
}

RAdam::RAdam(std::vector<ParamGroup> groups, const RAdamOptions& defaults)
    : Optimizer("RAdam", std::move(groups), defaults.clone()) {
  for (const auto& g : param_groups()) validate_moment_options("RAdam", options_of<RAdamOptions>(g));
}

void RAdam::step() {
  detail::for_each_update<RAdamOptions>(*this, [&](const auto& o, const Tensor& param, const Tensor& p, ParamState& st) {
    const auto [beta1, beta2] = o.betas_;
    const Tensor g = decayed_grad(param, p, o.lr_, o.weight_decay_, o.decoupled_weight_decay_, o.maximize_);
    const double t = static_cast<double>(st.step);
    Tensor exp_avg = state_buffer(st, "exp_avg", p, 0.0);
    Tensor exp_avg_sq = state_buffer(st, "exp_avg_sq", p, 0.0);
    decay_into(exp_avg, g, beta1);
    decay_square_into(exp_avg_sq, g, beta2);
    const double bias_correction1 = 1.0 - std::pow(beta1, t), bias_correction2 = 1.0 - std::pow(beta2, t);
    const Tensor corrected = div(exp_avg, bias_correction1);
    // The length of the approximated simple moving average, and its limit.
    const double rho_inf = 2.0 / (1.0 - beta2) - 1.0;
    const double rho_t = rho_inf - 2.0 * t * std::pow(beta2, t) / bias_correction2;
    if (rho_t > 5.0) {
      const double rect =
          std::sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t));
      const Tensor adaptive_lr = scalar_over(std::sqrt(bias_correction2), add(sqrt(exp_avg_sq), o.eps_));
      p.add_(mul(mul(mul(corrected, o.lr_), adaptive_lr), rect), -1.0);
    } else {
      p.add_(mul(corrected, o.lr_), -1.0);
    }
  });
}

}  // namespace minidl::optim
