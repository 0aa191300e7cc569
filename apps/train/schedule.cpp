#include "apps/train/schedule.h"

#include <string>
#include <vector>

#include "optim/factor_schedulers.h"
#include "optim/sequential_lr.h"

namespace minidl::train {

int64_t schedule_steps(const Config& c, int64_t steps_per_epoch) { return c.epochs * steps_per_epoch; }

std::unique_ptr<optim::LRScheduler> make_schedule(const Config& c, optim::Optimizer& opt, int64_t total) {
  using namespace optim;
  if (c.lr_schedule == "onecycle") return std::make_unique<OneCycleLR>(opt, OneCycleLROptions(c.lr, total));
  const int64_t warm = c.warmup_steps, rest = total - warm;
  if (c.lr_schedule == "constant")
    return warm > 0 ? std::make_unique<LinearLR>(opt, 1.0 / 3.0, 1.0, warm) : nullptr;
  if (rest < 1)
    throw FlagError("--warmup-steps " + std::to_string(warm) + " leaves no steps for --lr-schedule " + c.lr_schedule +
                    " (the run has " + std::to_string(total) + " steps)");
  std::shared_ptr<LRScheduler> main;
  if (c.lr_schedule == "step")
    main = std::make_shared<MultiStepLR>(opt, std::vector<int64_t>{rest / 2, rest * 3 / 4}, 0.1);
  else
    main = std::make_shared<CosineAnnealingLR>(opt, rest);
  if (warm == 0) return std::make_unique<SequentialLR>(opt, std::vector<std::shared_ptr<LRScheduler>>{main}, std::vector<int64_t>{});
  auto warmup = std::make_shared<LinearLR>(opt, 1.0 / 3.0, 1.0, warm);
  return std::make_unique<SequentialLR>(opt, std::vector<std::shared_ptr<LRScheduler>>{warmup, main}, std::vector<int64_t>{warm});
}

}  // namespace minidl::train
