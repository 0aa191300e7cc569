#include "optim/composite_scheduler.h"

#include "framework/error.h"

namespace minidl::optim {

CompositeScheduler::CompositeScheduler(Optimizer& optimizer, const std::vector<std::shared_ptr<LRScheduler>>& schedulers,
                                       const char* op, const char* who)
    : LRScheduler(optimizer), schedulers_(schedulers) {
  MINIDL_CHECK(!schedulers_.empty(), op, "expects at least one scheduler");
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    MINIDL_CHECK(schedulers_[i] != nullptr, op, "scheduler ", i, " is null");
    MINIDL_CHECK(&schedulers_[i]->optimizer() == &optimizer, op,
                 who, " expects all schedulers to belong to the same optimizer, but got schedulers at index 0 and ", i,
                 " to be different");
  }
}

Json CompositeScheduler::state_dict() const {
  Json j = LRScheduler::state_dict();
  Json subs = Json::array();
  for (const auto& s : schedulers_) subs.push_back(s->state_dict());
  j["schedulers"] = subs;
  return j;
}

void CompositeScheduler::load_state_dict(const Json& state) {
  const Json& subs = state.at("schedulers");
  MINIDL_CHECK(subs.size() == schedulers_.size(), name(), "the state dict has ", subs.size(), " schedulers, this ",
               name(), " ", schedulers_.size());
  LRScheduler::load_state_dict(state);
  for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state_dict(subs[i]);
}

}  // namespace minidl::optim
