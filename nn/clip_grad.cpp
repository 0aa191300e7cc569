// Gradient clipping: the norm of all gradients and their scaling are one foreach call each
// (ops/foreach.h), the clip coefficient a few ops on a 0-dim tensor, all on the gradients' device;
// clamping goes through the clamp op.
#include "nn/clip_grad.h"

#include <cmath>

#include "framework/grad_mode.h"
#include "framework/error.h"
#include "ops/foreach.h"
#include "ops/ops.h"

namespace minidl::nn::utils {

namespace {
std::vector<Tensor> grads_of(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> gs;
  for (const Tensor& p : parameters) {
    if (!p.defined()) continue;
    Tensor g = p.grad();
    if (g.defined()) gs.push_back(g.detach());
  }
  return gs;
}
}  // namespace

Tensor grad_norm(const std::vector<Tensor>& parameters, double norm_type) {
  MINIDL_CHECK(norm_type > 0, "clip_grad_norm_", "norm_type must be positive (or infinity), got ", norm_type);
  NoGradGuard ng;
  const std::vector<Tensor> grads = grads_of(parameters);
  if (grads.empty()) return scalar_tensor(0.0);  // torch.tensor(0.)
  DType dtype = grads[0].dtype();
  for (const Tensor& g : grads) dtype = promote_types(dtype, g.dtype());
  return cast(foreach_total_norm(grads, norm_type), dtype);
}

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type, bool error_if_nonfinite) {
  const Tensor total = grad_norm(parameters, norm_type);
  const std::vector<Tensor> grads = grads_of(parameters);
  if (grads.empty()) return total;
  if (error_if_nonfinite && !std::isfinite(total.item()))
    MINIDL_FAIL("clip_grad_norm_", "The total norm of order ", norm_type,
                " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and "
                "scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`");
  NoGradGuard ng;
  const Tensor shifted = add(total, 1e-6);
  const Tensor coef = clamp(mul(div(ones_like(shifted), shifted), max_norm), std::nullopt, 1.0);  // NaN stays NaN
  foreach_mul_(grads, coef);
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  MINIDL_CHECK(clip_value >= 0, "clip_grad_value_", "clip_value must be non-negative, got ", clip_value);
  NoGradGuard ng;
  for (const Tensor& g : grads_of(parameters)) g.copy_(clamp(g, -clip_value, clip_value));  // NaN stays NaN
}

}  // namespace minidl::nn::utils
