#include "optim/sequential_lr.h"

#include <algorithm>

#include "framework/error.h"

namespace minidl::optim {

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(optimizer), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  MINIDL_CHECK(!schedulers_.empty(), "SequentialLR", "expects at least one scheduler");
  MINIDL_CHECK(milestones_.size() == schedulers_.size() - 1, "SequentialLR",
               "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone "
               "points, but got number of schedulers ", schedulers_.size(), " and the number of milestones ",
               milestones_.size());
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    MINIDL_CHECK(schedulers_[i] != nullptr, "SequentialLR", "scheduler ", i, " is null");
    MINIDL_CHECK(&schedulers_[i]->optimizer() == &optimizer, "SequentialLR",
                 "Sequential Schedulers expects all schedulers to belong to the same optimizer, but got schedulers at "
                 "index 0 and ", i, " to be different");
  }
  MINIDL_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()), "SequentialLR",
               "milestones must be in non-decreasing order");
  initialize();
}

std::vector<double> SequentialLR::lr_at(int64_t epoch) const {
  const auto k = std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin();  // bisect_right
  return schedulers_[static_cast<size_t>(k)]->lr_at(k == 0 ? epoch : epoch - milestones_[static_cast<size_t>(k - 1)]);
}

Json SequentialLR::state_dict() const {
  Json j = LRScheduler::state_dict();
  Json subs = Json::array();
  for (const auto& s : schedulers_) subs.push_back(s->state_dict());
  j["schedulers"] = subs;
  return j;
}

void SequentialLR::load_state_dict(const Json& state) {
  const Json& subs = state.at("schedulers");
  MINIDL_CHECK(subs.size() == schedulers_.size(), "SequentialLR", "the state dict has ", subs.size(),
               " schedulers, this SequentialLR ", schedulers_.size());
  LRScheduler::load_state_dict(state);
  for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state_dict(subs[i]);
}

}  // namespace minidl::optim
