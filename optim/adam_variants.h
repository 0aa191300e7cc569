// optim::Adamax, optim::NAdam and optim::RAdam, torch.optim's single-tensor updates (PyTorch 2.x's
// options: NAdam and RAdam take decoupled_weight_decay, all three maximize):
//   weight decay: decoupled ? p = p * (1 - lr * weight_decay) : g = g + weight_decay * p
// Adamax (lr 2e-3):  m = beta1 m + (1 - beta1) g;  u = max(beta2 u, |g| + eps)
//                    p = p - lr / (1 - beta1^t) * m / u
// NAdam (lr 2e-3, momentum_decay 4e-3):
//   mu_t = beta1 (1 - 0.5 * 0.96^(t * momentum_decay)),  mu_product = mu_product * mu_t (a 0-dim f32
//   buffer, as PyTorch's), m and v as Adam's, denom = sqrt(v / (1 - beta2^t)) + eps
//   p = p - lr (1 - mu_t) / (1 - mu_product) * g / denom
//         - lr mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / denom
// RAdam (lr 1e-3): m and v as Adam's, rho_inf = 2 / (1 - beta2) - 1,
//   rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t); with m_hat = m / (1 - beta1^t):
//   rho_t > 5: p = p - m_hat * lr * sqrt(1 - beta2^t) / (sqrt(v) + eps) * rect(rho_t)
//   else:      p = p - m_hat * lr
// State per parameter (PyTorch's names): "exp_avg" and "exp_inf" (Adamax), "exp_avg",
// "exp_avg_sq" (NAdam, RAdam), "mu_product" (NAdam), and the step. Element-wise ops per parameter,
// not one foreach kernel (README: known gaps).
#pragma once
#include <utility>

#include "optim/moment_options.h"
#include "optim/optimizer.h"

namespace minidl::optim {

struct AdamaxOptions : MomentOptionsBase<AdamaxOptions> {
  AdamaxOptions(double lr = 2e-3) { lr_ = lr; }  // NOLINT: implicit, as libtorch
};

struct NAdamOptions : MomentOptionsBase<NAdamOptions> {
  double momentum_decay_ = 4e-3;
  bool decoupled_weight_decay_ = false;  // NAdamW

  NAdamOptions(double lr = 2e-3) { lr_ = lr; }  // NOLINT
  NAdamOptions& momentum_decay(double v) { momentum_decay_ = v; return *this; }
  NAdamOptions& decoupled_weight_decay(bool v) { decoupled_weight_decay_ = v; return *this; }
  Json to_json() const override;
  void from_json(const Json& j) override;
};

struct RAdamOptions : MomentOptionsBase<RAdamOptions> {
  bool decoupled_weight_decay_ = false;

  RAdamOptions(double lr = 1e-3) { lr_ = lr; }  // NOLINT
  RAdamOptions& decoupled_weight_decay(bool v) { decoupled_weight_decay_ = v; return *this; }
  Json to_json() const override;
  void from_json(const Json& j) override;
};

class Adamax : public Optimizer {
 public:
  Adamax(std::vector<ParamGroup> groups, const AdamaxOptions& defaults = {});
  Adamax(std::vector<Tensor> params, const AdamaxOptions& defaults) : Adamax(single_group(std::move(params)), defaults) {}
  void step() override;
};

class NAdam : public Optimizer {
 public:
  NAdam(std::vector<ParamGroup> groups, const NAdamOptions& defaults = {});
  NAdam(std::vector<Tensor> params, const NAdamOptions& defaults) : NAdam(single_group(std::move(params)), defaults) {}
  void step() override;

 protected:
  bool is_scalar_state(const std::string& buffer) const override { return buffer == "mu_product"; }
};

class RAdam : public Optimizer {
 public:
  RAdam(std::vector<ParamGroup> groups, const RAdamOptions& defaults = {});
  RAdam(std::vector<Tensor> params, const RAdamOptions& defaults) : RAdam(single_group(std::move(params)), defaults) {}
  void step() override;
};

}  // namespace minidl::optim
