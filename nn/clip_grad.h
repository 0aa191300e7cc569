// Gradient clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_), in place on the .grad of
// each parameter; parameters without a gradient are skipped.
#pragma once
#include <limits>
#include <vector>

#include "ops/tensor.h"

namespace minidl::nn::utils {

// Scales all gradients together so their joint norm is at most max_norm, and returns the norm
// before clipping, as PyTorch: total = norm over all gradient elements (norm_type = p, or infinity
// for the max-abs norm) as a 0-dim tensor in the gradients' dtype (promoted over all of them) on
// the first gradient's device; coef = clamp(max_norm / (total + 1e-6), max = 1), computed on that
// device in total's dtype (as PyTorch: (total + 1e-6).reciprocal() * max_norm); every gradient is
// multiplied by coef (converted to its dtype). Nothing waits for the device: read the norm with
// .item() only when it is wanted. A non-finite total throws when error_if_nonfinite (this reads the
// total, the one host synchronisation), else the gradients are scaled by the non-finite
// coefficient, as in PyTorch. No gradients: returns a 0 f32 CPU tensor (torch.tensor(0.)).
// Deviation: the norm is accumulated in double and rounded once to the gradients' dtype (PyTorch
// rounds each tensor's norm to it first).
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);

// Clamps every gradient element into [-clip_value, clip_value] (NaN stays NaN).
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

// The norm clip_grad_norm_ would compute and return, without clipping.
Tensor grad_norm(const std::vector<Tensor>& parameters, double norm_type = 2.0);

inline constexpr double kInfNorm = std::numeric_limits<double>::infinity();

}  // namespace minidl::nn::utils
