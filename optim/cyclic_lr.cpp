#include "optim/cyclic_lr.h"

#include <cmath>

#include "framework/error.h"

namespace minidl::optim {

namespace {
std::vector<double> per_group(const std::vector<double>& v, size_t groups, const char* name) {
  MINIDL_CHECK(v.size() == 1 || v.size() == groups, "CyclicLR", "expected ", groups, " values for ", name, ", got ",
               v.size());
  return v.size() == 1 ? std::vector<double>(groups, v[0]) : v;
}
}  // namespace

CyclicLR::CyclicLR(Optimizer& optimizer, const CyclicLROptions& options) : LRScheduler(optimizer), options_(options) {
  const char* op = "CyclicLR";
  auto& groups = opt_.param_groups();
  const double up = options.step_size_up_, down = options.step_size_down_.value_or(up);
  MINIDL_CHECK(up > 0 && down >= 0 && std::isfinite(up + down), op, "step_size_up must be positive and step_size_down ",
               "non-negative, got ", up, " and ", down);
  total_size_ = up + down;
  step_ratio_ = up / total_size_;
  const std::vector<double> base = per_group(options.base_lrs_, groups.size(), "base_lr");
  max_lrs_ = per_group(options.max_lrs_, groups.size(), "max_lr");
  // As PyTorch: the groups start at base_lr, which is also each group's initial_lr and base rate.
  base_lrs_ = base;
  for (size_t i = 0; i < groups.size(); ++i) {
    groups[i].options->set_lr(base[i]);
    groups[i].initial_lr = base[i];
  }
  if (options.cycle_momentum_)
    for (auto& g : groups)
      MINIDL_CHECK(set_momentum(*g.options, options.base_momentum_), op,
                   "optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
  initialize();
}

std::pair<double, double> CyclicLR::shape_at(int64_t epoch) const {
  const double e = static_cast<double>(epoch);
  const double cycle = std::floor(1.0 + e / total_size_);
  const double x = 1.0 + e / total_size_ - cycle;
  const double position = x <= step_ratio_ ? x / step_ratio_ : (x - 1.0) / (step_ratio_ - 1.0);
  double scale;
  if (options_.scale_fn_) scale = options_.scale_fn_(options_.scale_by_cycle_ ? cycle : e);
  else if (options_.mode_ == CyclicMode::Triangular) scale = 1.0;
  else if (options_.mode_ == CyclicMode::Triangular2) scale = 1.0 / std::pow(2.0, cycle - 1.0);
  else scale = std::pow(options_.gamma_, e);
  return {position, scale};
}

std::vector<double> CyclicLR::lr_at(int64_t epoch) const {
  MINIDL_CHECK(epoch >= 0, "CyclicLR", "Expected non-negative epoch, but got ", epoch);
  const auto [position, scale] = shape_at(epoch);
  std::vector<double> out;
  for (size_t i = 0; i < max_lrs_.size(); ++i) out.push_back(base_lrs_[i] + (max_lrs_[i] - base_lrs_[i]) * position * scale);
  return out;
}

std::vector<double> CyclicLR::momentum_at(int64_t epoch) const {
  if (!options_.cycle_momentum_) return {};
  const auto [position, scale] = shape_at(epoch);
  const double height = (options_.max_momentum_ - options_.base_momentum_) * position;
  return std::vector<double>(max_lrs_.size(), options_.max_momentum_ - height * scale);
}

void CyclicLR::apply(int64_t epoch, const std::vector<double>& lrs) {
  LRScheduler::apply(epoch, lrs);
  const std::vector<double> m = momentum_at(epoch);
  auto& groups = opt_.param_groups();
  for (size_t i = 0; i < m.size() && i < groups.size(); ++i) set_momentum(*groups[i].options, m[i]);
}

}  // namespace minidl::optim
