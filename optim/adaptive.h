// optim::RMSprop, optim::Adagrad and optim::Adadelta, the per-element adaptive-rate optimizers,
// exactly torch.optim's single-tensor updates (defaults too).
// RMSprop (lr 1e-2, alpha 0.99, eps 1e-8):
//   g = grad (negated when maximize) + weight_decay * p
//   square_avg = alpha * square_avg + (1 - alpha) * g * g
//   centered: grad_avg = lerp(grad_avg, g, 1 - alpha); avg = sqrt(square_avg - grad_avg^2) + eps
//   else avg = sqrt(square_avg) + eps
//   momentum > 0: buf = momentum * buf + g / avg; p = p - lr * buf     else p = p - lr * g / avg
// Adagrad (lr 1e-2, lr_decay 0, eps 1e-10, initial_accumulator_value 0):
//   g = grad (negated when maximize) + weight_decay * p
//   clr = lr / (1 + (step - 1) * lr_decay);  sum = sum + g * g;  p = p - clr * g / (sqrt(sum) + eps)
// Adadelta (lr 1, rho 0.9, eps 1e-6):
//   g = grad (negated when maximize) + weight_decay * p
//   square_avg = rho * square_avg + (1 - rho) * g * g
//   delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g
//   acc_delta = rho * acc_delta + (1 - rho) * delta * delta;  p = p - lr * delta
// State per parameter (PyTorch's names): RMSprop "square_avg", "momentum_buffer" (momentum > 0),
// "grad_avg" (centered); Adagrad "sum" (created with the optimizer, as PyTorch's); Adadelta
// "square_avg", "acc_delta"; and the step.
// Unlike SGD and Adam these run as a few element-wise ops per parameter, not one fused foreach
// kernel (README: known gaps).
#pragma once
#include "optim/optimizer.h"

namespace minidl::optim {

struct RMSpropOptions : OptimizerOptions {
  double alpha_ = 0.99;        // smoothing constant of the squared-gradient average
  double eps_ = 1e-8;          // added to the denominator
  double weight_decay_ = 0.0;  // L2 penalty added to the gradient
  double momentum_ = 0.0;      // momentum factor
  bool centered_ = false;      // normalize by the estimated variance instead of the raw second moment
  bool maximize_ = false;

  RMSpropOptions(double lr = 1e-2) { lr_ = lr; }  // NOLINT: implicit, as libtorch
  RMSpropOptions& lr(double v) { lr_ = v; return *this; }
  RMSpropOptions& alpha(double v) { alpha_ = v; return *this; }
  RMSpropOptions& eps(double v) { eps_ = v; return *this; }
  RMSpropOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  RMSpropOptions& momentum(double v) { momentum_ = v; return *this; }
  RMSpropOptions& centered(bool v) { centered_ = v; return *this; }
  RMSpropOptions& maximize(bool v) { maximize_ = v; return *this; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<RMSpropOptions>(*this); }
  Json to_json() const override;
  void from_json(const Json& j) override;
};

class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& defaults = {});
  RMSprop(std::vector<Tensor> params, const RMSpropOptions& defaults) : RMSprop(single_group(std::move(params)), defaults) {}
  void step() override;
};

struct AdagradOptions : OptimizerOptions {
  double lr_decay_ = 0.0;
  double weight_decay_ = 0.0;
  double initial_accumulator_value_ = 0.0;  // the starting value of "sum"
  double eps_ = 1e-10;
  bool maximize_ = false;

  AdagradOptions(double lr = 1e-2) { lr_ = lr; }  // NOLINT: implicit, as libtorch
  AdagradOptions& lr(double v) { lr_ = v; return *this; }
  AdagradOptions& lr_decay(double v) { lr_decay_ = v; return *this; }
  AdagradOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  AdagradOptions& initial_accumulator_value(double v) { initial_accumulator_value_ = v; return *this; }
  AdagradOptions& eps(double v) { eps_ = v; return *this; }
  AdagradOptions& maximize(bool v) { maximize_ = v; return *this; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdagradOptions>(*this); }
  Json to_json() const override;
  void from_json(const Json& j) override;
};

class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<ParamGroup> groups, const AdagradOptions& defaults = {});
  Adagrad(std::vector<Tensor> params, const AdagradOptions& defaults) : Adagrad(single_group(std::move(params)), defaults) {}
  void step() override;
};

struct AdadeltaOptions : OptimizerOptions {
  double rho_ = 0.9;           // decay of the running averages
  double eps_ = 1e-6;          // inside both square roots
  double weight_decay_ = 0.0;  // L2 penalty added to the gradient
  bool maximize_ = false;

  AdadeltaOptions(double lr = 1.0) { lr_ = lr; }  // NOLINT: implicit, as libtorch
  AdadeltaOptions& lr(double v) { lr_ = v; return *this; }
  AdadeltaOptions& rho(double v) { rho_ = v; return *this; }
  AdadeltaOptions& eps(double v) { eps_ = v; return *this; }
  AdadeltaOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  AdadeltaOptions& maximize(bool v) { maximize_ = v; return *this; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdadeltaOptions>(*this); }
  Json to_json() const override;
  void from_json(const Json& j) override;
};

class Adadelta : public Optimizer {
 public:
  Adadelta(std::vector<ParamGroup> groups, const AdadeltaOptions& defaults = {});
  Adadelta(std::vector<Tensor> params, const AdadeltaOptions& defaults) : Adadelta(single_group(std::move(params)), defaults) {}
  void step() override;
};

}  // namespace minidl::optim
