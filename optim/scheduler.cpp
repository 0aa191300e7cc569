// LR schedulers: closed forms of torch.optim.lr_scheduler.
#include "optim/scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "framework/error.h"
#include "optim/adam.h"
#include "optim/adaptive.h"
#include "optim/sgd.h"

namespace minidl::optim {

// ---------------------------------------------------------------- base

LRScheduler::LRScheduler(Optimizer& optimizer) : opt_(optimizer) {
  for (auto& g : opt_.param_groups()) {
    if (!g.initial_lr) g.initial_lr = g.lr();
    base_lrs_.push_back(*g.initial_lr);
  }
}

void LRScheduler::step() {
  const int64_t epoch = last_epoch_ + 1;
  std::vector<double> lrs = lr_at(epoch);  // may throw (OneCycleLR past its end): nothing changes
  apply(epoch, lrs);                        // may throw (a group added since): nothing changes
  last_epoch_ = epoch;
  last_lr_ = std::move(lrs);
}

void LRScheduler::initialize() {
  std::vector<double> current;
  for (const auto& g : opt_.param_groups()) current.push_back(g.lr());
  std::vector<double> lrs = start_rates(current);
  last_epoch_ = 0;
  apply(0, lrs);
  last_lr_ = std::move(lrs);
}

std::vector<double> LRScheduler::start_rates(const std::vector<double>&) const { return lr_at(0); }

void LRScheduler::apply(int64_t, const std::vector<double>& lrs) {
  auto& groups = opt_.param_groups();
  MINIDL_CHECK(groups.size() == lrs.size(), name(), "the optimizer has ", groups.size(), " param groups but the schedule ",
               lrs.size(), " (groups added after the scheduler was created are not supported)");
  for (size_t i = 0; i < groups.size(); ++i) groups[i].options->set_lr(lrs[i]);
}

Json LRScheduler::state_dict() const {
  Json j = Json::object();
  j["scheduler"] = name();
  j["last_epoch"] = last_epoch_;
  j["base_lrs"] = Json::array_of(base_lrs_);
  j["last_lr"] = Json::array_of(last_lr_);
  return j;
}

void LRScheduler::load_state_dict(const Json& state) {
  if (const Json* n = state.find("scheduler"))
    MINIDL_CHECK(n->as_string() == name(), name(), "the state dict was saved by ", n->as_string(), ", not ", name());
  std::vector<double> base = state.at("base_lrs").as_vector<double>();
  std::vector<double> last = state.at("last_lr").as_vector<double>();
  MINIDL_CHECK(base.size() == base_lrs_.size() && last.size() == base_lrs_.size(), name(), "the state dict has ",
               base.size(), " param groups, the optimizer ", base_lrs_.size());
  last_epoch_ = state.at("last_epoch").as_int();
  base_lrs_ = std::move(base);
  last_lr_ = std::move(last);
}

// ---------------------------------------------------------------- StepLR / MultiStepLR / Cosine

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  MINIDL_CHECK(step_size > 0, "StepLR", "step_size must be positive, got ", step_size);
  initialize();
}

std::vector<double> StepLR::lr_at(int64_t epoch) const {
  std::vector<double> out;
  const double f = std::pow(gamma_, static_cast<double>(epoch / step_size_));
  for (double b : base_lrs_) out.push_back(b * f);
  return out;
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initialize();
}

std::vector<double> MultiStepLR::lr_at(int64_t epoch) const {
  const auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin();  // bisect_right
  const double f = std::pow(gamma_, static_cast<double>(passed));
  std::vector<double> out;
  for (double b : base_lrs_) out.push_back(b * f);
  return out;
}

std::vector<double> MultiStepLR::start_rates(const std::vector<double>& current) const {
  const auto at_zero = std::count(milestones_.begin(), milestones_.end(), int64_t{0});
  std::vector<double> out;
  for (double lr : current) out.push_back(lr * std::pow(gamma_, static_cast<double>(at_zero)));
  return out;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  MINIDL_CHECK(T_max > 0, "CosineAnnealingLR", "T_max must be positive, got ", T_max);
  initialize();
}

