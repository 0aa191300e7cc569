// GradScaler (amp/grad_scaler.h): stages per optimizer, the scale and its host mirror, and
// unscale_ as one foreach unscale-and-check call.
#include "amp/grad_scaler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "framework/grad_mode.h"
#include "framework/cuda.h"
#include "framework/error.h"
#include "framework/warning.h"
#include "ops/foreach.h"
#include "ops/ops.h"

namespace minidl::amp {

namespace {
constexpr const char* kScaleFix =
    "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration.";

// PyTorch's own text where PyTorch checks (growth > 1, backoff < 1); ours for what it lets through
// (a non-finite growth factor, a backoff factor <= 0).
void check_growth_factor(double v) {
  MINIDL_CHECK(v > 1.0, "GradScaler", "The growth factor must be > 1.0.");
  MINIDL_CHECK(std::isfinite(v), "GradScaler", "growth_factor must be finite, got ", v);
}
void check_backoff_factor(double v) {
  MINIDL_CHECK(v < 1.0, "GradScaler", "The backoff factor must be < 1.0.");
  MINIDL_CHECK(v > 0.0, "GradScaler", "backoff_factor must be > 0, got ", v);
}

void check_options(const GradScalerOptions& o) {
  MINIDL_CHECK(std::isfinite(o.init_scale) && o.init_scale > 0, "GradScaler", "init_scale must be a positive finite number, got ", o.init_scale);
  check_growth_factor(o.growth_factor);
  check_backoff_factor(o.backoff_factor);
  MINIDL_CHECK(o.growth_interval >= 1, "GradScaler", "growth_interval must be >= 1, got ", o.growth_interval);
  if (o.min_scale) MINIDL_CHECK(*o.min_scale > 0 && *o.min_scale <= o.init_scale, "GradScaler", "min_scale must be in (0, init_scale], got ", *o.min_scale);
  if (o.max_scale) MINIDL_CHECK(std::isfinite(*o.max_scale) && *o.max_scale >= o.init_scale, "GradScaler", "max_scale must be finite and >= init_scale, got ", *o.max_scale);
}
}  // namespace

GradScaler::GradScaler(Device device, GradScalerOptions options) : device_(device), opt_(std::move(options)) {
  // As PyTorch: a CUDA scaler where CUDA cannot be used warns and disables itself, and a disabled
  // scaler takes its arguments unchecked (it never uses them).
  if (opt_.enabled && device_.is_cuda() && !cuda::is_available()) {
    warn("GradScaler is enabled, but CUDA is not available.  Disabling.");
    opt_.enabled = false;
  }
  if (opt_.enabled) check_options(opt_);
}

void GradScaler::check_scale(const char* fn) const {
  MINIDL_CHECK(scale_.has_value(), "GradScaler", "Attempted ", fn, " but _scale is None.  ", kScaleFix);
}

Tensor GradScaler::scale(const Tensor& outputs) {
  if (!opt_.enabled) return outputs;
  MINIDL_CHECK(outputs.defined(), "GradScaler.scale", "outputs is an undefined tensor");
  MINIDL_CHECK(outputs.device() == device_, "GradScaler.scale", "outputs are on ", outputs.device().str(),
               " but the scaler is for ", device_.str());
  if (!scale_) {
    scale_ = full({}, opt_.init_scale, TensorOptions(DType::F32).device(device_));
    scale_value_ = static_cast<float>(opt_.init_scale);
  }
  return mul(outputs, *scale_);
}

std::vector<Tensor> GradScaler::scale(const std::vector<Tensor>& outputs) {
  std::vector<Tensor> out;
  for (const Tensor& t : outputs) out.push_back(scale(t));
  return out;
}

void GradScaler::unscale_(const OptimizerHandle& opt) {
  if (!opt_.enabled) return;
  check_scale("unscale_");
  PerOptimizer& st = per_optimizer_[opt.key];
  MINIDL_CHECK(st.stage != OptimizerStage::Unscaled, "GradScaler", "unscale_() has already been called on this optimizer since the last update().");
  MINIDL_CHECK(st.stage != OptimizerStage::Stepped, "GradScaler", "unscale_() is being called after step().");
  if (new_iteration_) {
    last_nonfinite_.clear();
    new_iteration_ = false;
  }
  // inv = 1/scale computed in double, rounded to f32 (as PyTorch).
  const float inv = static_cast<float>(1.0 / scale_value_);
  std::vector<Tensor> grads, owners;
  for (const Tensor& p : opt.params()) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    MINIDL_CHECK(g.dtype() != DType::F16, "GradScaler", "Attempting to unscale FP16 gradients.");
    // Any layout, as PyTorch (`p.grad = g.t()` is unscaled in place): the foreach op stages a
    // non-contiguous gradient and writes it back.
    grads.push_back(g);
    owners.push_back(p);
  }
  // One foreach call: one kernel per (device, dtype) group of gradients. It may throw a deferred
  // device error (a bad target found by an earlier kernel, reported at this wait) after the
  // gradients were divided: they are unscaled and not to be trusted, so the optimizer is marked
  // unscaled with an inf found (a retried step skips instead of dividing them again).
  std::vector<NonFiniteCount> checked;
  try {
    checked = foreach_non_finite_check_and_unscale_(grads, inv, opt_.diagnostics);
  } catch (...) {
    st.found_inf = true;
    st.inf_checked = !grads.empty();
    st.stage = OptimizerStage::Unscaled;
    throw;
  }
  bool found = false;
  for (size_t i = 0; i < grads.size(); ++i) {
    found = found || checked[i].found;
    if (opt_.diagnostics && checked[i].found)
      last_nonfinite_.push_back({owners[i].name().empty() ? "param" + std::to_string(i) : owners[i].name(),
                                 checked[i].inf, checked[i].nan, grads[i].numel()});
  }
  // Worst first: the parameters with the most non-finite elements lead the report (stable: ties
  // keep parameter order).
  std::stable_sort(last_nonfinite_.begin(), last_nonfinite_.end(),
                   [](const NonFiniteGradient& a, const NonFiniteGradient& b) { return a.inf + a.nan > b.inf + b.nan; });
  st.found_inf = found;
  // As PyTorch's found_inf_per_device: an inf check is recorded only where a gradient was checked,
  // so an optimizer without any gradient cannot step, and cannot alone feed update().
  st.inf_checked = !grads.empty();
  st.stage = OptimizerStage::Unscaled;
}

