// optim::ReduceLROnPlateau, step for step as PyTorch's.
#include "optim/plateau.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "framework/error.h"

namespace minidl::optim {

namespace {
const char* kName = "ReduceLROnPlateau";
std::vector<double> group_lrs(const Optimizer& opt) {
  std::vector<double> lrs;
  for (const auto& g : opt.param_groups()) lrs.push_back(g.lr());
  return lrs;
}
}  // namespace

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, const PlateauOptions& o) : opt_(optimizer), options_(o) {
  MINIDL_CHECK(o.factor_ >= 0.0 && o.factor_ < 1.0, kName, "Factor should be < 1.0 (and non-negative), got ", o.factor_);
  MINIDL_CHECK(o.patience_ >= 0 && o.cooldown_ >= 0 && o.threshold_ >= 0 && o.eps_ >= 0, kName,
               "patience, cooldown, threshold and eps must be non-negative");
  const size_t n = opt_.param_groups().size();
  MINIDL_CHECK(o.min_lr_.size() == 1 || o.min_lr_.size() == n, kName, "expected 1 or ", n, " min_lrs, got ",
               o.min_lr_.size());
  min_lrs_ = o.min_lr_.size() == 1 ? std::vector<double>(n, o.min_lr_[0]) : o.min_lr_;
  best_ = o.mode_ == PlateauMode::Min ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  last_lr_ = group_lrs(opt_);
}

bool ReduceLROnPlateau::is_better(double a) const {
  const double t = options_.threshold_;
  const bool rel = options_.threshold_mode_ == ThresholdMode::Relative;
  if (options_.mode_ == PlateauMode::Min) return a < (rel ? best_ * (1.0 - t) : best_ - t);
  return a > (rel ? best_ * (1.0 + t) : best_ + t);
}

void ReduceLROnPlateau::step(double metric) {
  ++last_epoch_;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad steps during cooldown are ignored
  }
  if (num_bad_epochs_ > options_.patience_) {
    auto& groups = opt_.param_groups();
    MINIDL_CHECK(groups.size() == min_lrs_.size(), kName, "the optimizer has ", groups.size(),
                 " param groups, the scheduler was made for ", min_lrs_.size());
    for (size_t i = 0; i < groups.size(); ++i) {
      const double old_lr = groups[i].lr(), new_lr = std::max(old_lr * options_.factor_, min_lrs_[i]);
      if (old_lr - new_lr > options_.eps_) groups[i].options->set_lr(new_lr);
    }
    cooldown_counter_ = options_.cooldown_;
    num_bad_epochs_ = 0;
  }
  last_lr_ = group_lrs(opt_);
}

Json ReduceLROnPlateau::state_dict() const {
  Json j = Json::object();
  j["scheduler"] = std::string(kName);
  if (std::isfinite(best_)) j["best"] = best_;  // absent before the first step (JSON has no infinity)
  j["num_bad_epochs"] = num_bad_epochs_;
  j["cooldown_counter"] = cooldown_counter_;
  j["last_epoch"] = last_epoch_;
  j["last_lr"] = Json::array_of(last_lr_);
  return j;
}

void ReduceLROnPlateau::load_state_dict(const Json& state) {
  if (const Json* n = state.find("scheduler"))
    MINIDL_CHECK(n->as_string() == kName, kName, "the state dict was saved by ", n->as_string(), ", not ", kName);
  const Json* best = state.find("best");
  best_ = best ? best->as_double()
               : (options_.mode_ == PlateauMode::Min ? std::numeric_limits<double>::infinity()
                                                     : -std::numeric_limits<double>::infinity());
  num_bad_epochs_ = state.at("num_bad_epochs").as_int();
  cooldown_counter_ = state.at("cooldown_counter").as_int();
  last_epoch_ = state.at("last_epoch").as_int();
  last_lr_ = state.at("last_lr").as_vector<double>();
}

}  // namespace minidl::optim
