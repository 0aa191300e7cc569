// What the element-wise (non-foreach) optimizers share: the loop over the parameters that have a
// gradient, the gradient as an update sees it and the lazily created state buffers. Used by
// optim/adaptive.cpp and optim/adam_variants.cpp.
#pragma once
#include "framework/grad_mode.h"
#include "ops/ops.h"
#include "optim/optimizer.h"

namespace minidl::optim::detail {

// Calls update(options, param, p, state) for every parameter with a gradient, group by group, without
// recording a graph: p is the parameter's detached alias (updated in place), state its ParamState
// with the step already counted.
template <class Options, class Update>
void for_each_update(Optimizer& opt, Update update) {
  NoGradGuard ng;
  for (const ParamGroup& group : opt.param_groups()) {
    const auto& o = static_cast<const Options&>(*group.options);
    for (const Tensor& param : group.params) {
      if (!param.grad().defined()) continue;
      ParamState& st = opt.state(param);
      ++st.step;
      update(o, param, param.detach(), st);
    }
  }
}

// The gradient in the parameter's dtype, negated when maximizing, plus the L2 term weight_decay * p.
inline Tensor effective_grad(const Tensor& param, const Tensor& p, bool maximize, double weight_decay) {
  Tensor g = param.grad().detach();
  if (g.dtype() != p.dtype()) g = g.to(p.dtype());
  if (maximize) g = neg(g);
  if (weight_decay != 0.0) g = add(g, p, weight_decay);
  return g;
}

// The named state buffer, created like `like` and filled with `init` when missing.
inline Tensor state_buffer(ParamState& st, const char* name, const Tensor& like, double init) {
  if (const Tensor* b = st.buffers.find(name)) return *b;
  Tensor b = full_like(like, init);
  st.buffers.set(name, b);
  return b;
}

// x = beta * x + (1 - beta) * y * y (torch's mul_(beta).addcmul_(y, y, value=1 - beta)).
inline void decay_square_into(const Tensor& x, const Tensor& y, double beta) {
  x.mul_(beta);
  x.add_(mul(y, y), 1.0 - beta);
}

}  // namespace minidl::optim::detail