StepResult GradScaler::step(const OptimizerHandle& opt) {
  if (!opt_.enabled) {
    opt.step();
    return {true, false};
  }
  check_scale("step");
  PerOptimizer& st = per_optimizer_[opt.key];
  MINIDL_CHECK(st.stage != OptimizerStage::Stepped, "GradScaler", "step() has already been called since the last update().");
  if (st.stage == OptimizerStage::Ready) unscale_(opt);
  PerOptimizer& s2 = per_optimizer_[opt.key];
  MINIDL_CHECK(s2.inf_checked, "GradScaler", "No inf checks were recorded for this optimizer.");
  StepResult r{!s2.found_inf, s2.found_inf};
  if (r.stepped) opt.step();
  s2.stage = OptimizerStage::Stepped;
  return r;
}

const char* to_string(OptimizerStage stage) {
  switch (stage) {
    case OptimizerStage::Ready: return "READY";
    case OptimizerStage::Unscaled: return "UNSCALED";
    case OptimizerStage::Stepped: return "STEPPED";
  }
  return "?";
}

OptimizerStage GradScaler::stage(const void* key) const {
  auto it = per_optimizer_.find(key);
  return it == per_optimizer_.end() ? OptimizerStage::Ready : it->second.stage;
}

void GradScaler::set_scale(double value) {
  NoGradGuard ng;
  scale_->fill_(value);
  scale_value_ = static_cast<float>(value);  // what the f32 tensor now holds
}

