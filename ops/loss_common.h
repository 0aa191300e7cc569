// Helpers shared by the loss families (ops/loss.cpp, ops/pointwise_loss.cpp): the input checks of
// the regression losses, PyTorch's warning when a target broadcasts against the input, and the
// reduction.
#pragma once
#include "framework/warning.h"
#include "ops/common.h"

namespace minidl::ops_detail {

// none / sum / mean (over every element) of an unreduced loss.
inline Tensor apply_reduction(const Tensor& loss, Reduction reduction) {
  switch (reduction) {
    case Reduction::None: return loss;
    case Reduction::Sum: return sum(loss);
    case Reduction::Mean: return mean(loss);
  }
  return loss;
}

// input and target defined, on one device, input floating.
inline void check_loss_pair(const char* op, const Tensor& input, const Tensor& target) {
  check_defined(input, op, "input");
  check_defined(target, op, "target");
  check_floating(op, input);
  check_same_device(op, input, target);
}

// The regression losses (mse, l1, smooth_l1, huber) broadcast a target of another shape, as
// PyTorch, which warns each time with these words (the result is rarely what was meant). Shapes
// that do not broadcast are an error naming the loss (not the sub inside it), without the warning.
inline void warn_if_target_broadcasts(const char* op, const Tensor& input, const Tensor& target) {
  if (input.shape() == target.shape()) return;
  broadcast_shapes(input.shape(), target.shape(), op);
  warn(detail::concat(op, ": Using a target size (", shape_str(target.shape()), ") that is different to the input size (",
                      shape_str(input.shape()),
                      "). This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size."));
}

}  // namespace minidl::ops_detail
