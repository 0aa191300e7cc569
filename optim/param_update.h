// What the element-wise (non-foreach) optimizers share: the gradient as an update sees it and the
// lazily created state buffers. Used by optim/adaptive.cpp and optim/adam_variants.cpp.
#pragma once
#include "ops/ops.h"
#include "optim/optimizer.h"

namespace minidl::optim::detail {

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
