// The foreach ops: one call over a list of tensors, grouped by (device, dtype) so each group is one
// kernel call (one launch on CUDA). What optimizers, gradient clipping and GradScaler use instead
// of element loops of their own. No autograd: the tensors are updated in place under no-grad, and
// every tensor written gets its version bumped. Arguments are checked with errors naming the op;
// a non-contiguous tensor is computed through a contiguous copy (written back when updated).
#pragma once
#include <vector>

#include "ops/tensor.h"
#include "ops/kernels.h"

namespace minidl {

using kernels::AdamHyper;
using kernels::AdamLists;
using kernels::NonFiniteCount;
using kernels::SgdHyper;

// t *= inv_scale for every tensor (floating; F16 allowed here, GradScaler refuses it itself).
// Returns, per tensor, whether its incoming values held inf/NaN and, when count, how many of each.
std::vector<NonFiniteCount> foreach_non_finite_check_and_unscale_(const std::vector<Tensor>& tensors, float inv_scale,
                                                                  bool count = false);

// The p-norm of each tensor (p > 0, or infinity for max |x|), computed in double; 0 for an empty
// tensor; NaN when a tensor holds NaN. Returns host values, so it waits for the device.
std::vector<double> foreach_norm(const std::vector<Tensor>& tensors, double p);
// The p-norm of all elements of all tensors together (clip_grad_norm_'s total) as a 0-dim f64
// tensor on tensors[0]'s device, computed there without a host synchronisation: the per-tensor
// sums of |x|^p in double (or maxima, NaN winning), combined (those of other devices moved to
// tensors[0]'s), then rooted. An empty list gives 0 on the CPU.
Tensor foreach_total_norm(const std::vector<Tensor>& tensors, double p);

// t *= factor for every tensor (factor converted to the compute type).
void foreach_mul_(const std::vector<Tensor>& tensors, double factor);
// t *= scalar for every tensor (PyTorch's _foreach_mul_(tensors, Tensor)): scalar is a 0-dim
// floating tensor, converted to each group's dtype and moved to its device (as t.mul_(scalar)
// converts it), and read there by the kernel: no host synchronisation.
void foreach_mul_(const std::vector<Tensor>& tensors, const Tensor& scalar);

// One SGD step (optim/sgd.h's update) for every parameter; grads have their parameter's shape,
// device and dtype; momentum_buffers is one per parameter when h.momentum != 0, else empty.
// first_step: the buffers are new and receive d itself.
void foreach_sgd_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                  const std::vector<Tensor>& momentum_buffers, bool first_step, const SgdHyper& h);

// One Adam/AdamW step (optim/adam.h's update) for every parameter; max_exp_avg_sq is one per
// parameter when h.amsgrad, else empty; steps[i] is parameter i's step count after this step.
void foreach_adam_(const AdamLists& lists, const AdamHyper& h);

}  // namespace minidl