void GradScaler::update_scale(bool found_inf) {
  double s = scale_value_;
  if (found_inf) {
    s *= opt_.backoff_factor;
    if (opt_.min_scale) s = std::max(s, *opt_.min_scale);
    growth_tracker_ = 0;
    ++skipped_steps_;
  } else if (growth_tracker_ + 1 == opt_.growth_interval) {
    // Growth is refused when the grown scale would not be a finite f32.
    const float grown = static_cast<float>(s * opt_.growth_factor);
    if (std::isfinite(grown)) s = grown;
    if (opt_.max_scale) s = std::min(s, *opt_.max_scale);
    growth_tracker_ = 0;
  } else {
    ++growth_tracker_;
  }
  set_scale(s);
}

void GradScaler::update() {
  if (!opt_.enabled) return;
  check_scale("update");
  bool any_checked = false, found = false;
  for (auto& [key, st] : per_optimizer_) {
    any_checked = any_checked || st.inf_checked;
    found = found || st.found_inf;
  }
  MINIDL_CHECK(any_checked, "GradScaler", "No inf checks were recorded prior to update.");
  update_scale(found);  // several optimizers in one iteration count as one update
  per_optimizer_.clear();
  new_iteration_ = true;
}

void GradScaler::update(double new_scale) {
  if (!opt_.enabled) return;
  check_scale("update");
  MINIDL_CHECK(std::isfinite(new_scale) && new_scale > 0, "GradScaler", "new_scale must be a positive finite number, got ", new_scale);
  set_scale(new_scale);  // the growth tracker is kept, as PyTorch
  per_optimizer_.clear();
  new_iteration_ = true;
}

void GradScaler::update(const Tensor& new_scale) {
  if (!opt_.enabled) return;
  check_scale("update");
  constexpr const char* kReason =
      "new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor with "
      "requires_grad=False.";
  MINIDL_CHECK(new_scale.defined() && new_scale.device().type == device_.type, "GradScaler", kReason);
  MINIDL_CHECK(new_scale.numel() == 1, "GradScaler", kReason);
  MINIDL_CHECK(!new_scale.requires_grad(), "GradScaler", kReason);
  update(new_scale.item());  // copied: later changes to new_scale do not reach the scaler
}

double GradScaler::get_scale() const {
  if (!opt_.enabled) return 1.0;
  return scale_ ? scale_value_ : opt_.init_scale;
}

void GradScaler::set_growth_factor(double v) {
  check_growth_factor(v);
  opt_.growth_factor = v;
}
void GradScaler::set_backoff_factor(double v) {
  check_backoff_factor(v);
  opt_.backoff_factor = v;
}
void GradScaler::set_growth_interval(int64_t v) {
  MINIDL_CHECK(v >= 1, "GradScaler", "growth_interval must be >= 1, got ", v);
  opt_.growth_interval = v;
}

std::map<std::string, double> GradScaler::state_dict() const {
  if (!opt_.enabled) return {};
  return {{"scale", get_scale()},
          {"growth_factor", opt_.growth_factor},
          {"backoff_factor", opt_.backoff_factor},
          {"growth_interval", static_cast<double>(opt_.growth_interval)},
          {"_growth_tracker", static_cast<double>(growth_tracker_)}};
}

void GradScaler::load_state_dict(const std::map<std::string, double>& state) {
  if (!opt_.enabled) return;
  MINIDL_CHECK(!state.empty(), "GradScaler",
               "The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.");
  for (const char* key : {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"})
    MINIDL_CHECK(state.count(key), "GradScaler", "state dict is missing '", key, "'");
  opt_.init_scale = state.at("scale");
  if (scale_) set_scale(opt_.init_scale);
  set_growth_factor(state.at("growth_factor"));
  set_backoff_factor(state.at("backoff_factor"));
  set_growth_interval(static_cast<int64_t>(state.at("growth_interval")));
  growth_tracker_ = static_cast<int64_t>(state.at("_growth_tracker"));
}

std::string GradScaler::report() const {
  std::ostringstream os;
  if (last_nonfinite_.empty()) return "GradScaler: all gradients finite\n";
  os << "GradScaler: non-finite gradients (scale " << get_scale() << "):\n";
  for (const auto& n : last_nonfinite_)
    os << "  " << n.param << ": " << n.inf << " inf, " << n.nan << " NaN of " << n.numel << " elements\n";
  return os.str();
}

}  // namespace minidl::amp
