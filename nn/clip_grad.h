// Gradient clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_), in place on the .grad of
// each parameter; parameters without a gradient are skipped.
#pragma once
#include <limits>
#include <vector>

#include "ops/tensor.h"

namespace minidl::nn::utils {

// Scales all gradients together so their joint norm is at most max_norm, and returns the norm
// before clipping. As PyTorch: total = norm over all gradient elements (norm_type = p, or infinity
// for the max-abs norm); coef = max_norm / (total + 1e-6), clamped to at most 1; every gradient is
// multiplied by coef. A non-finite total throws when error_if_nonfinite, else the gradients are
// scaled by the non-finite coefficient, as in PyTorch. Deviations: the norm is accumulated and
// returned in double (PyTorch returns a tensor in the gradients' dtype), and gradients are left
// untouched when coef is 1 (multiplying by 1 would not change them).
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient element into [-clip_value, clip_value] (NaN stays NaN).
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

// The norm clip_grad_norm_ would compute, without clipping.
double grad_norm(const std::vector<Tensor>& parameters, double norm_type = 2.0);

inline constexpr double kInfNorm = std::numeric_limits<double>::infinity();

}  // namespace minidl::nn::utils
