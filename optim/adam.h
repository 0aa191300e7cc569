// optim::Adam and optim::AdamW, exactly torch.optim.Adam / AdamW (single-tensor form):
//   step += 1
//   AdamW: p = p * (1 - lr * weight_decay)       Adam: g = g + weight_decay * p
//   m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
//   v_used = amsgrad ? (v_max = max(v_max, v)) : v
//   denom = sqrt(v_used) / sqrt(1 - beta2^step) + eps       (eps added after the bias correction)
//   p = p - (lr / (1 - beta1^step)) * m / denom
// State per parameter: "exp_avg", "exp_avg_sq" (and "max_exp_avg_sq" with amsgrad) in the
// parameter's dtype, and the step count.
#pragma once
#include <utility>

#include "optim/optimizer.h"

namespace minidl::optim {

// The hyper-parameters Adam and AdamW share; Derived is the concrete options type, so chained
// setters keep it.
template <class Derived>
struct AdamOptionsBase : OptimizerOptions {
  std::pair<double, double> betas_ = {0.9, 0.999};  // decay rates of the first and second moments
  double eps_ = 1e-8;                               // added to the denominator
  double weight_decay_ = 0.0;                       // L2 (Adam) or decoupled (AdamW) weight decay
  bool amsgrad_ = false;                            // use the maximum of past second moments
  bool maximize_ = false;                           // maximize the objective instead of minimizing

  Derived& lr(double v) { lr_ = v; return self(); }
  Derived& betas(std::pair<double, double> v) { betas_ = v; return self(); }
  Derived& eps(double v) { eps_ = v; return self(); }
  Derived& weight_decay(double v) { weight_decay_ = v; return self(); }
  Derived& amsgrad(bool v) { amsgrad_ = v; return self(); }
  Derived& maximize(bool v) { maximize_ = v; return self(); }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<Derived>(self()); }
  Json to_json() const override {
    Json j = Json::object();
    j["lr"] = lr_;
    j["betas"] = Json::array({betas_.first, betas_.second});
    j["eps"] = eps_;
    j["weight_decay"] = weight_decay_;
    j["amsgrad"] = amsgrad_;
    j["maximize"] = maximize_;
    return j;
  }
  void from_json(const Json& j) override {
    lr_ = j.get("lr", lr_);
    if (const Json* b = j.find("betas")) betas_ = {(*b)[0].as_double(), (*b)[1].as_double()};
    eps_ = j.get("eps", eps_);
    weight_decay_ = j.get("weight_decay", weight_decay_);
    amsgrad_ = j.get("amsgrad", amsgrad_);
    maximize_ = j.get("maximize", maximize_);
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
  const Derived& self() const { return static_cast<const Derived&>(*this); }
};

struct AdamOptions : AdamOptionsBase<AdamOptions> {
  AdamOptions(double lr = 1e-3) { lr_ = lr; }  // NOLINT: implicit, as libtorch
};

// AdamW's defaults differ from Adam's only in weight_decay = 1e-2 (PyTorch).
struct AdamWOptions : AdamOptionsBase<AdamWOptions> {
  AdamWOptions(double lr = 1e-3) {  // NOLINT
    lr_ = lr;
    weight_decay_ = 1e-2;
  }
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults = {});
  Adam(std::vector<Tensor> params, const AdamOptions& defaults)
      : Adam(single_group(std::move(params)), defaults) {}
  void step() override;
};

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults = {});
  AdamW(std::vector<Tensor> params, const AdamWOptions& defaults)
      : AdamW(single_group(std::move(params)), defaults) {}
  void step() override;
};

}  // namespace minidl::optim
