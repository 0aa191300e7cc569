// optim::RMSprop, optim::Adagrad and optim::Adadelta: options, validation and the steps, written in element-wise
// ops on the detached parameter and state tensors (torch.optim's single-tensor form, op for op).
#include "optim/adaptive.h"

#include "framework/error.h"
#include "ops/ops.h"
#include "optim/param_update.h"

namespace minidl::optim {

using detail::decay_square_into;
using detail::effective_grad;
using detail::state_buffer;

Json RMSpropOptions::to_json() const {
  Json j = Json::object();
  j["lr"] = lr_;
  j["alpha"] = alpha_;
  j["eps"] = eps_;
  j["weight_decay"] = weight_decay_;
  j["momentum"] = momentum_;
  j["centered"] = centered_;
  j["maximize"] = maximize_;
  return j;
}

void RMSpropOptions::from_json(const Json& j) {
  lr_ = j.get("lr", lr_);
  alpha_ = j.get("alpha", alpha_);
  eps_ = j.get("eps", eps_);
  weight_decay_ = j.get("weight_decay", weight_decay_);
  momentum_ = j.get("momentum", momentum_);
  centered_ = j.get("centered", centered_);
  maximize_ = j.get("maximize", maximize_);
}

Json AdagradOptions::to_json() const {
  Json j = Json::object();
  j["lr"] = lr_;
  j["lr_decay"] = lr_decay_;
  j["weight_decay"] = weight_decay_;
  j["initial_accumulator_value"] = initial_accumulator_value_;
  j["eps"] = eps_;
  j["maximize"] = maximize_;
  return j;
}

void AdagradOptions::from_json(const Json& j) {
  lr_ = j.get("lr", lr_);
  lr_decay_ = j.get("lr_decay", lr_decay_);
  weight_decay_ = j.get("weight_decay", weight_decay_);
  initial_accumulator_value_ = j.get("initial_accumulator_value", initial_accumulator_value_);
  eps_ = j.get("eps", eps_);
  maximize_ = j.get("maximize", maximize_);
}

Json AdadeltaOptions::to_json() const {
  Json j = Json::object();
  j["lr"] = lr_;
  j["rho"] = rho_;
  j["eps"] = eps_;
  j["weight_decay"] = weight_decay_;
  j["maximize"] = maximize_;
  return j;
}

void AdadeltaOptions::from_json(const Json& j) {
  lr_ = j.get("lr", lr_);
  rho_ = j.get("rho", rho_);
  eps_ = j.get("eps", eps_);
  weight_decay_ = j.get("weight_decay", weight_decay_);
  maximize_ = j.get("maximize", maximize_);
}

namespace {
void validate(const AdadeltaOptions& o) {
  MINIDL_CHECK(o.lr_ >= 0.0, "Adadelta", "Invalid learning rate: ", o.lr_);
  MINIDL_CHECK(o.rho_ >= 0.0 && o.rho_ <= 1.0, "Adadelta", "Invalid rho value: ", o.rho_);
  MINIDL_CHECK(o.eps_ >= 0.0, "Adadelta", "Invalid epsilon value: ", o.eps_);
  MINIDL_CHECK(o.weight_decay_ >= 0.0, "Adadelta", "Invalid weight_decay value: ", o.weight_decay_);
}
void validate(const RMSpropOptions& o) {
  MINIDL_CHECK(o.lr_ >= 0.0, "RMSprop", "Invalid learning rate: ", o.lr_);
  MINIDL_CHECK(o.eps_ >= 0.0, "RMSprop", "Invalid epsilon value: ", o.eps_);
  MINIDL_CHECK(o.momentum_ >= 0.0, "RMSprop", "Invalid momentum value: ", o.momentum_);
  MINIDL_CHECK(o.weight_decay_ >= 0.0, "RMSprop", "Invalid weight_decay value: ", o.weight_decay_);
  MINIDL_CHECK(o.alpha_ >= 0.0, "RMSprop", "Invalid alpha value: ", o.alpha_);
}
void validate(const AdagradOptions& o) {
  MINIDL_CHECK(o.lr_ >= 0.0, "Adagrad", "Invalid learning rate: ", o.lr_);
  MINIDL_CHECK(o.lr_decay_ >= 0.0, "Adagrad", "Invalid lr_decay value: ", o.lr_decay_);
  MINIDL_CHECK(o.weight_decay_ >= 0.0, "Adagrad", "Invalid weight_decay value: ", o.weight_decay_);
  MINIDL_CHECK(o.initial_accumulator_value_ >= 0.0, "Adagrad", "Invalid initial_accumulator_value value: ",
               o.initial_accumulator_value_);
  MINIDL_CHECK(o.eps_ >= 0.0, "Adagrad", "Invalid epsilon value: ", o.eps_);
}

}  // namespace

RMSprop::RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& defaults)
    : Optimizer("RMSprop", std::move(groups), defaults.clone()) {
  for (const auto& g : param_groups()) validate(options_of<RMSpropOptions>(g));
}

