#include "optim/swalr.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "framework/error.h"

namespace minidl::optim {

namespace {
const char* strategy_name(SWAAnneal s) { return s == SWAAnneal::Cos ? "cos" : "linear"; }
}  // namespace

SWALR::SWALR(Optimizer& optimizer, double swa_lr, int64_t anneal_epochs, SWAAnneal strategy)
    : SWALR(optimizer, std::vector<double>(optimizer.param_groups().size(), swa_lr), anneal_epochs, strategy) {}

SWALR::SWALR(Optimizer& optimizer, std::vector<double> swa_lrs, int64_t anneal_epochs, SWAAnneal strategy)
    : LRScheduler(optimizer), swa_lrs_(std::move(swa_lrs)), anneal_epochs_(anneal_epochs), strategy_(strategy) {
  MINIDL_CHECK(swa_lrs_.size() == optimizer.param_groups().size(), "SWALR",
               "swa_lr must have the same length as optimizer.param_groups: swa_lr has ", swa_lrs_.size(),
               ", optimizer.param_groups has ", optimizer.param_groups().size());
  MINIDL_CHECK(anneal_epochs >= 0, "SWALR", "anneal_epochs must be equal or greater than 0, got ", anneal_epochs);
  for (const auto& g : optimizer.param_groups()) start_lrs_.push_back(g.lr());
  initialize();
}

std::vector<double> SWALR::lr_at(int64_t epoch) const {
  MINIDL_CHECK(epoch >= 0, "SWALR", "Expected non-negative epoch, but got ", epoch);
  const int64_t step = anneal_epochs_ == 0 ? std::max<int64_t>(1, epoch) : epoch;
  const double t =
      std::clamp(static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, anneal_epochs_)), 0.0, 1.0);
  const double alpha = strategy_ == SWAAnneal::Cos ? (1.0 - std::cos(std::numbers::pi * t)) / 2.0 : t;
  std::vector<double> out;
  for (size_t i = 0; i < swa_lrs_.size(); ++i) out.push_back(swa_lrs_[i] * alpha + start_lrs_[i] * (1.0 - alpha));
  return out;
}

Json SWALR::state_dict() const {
  Json j = LRScheduler::state_dict();
  j["swa_lrs"] = Json::array_of(swa_lrs_);
  j["start_lrs"] = Json::array_of(start_lrs_);
  j["anneal_epochs"] = anneal_epochs_;
  j["anneal_strategy"] = strategy_name(strategy_);
  return j;
}

void SWALR::load_state_dict(const Json& state) {
  std::vector<double> swa = state.at("swa_lrs").as_vector<double>();
  std::vector<double> start = state.at("start_lrs").as_vector<double>();
  MINIDL_CHECK(swa.size() == swa_lrs_.size() && start.size() == swa_lrs_.size(), "SWALR", "the state dict has ",
               swa.size(), " param groups, the optimizer ", swa_lrs_.size());
  const std::string strategy = state.at("anneal_strategy").as_string();
  MINIDL_CHECK(strategy == "cos" || strategy == "linear", "SWALR", "unknown anneal_strategy '", strategy, "' in the state dict");
  LRScheduler::load_state_dict(state);
  swa_lrs_ = std::move(swa);
  start_lrs_ = std::move(start);
  anneal_epochs_ = state.at("anneal_epochs").as_int();
  strategy_ = strategy == "cos" ? SWAAnneal::Cos : SWAAnneal::Linear;
}

}  // namespace minidl::optim
