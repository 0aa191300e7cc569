// nn::CTCLoss.
#include "nn/ctc_loss.h"

#include "nn/loss.h"

namespace minidl::nn {

Tensor CTCLoss::forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                        const Tensor& target_lengths) {
  auto scope = forward_scope();
  return ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity);
}

std::string CTCLoss::describe() const {
  return detail::concat("CTCLoss(blank=", blank, ", reduction=", reduction_name(reduction),
                        ", zero_infinity=", zero_infinity ? "true" : "false", ")");
}

}  // namespace minidl::nn
