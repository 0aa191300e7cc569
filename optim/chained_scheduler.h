// Schedules applied together (torch ChainedScheduler): each step advances every schedule, and each
// multiplies the rate by its own change, so
//   lr(epoch) = base_lr * prod_i schedulers[i].lr_at(epoch) / schedulers[i].base_lr
// the closed form of what PyTorch's ChainedScheduler reaches by stepping each schedule in turn.
// That holds for the schedules whose PyTorch step multiplies the current rate by a factor of the
// epoch, the only ones accepted: StepLR, MultiStepLR, ExponentialLR, ConstantLR, LinearLR,
// PolynomialLR and MultiplicativeLR (another one is an error naming it). Every schedule must drive
// the same optimizer; only the ChainedScheduler is stepped (the schedules' own counters stay where
// their construction left them, as SequentialLR's). Its state dict holds each schedule's.
//
//   auto warmup = std::make_shared<optim::ConstantLR>(opt, 0.1, 2);
//   auto decay = std::make_shared<optim::ExponentialLR>(opt, 0.9);
//   optim::ChainedScheduler sched({warmup, decay});
#pragma once
#include <memory>
#include <vector>

#include "optim/composite_scheduler.h"

namespace minidl::optim {

class ChainedScheduler : public CompositeScheduler {
 public:
  explicit ChainedScheduler(const std::vector<std::shared_ptr<LRScheduler>>& schedulers);
  std::vector<double> lr_at(int64_t epoch) const override;
  std::string name() const override { return "ChainedScheduler"; }

 protected:
  // The schedules have set the rates already; constructing the chain changes nothing (PyTorch's
  // ChainedScheduler does not step on construction).
  std::vector<double> start_rates(const std::vector<double>& current) const override { return keep(current); }
};

}  // namespace minidl::optim
