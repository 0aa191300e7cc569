// Schedules one after another (torch SequentialLR): schedulers[i] drives the rates from milestone
// i - 1 on (the first from epoch 0), counting its own epochs from 0 at its milestone:
//   lr(epoch) = schedulers[k].lr_at(epoch - milestones[k - 1]),  k = the number of milestones <= epoch
// which is what PyTorch's SequentialLR sets (it steps the next schedule with epoch 0 at each
// milestone). Every schedule must drive the same optimizer; only the SequentialLR is stepped. Its
// state dict holds each schedule's.
//
//   auto warmup = std::make_shared<optim::LinearLR>(opt, 0.1, 1.0, 500);
//   auto cosine = std::make_shared<optim::CosineAnnealingLR>(opt, 9500);
//   optim::SequentialLR sched(opt, {warmup, cosine}, {500});
#pragma once
#include <memory>
#include <vector>

#include "optim/composite_scheduler.h"

namespace minidl::optim {

class SequentialLR : public CompositeScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers, std::vector<int64_t> milestones);
  std::vector<double> lr_at(int64_t epoch) const override;
  std::string name() const override { return "SequentialLR"; }

 private:
  std::vector<int64_t> milestones_;
};

}  // namespace minidl::optim