std::vector<double> CosineAnnealingLR::lr_at(int64_t epoch) const {
  std::vector<double> out;
  const double c = (1.0 + std::cos(std::numbers::pi * static_cast<double>(epoch) / static_cast<double>(T_max_))) / 2.0;
  for (double b : base_lrs_) out.push_back(eta_min_ + (b - eta_min_) * c);
  return out;
}

// ---------------------------------------------------------------- LinearWarmup

LinearWarmup::LinearWarmup(Optimizer& optimizer, const LinearWarmupOptions& options, std::shared_ptr<LRScheduler> after)
    : LRScheduler(optimizer), options_(options), after_(std::move(after)) {
  MINIDL_CHECK(options.warmup_steps_ > 0, "LinearWarmup", "warmup_steps must be positive, got ", options.warmup_steps_);
  MINIDL_CHECK(options.start_factor_ > 0.0 && options.start_factor_ <= 1.0, "LinearWarmup",
               "start_factor must be in (0, 1], got ", options.start_factor_);
  MINIDL_CHECK(!after_ || &after_->optimizer() == &optimizer, "LinearWarmup",
               "the wrapped schedule must drive the same optimizer");
  initialize();
}

std::vector<double> LinearWarmup::lr_at(int64_t epoch) const {
  const int64_t w = options_.warmup_steps_;
  if (epoch >= w) return after_ ? after_->lr_at(epoch - w) : base_lrs_;
  const double f = options_.start_factor_ +
                   (1.0 - options_.start_factor_) * static_cast<double>(epoch) / static_cast<double>(w);
  std::vector<double> out;
  for (double b : base_lrs_) out.push_back(b * f);
  return out;
}

Json LinearWarmup::state_dict() const {
  Json j = LRScheduler::state_dict();
  if (after_) j["after"] = after_->state_dict();
  return j;
}

void LinearWarmup::load_state_dict(const Json& state) {
  LRScheduler::load_state_dict(state);
  if (after_) {
    const Json* a = state.find("after");
    MINIDL_CHECK(a != nullptr, "LinearWarmup", "the state dict has no state for the wrapped ", after_->name());
    after_->load_state_dict(*a);
  }
}

// ---------------------------------------------------------------- OneCycleLR

std::optional<double> get_momentum(const OptimizerOptions& o) {
  if (auto* s = dynamic_cast<const SGDOptions*>(&o)) return s->momentum_;
  if (auto* a = dynamic_cast<const AdamOptions*>(&o)) return a->betas_.first;
  if (auto* w = dynamic_cast<const AdamWOptions*>(&o)) return w->betas_.first;
  if (auto* r = dynamic_cast<const RMSpropOptions*>(&o)) return r->momentum_;
  return std::nullopt;
}

bool set_momentum(OptimizerOptions& o, double m) {
  if (auto* s = dynamic_cast<SGDOptions*>(&o)) {
    s->momentum_ = m;
    return true;
  }
  if (auto* a = dynamic_cast<AdamOptions*>(&o)) {
    a->betas_.first = m;
    return true;
  }
  if (auto* w = dynamic_cast<AdamWOptions*>(&o)) {
    w->betas_.first = m;
    return true;
  }
  if (auto* r = dynamic_cast<RMSpropOptions*>(&o)) {  // PyTorch cycles RMSprop's "momentum" too
    r->momentum_ = m;
    return true;
  }
  return false;
}

