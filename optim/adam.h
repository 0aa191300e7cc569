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

#include "optim/moment_options.h"
#include "optim/optimizer.h"

namespace minidl::optim {

// Adam and AdamW add amsgrad to the family's options.
template <class Derived>
struct AdamOptionsBase : MomentOptionsBase<Derived> {
  bool amsgrad_ = false;  // use the maximum of past second moments

  Derived& amsgrad(bool v) { amsgrad_ = v; return this->self(); }
  Json to_json() const override {
    Json j = MomentOptionsBase<Derived>::to_json();
    j["amsgrad"] = amsgrad_;
    return j;
  }
  void from_json(const Json& j) override {
    MomentOptionsBase<Derived>::from_json(j);
    amsgrad_ = j.get("amsgrad", amsgrad_);
  }
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
