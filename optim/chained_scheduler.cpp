#include "optim/chained_scheduler.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "framework/error.h"

namespace minidl::optim {

namespace {
// The schedules whose PyTorch step multiplies the current rate by a factor of the epoch.
constexpr std::array<std::string_view, 7> kMultiplicative = {"StepLR",   "MultiStepLR",  "ExponentialLR",   "ConstantLR",
                                                             "LinearLR", "PolynomialLR", "MultiplicativeLR"};

Optimizer& first_optimizer(const std::vector<std::shared_ptr<LRScheduler>>& schedulers) {
  MINIDL_CHECK(!schedulers.empty() && schedulers[0] != nullptr, "ChainedScheduler",
               "expects at least one scheduler (and no null one)");
  return schedulers[0]->optimizer();
}
}  // namespace

ChainedScheduler::ChainedScheduler(const std::vector<std::shared_ptr<LRScheduler>>& schedulers)
    : CompositeScheduler(first_optimizer(schedulers), schedulers, "ChainedScheduler", "ChainedScheduler") {
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    const std::string kind = schedulers_[i]->name();
    MINIDL_CHECK(std::find(kMultiplicative.begin(), kMultiplicative.end(), kind) != kMultiplicative.end(),
                 "ChainedScheduler", "scheduler ", i, " is a ", kind,
                 ", whose rate is not the base rate times a factor of the epoch; a chain takes StepLR, MultiStepLR, "
                 "ExponentialLR, ConstantLR, LinearLR, PolynomialLR and MultiplicativeLR");
  }
  initialize();
}

std::vector<double> ChainedScheduler::lr_at(int64_t epoch) const {
  std::vector<double> lrs = base_lrs_;
  for (const auto& s : schedulers_) {
    const std::vector<double> own = s->lr_at(epoch);
    for (size_t g = 0; g < lrs.size(); ++g) lrs[g] = s->base_lrs()[g] == 0 ? 0.0 : lrs[g] * (own[g] / s->base_lrs()[g]);
  }
  return lrs;
}

}  // namespace minidl::optim