OneCycleLR::OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& options)
    : LRScheduler(optimizer), options_(options) {
  const char* op = "OneCycleLR";
  auto& groups = opt_.param_groups();
  MINIDL_CHECK(options.total_steps_ > 0, op, "Expected positive integer total_steps, but got ", options.total_steps_);
  MINIDL_CHECK(options.pct_start_ >= 0.0 && options.pct_start_ <= 1.0, op,
               "Expected float between 0 and 1 pct_start, but got ", options.pct_start_);
  MINIDL_CHECK(options.max_lrs_.size() == 1 || options.max_lrs_.size() == groups.size(), op, "expected 1 or ",
               groups.size(), " max_lr values, got ", options.max_lrs_.size());
  const double total = static_cast<double>(options.total_steps_);
  if (options.three_phase_) {
    phases_ = {{options.pct_start_ * total - 1, 0, 1, 0, 1},
               {2 * options.pct_start_ * total - 2, 1, 0, 1, 0},
               {total - 1, 0, 2, 0, 0}};
  } else {
    phases_ = {{options.pct_start_ * total - 1, 0, 1, 0, 1}, {total - 1, 1, 2, 1, 0}};
  }
  base_lrs_.clear();
  for (size_t i = 0; i < groups.size(); ++i) {
    const double max_lr = options.max_lrs_.size() == 1 ? options.max_lrs_[0] : options.max_lrs_[i];
    const double initial = max_lr / options.div_factor_;
    groups[i].initial_lr = initial;  // PyTorch overwrites group["initial_lr"]
    initial_lrs_.push_back(initial);
    max_lrs_.push_back(max_lr);
    min_lrs_.push_back(initial / options.final_div_factor_);
    base_lrs_.push_back(initial);
  }
  if (options.cycle_momentum_) {
    for (auto& g : groups)
      MINIDL_CHECK(set_momentum(*g.options, options.max_momentum_), op,
                   "optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
  }
  initialize();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (options_.anneal_strategy_ == AnnealStrategy::Linear) return (end - start) * pct + start;
  const double cos_out = std::cos(std::numbers::pi * pct) + 1.0;
  return end + (start - end) / 2.0 * cos_out;
}

double OneCycleLR::at(size_t group, int64_t epoch, int which) const {
  const double lrs[3] = {initial_lrs_[group], max_lrs_[group], min_lrs_[group]};
  const double moms[2] = {options_.max_momentum_, options_.base_momentum_};
  const double step_num = static_cast<double>(epoch);
  double start_step = 0.0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase& ph = phases_[i];
    if (step_num <= ph.end_step || i + 1 == phases_.size()) {
      // A phase of zero length (pct_start 1, or pct_start * total_steps = 1): PyTorch divides by
      // zero here (ZeroDivisionError); an error, not a NaN learning rate.
      MINIDL_CHECK(ph.end_step != start_step, "OneCycleLR", "phase ", i + 1, " of the schedule has zero length at step ",
                   epoch, " (pct_start=", options_.pct_start_, ", total_steps=", options_.total_steps_,
                   "); choose a pct_start that leaves every phase at least one step");
      const double pct = (step_num - start_step) / (ph.end_step - start_step);
      return which == 0 ? anneal(lrs[ph.start_lr], lrs[ph.end_lr], pct)
                        : anneal(moms[ph.start_momentum], moms[ph.end_momentum], pct);
    }
    start_step = ph.end_step;
  }
  return 0.0;  // unreachable
}

std::vector<double> OneCycleLR::lr_at(int64_t epoch) const {
  MINIDL_CHECK(epoch <= options_.total_steps_, "OneCycleLR", "Tried to step ", epoch + 1,
               " times. The specified number of total steps is ", options_.total_steps_);
  std::vector<double> out;
  for (size_t g = 0; g < initial_lrs_.size(); ++g) out.push_back(at(g, epoch, 0));
  return out;
}

std::vector<double> OneCycleLR::momentum_at(int64_t epoch) const {
  std::vector<double> out;
  if (!options_.cycle_momentum_) return out;
  for (size_t g = 0; g < initial_lrs_.size(); ++g) out.push_back(at(g, epoch, 1));
  return out;
}

void OneCycleLR::apply(int64_t epoch, const std::vector<double>& lrs) {
  LRScheduler::apply(epoch, lrs);
  if (!options_.cycle_momentum_) return;
  const std::vector<double> m = momentum_at(epoch);
  auto& groups = opt_.param_groups();
  for (size_t i = 0; i < groups.size(); ++i) set_momentum(*groups[i].options, m[i]);
}

}  // namespace minidl::optim
