// optim::SGD: one fused pass per parameter on CPU; tensor ops elsewhere.
#include "optim/sgd.h"

#include <type_traits>

#include "framework/grad_mode.h"
#include "framework/error.h"
#include "ops/ops.h"
#include "optim/fused.h"

namespace minidl::optim {

Json SGDOptions::to_json() const {
  Json j = Json::object();
  j["lr"] = lr_;
  j["momentum"] = momentum_;
  j["dampening"] = dampening_;
  j["weight_decay"] = weight_decay_;
  j["nesterov"] = nesterov_;
  j["maximize"] = maximize_;
  return j;
}

void SGDOptions::from_json(const Json& j) {
  lr_ = j.get("lr", lr_);
  momentum_ = j.get("momentum", momentum_);
  dampening_ = j.get("dampening", dampening_);
  weight_decay_ = j.get("weight_decay", weight_decay_);
  nesterov_ = j.get("nesterov", nesterov_);
  maximize_ = j.get("maximize", maximize_);
}

namespace {
void validate(const SGDOptions& o) {
  MINIDL_CHECK(o.lr_ >= 0.0, "SGD", "Invalid learning rate: ", o.lr_);
  MINIDL_CHECK(o.momentum_ >= 0.0, "SGD", "Invalid momentum value: ", o.momentum_);
  MINIDL_CHECK(o.weight_decay_ >= 0.0, "SGD", "Invalid weight_decay value: ", o.weight_decay_);
  MINIDL_CHECK(!o.nesterov_ || (o.momentum_ > 0.0 && o.dampening_ == 0.0), "SGD",
               "Nesterov momentum requires a momentum and zero dampening");
}

// Calls f(std::true_type) or f(std::false_type): a loop-invariant flag becomes a constant, so each
// variant of the update loop is branch-free and vectorizes.
template <class F>
void with_flag(bool flag, F&& f) {
  if (flag) f(std::true_type{});
  else f(std::false_type{});
}

void sgd_fused(const Tensor& p, const Tensor& g, const Tensor& buf, bool first, const SGDOptions& o) {
  visit_floating(p.dtype(), "SGD", [&]<class T>() {
    using C = compute_t<T>;
    const C lr = static_cast<C>(o.lr_), wd = static_cast<C>(o.weight_decay_), mom = static_cast<C>(o.momentum_);
    const C keep = static_cast<C>(1.0 - o.dampening_);
    with_flag(o.maximize_, [&](auto maximize) {
    with_flag(o.weight_decay_ != 0.0, [&](auto use_wd) {
    with_flag(buf.defined(), [&](auto use_momentum) {
    with_flag(first, [&](auto first_step) {
    with_flag(o.nesterov_, [&](auto nesterov) {
      detail::fused_update<T>(p.numel(), detail::data_or_null<T>(g),
                              {detail::data_or_null<T>(p), detail::data_or_null<T>(buf), nullptr, nullptr},
                              [&](const C* __restrict gr, std::array<C*, 4> a, int64_t n) {
                                // Local copies: the stores below provably cannot change them.
                                const C k_lr = lr, k_wd = wd, k_mom = mom, k_keep = keep;
                                C* __restrict pp = a[0];
                                C* __restrict bb = a[1];
                                for (int64_t i = 0; i < n; ++i) {
                                  C d = maximize ? -gr[i] : gr[i];
                                  if constexpr (use_wd) d = d + k_wd * pp[i];
                                  if constexpr (use_momentum) {
                                    const C b = first_step ? d : bb[i] * k_mom + k_keep * d;
                                    bb[i] = b;
                                    d = nesterov ? d + k_mom * b : b;
                                  }
                                  pp[i] = pp[i] + (-k_lr) * d;
                                }
                              });
    }); }); }); }); });
  });
}

void sgd_ops(const Tensor& p, const Tensor& grad, Tensor& buf, bool first, const SGDOptions& o) {
  Tensor d = o.maximize_ ? neg(grad) : grad;
  if (o.weight_decay_ != 0.0) d = add(d, p, o.weight_decay_);
  if (o.momentum_ != 0.0) {
    if (first) {
      buf.copy_(d);
    } else {
      buf.mul_(o.momentum_);
      buf.add_(d, 1.0 - o.dampening_);
    }
    d = o.nesterov_ ? add(d, buf, o.momentum_) : buf;
  }
  p.add_(d, -o.lr_);
}
}  // namespace

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults)
    : Optimizer("SGD", std::move(groups), defaults.clone()) {
  for (const auto& g : param_groups()) validate(options_of<SGDOptions>(g));
}

void SGD::step() {
  NoGradGuard ng;
  for (const auto& group : param_groups()) {
    const auto& o = options_of<SGDOptions>(group);
    validate(o);
    for (const Tensor& param : group.params) {
      if (!param.grad().defined()) continue;
      const Tensor p = param.detach();
      Tensor g = param.grad().detach();
      if (g.dtype() != p.dtype()) g = g.to(p.dtype());
      ParamState& st = state(param);
      Tensor buf;
      bool first = false;
      if (o.momentum_ != 0.0) {
        if (const Tensor* b = st.buffers.find("momentum_buffer")) {
          buf = *b;
        } else {
          buf = empty(p.shape(), TensorOptions(p.dtype()).device(p.device()));
          st.buffers.set("momentum_buffer", buf);
          first = true;
        }
      }
      if (detail::fusable(p, g, {buf})) {
        sgd_fused(p, g, buf, first, o);
        p.bump_version();
      } else {
        sgd_ops(p, g, buf, first, o);
      }
      ++st.step;
    }
  }
}

}  // namespace minidl::optim
