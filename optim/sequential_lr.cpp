#include "optim/sequential_lr.h"

#include <algorithm>

#include "framework/error.h"

namespace minidl::optim {

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : CompositeScheduler(optimizer, schedulers, "SequentialLR", "Sequential Schedulers"),
      milestones_(std::move(milestones)) {
  MINIDL_CHECK(milestones_.size() == schedulers_.size() - 1, "SequentialLR",
               "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone "
               "points, but got number of schedulers ", schedulers_.size(), " and the number of milestones ",
               milestones_.size());
  MINIDL_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()), "SequentialLR",
               "milestones must be in non-decreasing order");
  initialize();
}

std::vector<double> SequentialLR::lr_at(int64_t epoch) const {
  const auto k = std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin();  // bisect_right
  return schedulers_[static_cast<size_t>(k)]->lr_at(k == 0 ? epoch : epoch - milestones_[static_cast<size_t>(k - 1)]);
}

}  // namespace minidl::optim
