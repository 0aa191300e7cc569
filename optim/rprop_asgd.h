// optim::Rprop and optim::ASGD (torch.optim.Rprop, torch.optim.ASGD): two of torch.optim's
// element-wise optimizers outside the Adam and adaptive families, written in ops on the detached
// parameter and state tensors, as torch's single-tensor code.
//
// Rprop: only the gradient's sign counts. Each element's step size grows by etaplus while its
// gradient keeps its sign, shrinks by etaminus when it flips (and that step is skipped), and stays
// within step_sizes = (min, max); p -= sign(g) * step_size. State "prev", "step_size".
// ASGD: SGD with an eta decaying as lr / (1 + lambd lr t)^alpha and a decay of the parameter by
// (1 - lambd eta), keeping in "ax" the average of the iterates from step t0 on. As PyTorch, eta and
// mu (the averaging weight) are 0-dim f32 state tensors, "eta" and "mu".
#pragma once
#include <utility>

#include "optim/optimizer.h"

namespace minidl::optim {

struct RpropOptions : OptimizerOptions {
  double etaminus_ = 0.5, etaplus_ = 1.2;         // 0 < etaminus < 1 < etaplus
  double step_size_min_ = 1e-6, step_size_max_ = 50;
  bool maximize_ = false;

  RpropOptions(double lr = 1e-2) { lr_ = lr; }  // NOLINT: implicit, as libtorch
  RpropOptions& lr(double v) { lr_ = v; return *this; }
  RpropOptions& etas(double minus, double plus) { etaminus_ = minus; etaplus_ = plus; return *this; }
  RpropOptions& step_sizes(double min, double max) { step_size_min_ = min; step_size_max_ = max; return *this; }
  RpropOptions& maximize(bool v) { maximize_ = v; return *this; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<RpropOptions>(*this); }
  Json to_json() const override;
  void from_json(const Json& j) override;
};

class Rprop : public Optimizer {
 public:
  Rprop(std::vector<ParamGroup> groups, const RpropOptions& defaults = {});
  Rprop(std::vector<Tensor> params, const RpropOptions& defaults) : Rprop(single_group(std::move(params)), defaults) {}
  void step() override;
};

struct ASGDOptions : OptimizerOptions {
  double lambd_ = 1e-4;        // decay term
  double alpha_ = 0.75;        // power of eta's decay
  double t0_ = 1e6;            // the step from which the iterates are averaged
  double weight_decay_ = 0.0;  // L2 penalty added to the gradient
  bool maximize_ = false;

  ASGDOptions(double lr = 1e-2) { lr_ = lr; }  // NOLINT: implicit, as libtorch
  ASGDOptions& lr(double v) { lr_ = v; return *this; }
  ASGDOptions& lambd(double v) { lambd_ = v; return *this; }
  ASGDOptions& alpha(double v) { alpha_ = v; return *this; }
  ASGDOptions& t0(double v) { t0_ = v; return *this; }
  ASGDOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  ASGDOptions& maximize(bool v) { maximize_ = v; return *this; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<ASGDOptions>(*this); }
  Json to_json() const override;
  void from_json(const Json& j) override;
};

class ASGD : public Optimizer {
 public:
  ASGD(std::vector<ParamGroup> groups, const ASGDOptions& defaults = {});
  ASGD(std::vector<Tensor> params, const ASGDOptions& defaults) : ASGD(single_group(std::move(params)), defaults) {}
  void step() override;
  bool is_scalar_state(const std::string& buffer) const override { return buffer == "eta" || buffer == "mu"; }
};

}  // namespace minidl::optim
