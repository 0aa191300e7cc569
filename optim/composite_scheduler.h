// A schedule made of other schedules on one optimizer (SequentialLR, ChainedScheduler): it checks
// that each is there and drives that optimizer, and its state dict holds each schedule's under
// "schedulers".
#pragma once
#include <memory>
#include <vector>

#include "optim/scheduler.h"

namespace minidl::optim {

class CompositeScheduler : public LRScheduler {
 public:
  Json state_dict() const override;
  void load_state_dict(const Json& state) override;

 protected:
  // `op` names the errors, `who` starts PyTorch's message for schedules on different optimizers
  // ("Sequential Schedulers", "ChainedScheduler"). Derived constructors call initialize() last.
  CompositeScheduler(Optimizer& optimizer, const std::vector<std::shared_ptr<LRScheduler>>& schedulers, const char* op,
                     const char* who);

  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
};

}  // namespace minidl::optim