void RMSprop::step() {
  detail::for_each_update<RMSpropOptions>(*this, [&](const auto& o, const Tensor& param, const Tensor& p, ParamState& st) {
    const Tensor g = effective_grad(param, p, o.maximize_, o.weight_decay_);
    Tensor square_avg = state_buffer(st, "square_avg", p, 0.0);
    decay_square_into(square_avg, g, o.alpha_);
    Tensor avg;
    if (o.centered_) {
      Tensor grad_avg = state_buffer(st, "grad_avg", p, 0.0);
      grad_avg.add_(sub(g, grad_avg), 1.0 - o.alpha_);  // lerp(grad_avg, g, 1 - alpha)
      avg = add(sqrt(sub(square_avg, mul(grad_avg, grad_avg))), o.eps_);
    } else {
      avg = add(sqrt(square_avg), o.eps_);
    }
    if (o.momentum_ > 0.0) {
      Tensor buf = state_buffer(st, "momentum_buffer", p, 0.0);
      buf.mul_(o.momentum_);
      buf.add_(div(g, avg));
      p.add_(buf, -o.lr_);
    } else {
      p.add_(div(g, avg), -o.lr_);
    }
  });
}

Adagrad::Adagrad(std::vector<ParamGroup> groups, const AdagradOptions& defaults)
    : Optimizer("Adagrad", std::move(groups), defaults.clone()) {
  // As PyTorch, the accumulator of every parameter exists from the start (step 0).
  NoGradGuard ng;
  for (const auto& g : param_groups()) {
    const auto& o = options_of<AdagradOptions>(g);
    validate(o);
    for (const Tensor& param : g.params) state_buffer(state(param), "sum", param.detach(), o.initial_accumulator_value_);
  }
}

void Adagrad::step() {
  detail::for_each_update<AdagradOptions>(*this, [&](const auto& o, const Tensor& param, const Tensor& p, ParamState& st) {
    const Tensor g = effective_grad(param, p, o.maximize_, o.weight_decay_);
    const double clr = o.lr_ / (1.0 + static_cast<double>(st.step - 1) * o.lr_decay_);
    Tensor sum_sq = state_buffer(st, "sum", p, o.initial_accumulator_value_);
    sum_sq.add_(mul(g, g));
    p.add_(div(g, add(sqrt(sum_sq), o.eps_)), -clr);
  });
}

Adadelta::Adadelta(std::vector<ParamGroup> groups, const AdadeltaOptions& defaults)
    : Optimizer("Adadelta", std::move(groups), defaults.clone()) {
  for (const auto& g : param_groups()) validate(options_of<AdadeltaOptions>(g));
}

void Adadelta::step() {
  detail::for_each_update<AdadeltaOptions>(*this, [&](const auto& o, const Tensor& param, const Tensor& p, ParamState& st) {
    const Tensor g = effective_grad(param, p, o.maximize_, o.weight_decay_);
    Tensor square_avg = state_buffer(st, "square_avg", p, 0.0);
    Tensor acc_delta = state_buffer(st, "acc_delta", p, 0.0);
    decay_square_into(square_avg, g, o.rho_);
    const Tensor delta = mul(div(sqrt(add(acc_delta, o.eps_)), sqrt(add(square_avg, o.eps_))), g);
    decay_square_into(acc_delta, delta, o.rho_);
    p.add_(delta, -o.lr_);
  });
}

}  // namespace minidl::optim
