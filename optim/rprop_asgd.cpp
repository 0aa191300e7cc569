#include "optim/rprop_asgd.h"

#include <algorithm>
#include <cmath>

#include "framework/error.h"
#include "ops/ops.h"
#include "optim/param_update.h"

namespace minidl::optim {

using detail::effective_grad;
using detail::state_buffer;

// ---------------------------------------------------------------- Rprop

Json RpropOptions::to_json() const {
  Json j = Json::object();
  j["lr"] = lr_;
  j["etas"] = Json::array_of(std::vector<double>{etaminus_, etaplus_});
  j["step_sizes"] = Json::array_of(std::vector<double>{step_size_min_, step_size_max_});
  j["maximize"] = maximize_;
  return j;
}

void RpropOptions::from_json(const Json& j) {
  lr_ = j.get("lr", lr_);
  if (const Json* e = j.find("etas")) {
    const std::vector<double> v = e->as_vector<double>();
    MINIDL_CHECK(v.size() == 2, "Rprop", "etas must hold 2 values, got ", v.size());
    etaminus_ = v[0], etaplus_ = v[1];
  }
  if (const Json* s = j.find("step_sizes")) {
    const std::vector<double> v = s->as_vector<double>();
    MINIDL_CHECK(v.size() == 2, "Rprop", "step_sizes must hold 2 values, got ", v.size());
    step_size_min_ = v[0], step_size_max_ = v[1];
  }
  maximize_ = j.get("maximize", maximize_);
}

Rprop::Rprop(std::vector<ParamGroup> groups, const RpropOptions& defaults)
    : Optimizer("Rprop", std::move(groups), defaults.clone()) {
  for (const auto& g : param_groups()) {
    const auto& o = options_of<RpropOptions>(g);
    MINIDL_CHECK(o.lr_ >= 0.0, "Rprop", "Invalid learning rate: ", o.lr_);
    MINIDL_CHECK(0.0 < o.etaminus_ && o.etaminus_ < 1.0 && 1.0 < o.etaplus_, "Rprop", "Invalid eta values: ", o.etaminus_,
                 ", ", o.etaplus_);
    MINIDL_CHECK(o.step_size_min_ <= o.step_size_max_, "Rprop", "Invalid step sizes: ", o.step_size_min_, ", ",
                 o.step_size_max_);
  }
}

void Rprop::step() {
  detail::for_each_update<RpropOptions>(*this, [&](const auto& o, const Tensor& param, const Tensor& p, ParamState& st) {
    const Tensor g = effective_grad(param, p, o.maximize_, 0.0);
    Tensor prev = state_buffer(st, "prev", p, 0.0);
    Tensor step_size = state_buffer(st, "step_size", p, o.lr_);
    const Tensor agreement = sign(mul(g, prev));
    const Tensor flipped = lt(agreement, 0.0);
    const Tensor factor = where(gt(agreement, 0.0), full_like(p, o.etaplus_),
                                where(flipped, full_like(p, o.etaminus_), ones_like(p)));
    step_size.mul_(factor);
    step_size.copy_(clamp(step_size, o.step_size_min_, o.step_size_max_));
    // Where the sign flipped the step is skipped and the flip forgotten (prev = 0 there).
    const Tensor taken = where(flipped, zeros_like(g), g);
    p.add_(mul(sign(taken), step_size), -1.0);
    prev.copy_(taken);
  });
}

// ---------------------------------------------------------------- ASGD

Json ASGDOptions::to_json() const {
  Json j = Json::object();
  j["lr"] = lr_;
  j["lambd"] = lambd_;
  j["alpha"] = alpha_;
  j["t0"] = t0_;
  j["weight_decay"] = weight_decay_;
  j["maximize"] = maximize_;
  return j;
}

void ASGDOptions::from_json(const Json& j) {
  lr_ = j.get("lr", lr_);
  lambd_ = j.get("lambd", lambd_);
  alpha_ = j.get("alpha", alpha_);
  t0_ = j.get("t0", t0_);
  weight_decay_ = j.get("weight_decay", weight_decay_);
  maximize_ = j.get("maximize", maximize_);
}

ASGD::ASGD(std::vector<ParamGroup> groups, const ASGDOptions& defaults)
    : Optimizer("ASGD", std::move(groups), defaults.clone()) {
  for (const auto& g : param_groups()) {
    const auto& o = options_of<ASGDOptions>(g);
    MINIDL_CHECK(o.lr_ >= 0.0, "ASGD", "Invalid learning rate: ", o.lr_);
    MINIDL_CHECK(o.weight_decay_ >= 0.0, "ASGD", "Invalid weight_decay value: ", o.weight_decay_);
  }
}

void ASGD::step() {
  detail::for_each_update<ASGDOptions>(*this, [&](const auto& o, const Tensor& param, const Tensor& p, ParamState& st) {
    const Tensor g = effective_grad(param, p, o.maximize_, o.weight_decay_);
    // eta and mu are f32 0-dim tensors, as torch.tensor(value) makes them: their values are read
    // back rounded to f32.
    Tensor eta = state_buffer(st, "eta", full({}, 0.0, DType::F32), o.lr_);
    Tensor mu = state_buffer(st, "mu", full({}, 0.0, DType::F32), 1.0);
    Tensor ax = state_buffer(st, "ax", p, 0.0);
    const double eta_value = eta.item(), mu_value = mu.item();
    p.mul_(1.0 - o.lambd_ * eta_value);
    p.add_(g, -eta_value);
    if (mu_value != 1.0) ax.add_(mul(sub(p, ax), mu_value));
    else ax.copy_(p);
    const double t = static_cast<double>(st.step);
    eta.fill_(o.lr_ / std::pow(1.0 + o.lambd_ * o.lr_ * t, o.alpha_));
    mu.fill_(1.0 / std::max(1.0, t - o.t0_));
  });
}

}  // namespace minidl::optim
