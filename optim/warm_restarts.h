// Cosine annealing with warm restarts (torch CosineAnnealingWarmRestarts, SGDR): the rate follows
// half a cosine from base_lr down to eta_min over a period of T_0 epochs, then restarts at base_lr;
// each period is T_mult times the one before.
//   lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2
// with T_i the current period and T_cur the epochs since its restart. Integer epochs, as step()
// without an epoch argument in PyTorch; the periods are found by integer arithmetic (PyTorch's
// step(epoch) form takes a floating logarithm, which can round at a restart).
#pragma once
#include "optim/scheduler.h"

namespace minidl::optim {

class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult = 1, double eta_min = 0.0);
  std::vector<double> lr_at(int64_t epoch) const override;
  std::string name() const override { return "CosineAnnealingWarmRestarts"; }

 private:
  int64_t T_0_, T_mult_;
  double eta_min_;
};

}  // namespace minidl::optim
