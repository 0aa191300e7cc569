// minidl-train's learning-rate schedule (--lr-schedule, --warmup-steps), stepped once per training
// step, so that its epoch is the global step: the rate of step k is the schedule's rate at k.
#pragma once
#include <cstdint>
#include <memory>

#include "apps/train/config.h"
#include "optim/scheduler.h"

namespace minidl::train {

// The steps the schedule spans: --epochs times the steps of an epoch. --max-steps stops a run early
// without changing its schedule, so a run stopped that way resumes onto the same rates.
int64_t schedule_steps(const Config& c, int64_t steps_per_epoch);

// The schedule of c over `total` steps on `opt`, created before any step (its base rate is the
// groups' rate now); null for a constant rate without warm-up:
//   constant: lr (after the warm-up, if any)
//   step:     lr, x0.1 at 1/2 and 3/4 of the steps after the warm-up (the CIFAR ResNet recipe)
//   cosine:   lr annealed to 0 over the steps after the warm-up (CosineAnnealingLR)
//   onecycle: OneCycleLR with its peak at lr (and momentum or beta1 cycled, as PyTorch)
// A warm-up (--warmup-steps N) rises linearly from lr/3 (torch LinearLR's default start) over the
// first N steps. Throws FlagError when the warm-up leaves no steps for the schedule after it.
std::unique_ptr<optim::LRScheduler> make_schedule(const Config& c, optim::Optimizer& opt, int64_t total);

}  // namespace minidl::train
