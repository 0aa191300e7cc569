// optim::Adam / AdamW: validation and the step, one foreach Adam call per group (ops/foreach.h).
#include "optim/adam.h"

#include "framework/grad_mode.h"
#include "framework/error.h"
#include "ops/foreach.h"
#include "ops/ops.h"

namespace minidl::optim {

namespace {
template <class O>
void adam_step(Optimizer& opt, bool decoupled) {
  NoGradGuard ng;
  for (const auto& group : opt.param_groups()) {
    const auto& o = static_cast<const O&>(*group.options);
    const AdamHyper h{o.lr_, o.betas_.first, o.betas_.second, o.eps_, o.weight_decay_, o.amsgrad_, o.maximize_, decoupled};
    AdamLists lists;
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
      st.step += 1;
      lists.params.push_back(p);
      lists.grads.push_back(g);
      lists.exp_avg.push_back(st.buffers.at("exp_avg"));
      lists.exp_avg_sq.push_back(st.buffers.at("exp_avg_sq"));
      if (o.amsgrad_) lists.max_exp_avg_sq.push_back(st.buffers.at("max_exp_avg_sq"));
      lists.steps.push_back(st.step);
    }
    foreach_adam_(lists, h);
  }
}
}  // namespace

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults)
    : Optimizer("Adam", std::move(groups), defaults.clone()) {
  for (const auto& g : param_groups()) validate_moment_options("Adam", options_of<AdamOptions>(g));
}
void Adam::step() { adam_step<AdamOptions>(*this, false); }

AdamW::AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults)
    : Optimizer("AdamW", std::move(groups), defaults.clone()) {
  for (const auto& g : param_groups()) validate_moment_options("AdamW", options_of<AdamWOptions>(g));
}
void AdamW::step() { adam_step<AdamWOptions>(*this, true); }

}  // namespace minidl::optim
