// optim::Adam / AdamW: one fused pass per parameter on CPU; tensor ops elsewhere.
#include "optim/adam.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "framework/grad_mode.h"
#include "framework/error.h"
#include "ops/ops.h"
#include "optim/fused.h"

namespace minidl::optim {

namespace {
// The hyper-parameters of one step, with PyTorch's per-step scalars (computed in double, as
// Python floats).
struct AdamStep {
  double lr, beta1, beta2, eps, weight_decay;
  bool amsgrad, maximize, decoupled;
  double bias_correction1, bias_correction2_sqrt, step_size;
};

template <class O>
void validate(const char* name, const O& o) {
  MINIDL_CHECK(o.lr_ >= 0.0, name, "Invalid learning rate: ", o.lr_);
  MINIDL_CHECK(o.eps_ >= 0.0, name, "Invalid epsilon value: ", o.eps_);
  MINIDL_CHECK(o.betas_.first >= 0.0 && o.betas_.first < 1.0, name, "Invalid beta parameter at index 0: ", o.betas_.first);
  MINIDL_CHECK(o.betas_.second >= 0.0 && o.betas_.second < 1.0, name, "Invalid beta parameter at index 1: ",
               o.betas_.second);
  MINIDL_CHECK(o.weight_decay_ >= 0.0, name, "Invalid weight_decay value: ", o.weight_decay_);
}

// Calls f(std::true_type) or f(std::false_type): turns a loop-invariant flag into a constant so
// each variant of the update loop is branch-free and vectorizes.
template <class F>
void with_flag(bool flag, F&& f) {
  if (flag) f(std::true_type{});
  else f(std::false_type{});
}

void adam_fused(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const Tensor& vmax, const AdamStep& s) {
  visit_floating(p.dtype(), "Adam", [&]<class T>() {
    using C = compute_t<T>;
    using Array = Eigen::Array<C, Eigen::Dynamic, 1>;
    const C w1 = static_cast<C>(1.0 - s.beta1), beta2 = static_cast<C>(s.beta2), w2 = static_cast<C>(1.0 - s.beta2);
    const C wd = static_cast<C>(s.weight_decay), decay = static_cast<C>(1.0 - s.lr * s.weight_decay);
    const C bc2_sqrt = static_cast<C>(s.bias_correction2_sqrt), eps = static_cast<C>(s.eps);
    const C neg_step = static_cast<C>(-s.step_size);
    const bool l2 = !s.decoupled && s.weight_decay != 0.0;
    const bool lerp_low = std::fabs(1.0 - s.beta1) < 0.5;  // torch.lerp's two forms
    with_flag(s.maximize, [&](auto maximize) {
    with_flag(s.decoupled, [&](auto decoupled) {
    with_flag(l2, [&](auto use_l2) {
    with_flag(lerp_low, [&](auto low) {
    with_flag(vmax.defined(), [&](auto amsgrad) {
      detail::fused_update<T>(
          p.numel(), detail::data_or_null<T>(g),
          {detail::data_or_null<T>(p), detail::data_or_null<T>(m), detail::data_or_null<T>(v), detail::data_or_null<T>(vmax)},
          [&](const C* __restrict gr, std::array<C*, 4> a, int64_t n) {
            // Local copies: the compiler must see that the stores below cannot change them.
            const C k_w1 = w1, k_beta2 = beta2, k_w2 = w2, k_wd = wd, k_decay = decay, k_bc2 = bc2_sqrt, k_eps = eps,
                    k_step = neg_step;
            C* __restrict pp = a[0];
            C* __restrict mm = a[1];
            C* __restrict vv = a[2];
            C* __restrict vm = a[3];
            // Blocks of 256 stay in L1: one loop for the moments, a vectorized sqrt (Eigen: no errno,
            // so it vectorizes; correctly rounded like std::sqrt), one loop for the parameter.
            constexpr int64_t kBlock = 256;
            alignas(64) C mb[kBlock];
            alignas(64) C ub[kBlock];
            for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
              const int64_t len = std::min(kBlock, n - b0);
              for (int64_t j = 0; j < len; ++j) {
                const int64_t i = b0 + j;
                C gi = maximize ? -gr[i] : gr[i];
                C pi = pp[i];
                if constexpr (decoupled) pi = pi * k_decay;
                if constexpr (use_l2) gi = gi + k_wd * pi;
                const C mo = mm[i];
                const C mi = low ? mo + k_w1 * (gi - mo) : gi - (gi - mo) * (C(1) - k_w1);
                const C vi = vv[i] * k_beta2 + k_w2 * gi * gi;
                mm[i] = mi;
                vv[i] = vi;
                C used = vi;
                if constexpr (amsgrad) {
                  used = vm[i] > vi ? vm[i] : vi;
                  vm[i] = used;
                }
                pp[i] = pi;
                mb[j] = mi;
                ub[j] = used;
              }
              Eigen::Map<Array> u(ub, len);
              u = u.sqrt();
              for (int64_t j = 0; j < len; ++j) {
                const C denom = ub[j] / k_bc2 + k_eps;
                pp[b0 + j] = pp[b0 + j] + k_step * (mb[j] / denom);
              }
            }
          });
    }); }); }); }); });
  });
}

void adam_ops(const Tensor& p, const Tensor& grad, const Tensor& m, const Tensor& v, const Tensor& vmax,
              const AdamStep& s) {
  Tensor g = s.maximize ? neg(grad) : grad;
  if (s.decoupled) p.mul_(1.0 - s.lr * s.weight_decay);
  else if (s.weight_decay != 0.0) g = add(g, p, s.weight_decay);
  m.add_(sub(g, m), 1.0 - s.beta1);  // lerp
  v.mul_(s.beta2);
  v.add_(mul(g, g), 1.0 - s.beta2);
  Tensor used = v;
  if (vmax.defined()) {
    vmax.copy_(maximum(vmax, v));
    used = vmax;
  }
  Tensor denom = add(div(sqrt(used), s.bias_correction2_sqrt), s.eps);
  p.add_(div(m, denom), -s.step_size);
}

template <class O>
void adam_step(Optimizer& opt, bool decoupled) {
  NoGradGuard ng;
  for (const auto& group : opt.param_groups()) {
    const auto& o = static_cast<const O&>(*group.options);
    validate(opt.name().c_str(), o);
    for (const Tensor& param : group.params) {
      if (!param.grad().defined()) continue;
      const Tensor p = param.detach();
      Tensor g = param.grad().detach();
      if (g.dtype() != p.dtype()) g = g.to(p.dtype());
      ParamState& st = opt.state(param);
      if (!st.buffers.contains("exp_avg")) {
        st.buffers.set("exp_avg", zeros_like(p));
        st.buffers.set("exp_avg_sq", zeros_like(p));
      }
      if (o.amsgrad_ && !st.buffers.contains("max_exp_avg_sq")) st.buffers.set("max_exp_avg_sq", zeros_like(p));
      const Tensor m = st.buffers.at("exp_avg"), v = st.buffers.at("exp_avg_sq");
      const Tensor vmax = o.amsgrad_ ? st.buffers.at("max_exp_avg_sq") : Tensor();
      st.step += 1;
      AdamStep s{o.lr_, o.betas_.first, o.betas_.second, o.eps_, o.weight_decay_, o.amsgrad_, o.maximize_, decoupled,
                 0, 0, 0};
      const double step = static_cast<double>(st.step);
      s.bias_correction1 = 1.0 - std::pow(s.beta1, step);
      s.bias_correction2_sqrt = std::sqrt(1.0 - std::pow(s.beta2, step));
      s.step_size = s.lr / s.bias_correction1;
      if (detail::fusable(p, g, {m, v, vmax})) {
        adam_fused(p, g, m, v, vmax, s);
        p.bump_version();
      } else {
        adam_ops(p, g, m, v, vmax, s);
      }
    }
  }
}
}  // namespace

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults)
    : Optimizer("Adam", std::move(groups), defaults.clone()) {
  for (const auto& g : param_groups()) validate("Adam", options_of<AdamOptions>(g));
}
void Adam::step() { adam_step<AdamOptions>(*this, false); }

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults)
    : Optimizer("AdamW", std::move(groups), defaults.clone()) {
  for (const auto& g : param_groups()) validate("AdamW", options_of<AdamWOptions>(g));
}
void AdamW::step() { adam_step<AdamWOptions>(*this, true); }

}  // namespace minidl::optim
