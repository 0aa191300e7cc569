// nn::CTCLoss (torch.nn.CTCLoss): ctc_loss (ops/sequence_ops.h) with the blank label, reduction and
// zero_infinity fixed at construction, as torch's constructor arguments in its order.
//
//   nn::CTCLoss ctc;
//   Tensor loss = ctc(log_softmax(logits, 2), targets, input_lengths, target_lengths);
#pragma once
#include <string>

#include "nn/module.h"
#include "ops/ops.h"

namespace minidl::nn {

class CTCLoss : public Module {
 public:
  explicit CTCLoss(int64_t blank = 0, Reduction reduction = Reduction::Mean, bool zero_infinity = false)
      : blank(blank), reduction(reduction), zero_infinity(zero_infinity) {}
  // log_probs [T, N, C], targets [N, S] or 1-D, lengths [N] -> the loss.
  Tensor forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths, const Tensor& target_lengths);
  Tensor operator()(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                    const Tensor& target_lengths) {
    return forward(log_probs, targets, input_lengths, target_lengths);
  }
  std::string type_name() const override { return "CTCLoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<CTCLoss>(blank, reduction, zero_infinity); }
  std::string describe() const override;  // "CTCLoss(blank=0, reduction=mean, zero_infinity=false)"
  int64_t blank;
  Reduction reduction;
  bool zero_infinity;
};

}  // namespace minidl::nn
