// SWALR (torch.optim.swa_utils.SWALR): anneals each group's rate from the rate it had when the
// schedule was built to a constant swa_lr over anneal_epochs steps, then holds it; the schedule of
// the stochastic-weight-averaging phase (nn::AveragedModel, nn/averaged_model.h).
//   t = clamp(epoch / max(1, anneal_epochs), 0, 1)          (epoch >= 1 when anneal_epochs is 0)
//   lr = swa_lr * alpha(t) + start_lr * (1 - alpha(t)),   alpha = (1 - cos(pi t)) / 2 or t
// PyTorch computes the same from each group's current rate, inverting the previous step's mix;
// this closed form equals it up to rounding (and continues exactly after a state-dict load).
#pragma once
#include <string>
#include <vector>

#include "optim/scheduler.h"

namespace minidl::optim {

enum class SWAAnneal { Cos, Linear };

class SWALR : public LRScheduler {
 public:
  // One swa_lr for every group, or one per group.
  SWALR(Optimizer& optimizer, double swa_lr, int64_t anneal_epochs = 10, SWAAnneal strategy = SWAAnneal::Cos);
  SWALR(Optimizer& optimizer, std::vector<double> swa_lrs, int64_t anneal_epochs = 10,
        SWAAnneal strategy = SWAAnneal::Cos);
  std::vector<double> lr_at(int64_t epoch) const override;
  std::string name() const override { return "SWALR"; }
  const std::vector<double>& swa_lrs() const { return swa_lrs_; }

  // The base's keys + "swa_lrs", "start_lrs", "anneal_epochs", "anneal_strategy".
  Json state_dict() const override;
  void load_state_dict(const Json& state) override;

 private:
  std::vector<double> swa_lrs_;
  std::vector<double> start_lrs_;  // each group's rate when the schedule was built
  int64_t anneal_epochs_;
  SWAAnneal strategy_;
};

}  // namespace minidl::optim
