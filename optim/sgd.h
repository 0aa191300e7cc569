// optim::SGD: stochastic gradient descent with momentum, dampening, Nesterov momentum and L2
// weight decay, exactly torch.optim.SGD's update:
//   d = grad (negated when maximize) + weight_decay * p
//   buf = d on the first step, else momentum * buf + (1 - dampening) * d
//   d = nesterov ? d + momentum * buf : buf          (when momentum != 0)
//   p = p - lr * d
#pragma once
#include "optim/optimizer.h"

namespace minidl::optim {

struct SGDOptions : OptimizerOptions {
  double momentum_ = 0.0;      // momentum factor
  double dampening_ = 0.0;     // dampening for momentum
  double weight_decay_ = 0.0;  // L2 penalty added to the gradient
  bool nesterov_ = false;      // Nesterov momentum (needs momentum > 0 and dampening 0)
  bool maximize_ = false;      // maximize the objective instead of minimizing

  SGDOptions(double lr = 1e-3) { lr_ = lr; }  // NOLINT: implicit, as libtorch's SGDOptions(lr)
  SGDOptions& lr(double v) { lr_ = v; return *this; }
  SGDOptions& momentum(double v) { momentum_ = v; return *this; }
  SGDOptions& dampening(double v) { dampening_ = v; return *this; }
  SGDOptions& weight_decay(double v) { weight_decay_ = v; return *this; }
  SGDOptions& nesterov(bool v) { nesterov_ = v; return *this; }
  SGDOptions& maximize(bool v) { maximize_ = v; return *this; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<SGDOptions>(*this); }
  Json to_json() const override;
  void from_json(const Json& j) override;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults = {});
  SGD(std::vector<Tensor> params, const SGDOptions& defaults)
      : SGD(single_group(std::move(params)), defaults) {}
  void step() override;
};

}  // namespace minidl::optim
