// GradScaler: dynamic loss scaling between backward and the optimizer step (torch.amp.GradScaler).
//   scaler.scale(loss).backward();
//   scaler.unscale_(opt);            // optional: to clip or inspect true gradients
//   auto r = scaler.step(opt);       // unscales if needed; skips opt.step() on inf/NaN
//   scaler.update();                 // backoff on overflow, growth after clean streaks
// Messages and state follow PyTorch. Deviations (ours): the constructor validates every argument;
// optional min/max scale; step() returns {stepped, found_inf}; a diagnostics mode that names the
// parameters whose gradients held inf/NaN.
#pragma once
#include <concepts>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ops/tensor.h"

namespace minidl::amp {

struct GradScalerOptions {
  double init_scale = 65536.0;       // 2^16
  double growth_factor = 2.0;        // > 1
  double backoff_factor = 0.5;       // in (0, 1)
  int64_t growth_interval = 2000;    // clean steps before growing
  bool enabled = true;
  std::optional<double> min_scale;   // ours: never back off below this
  std::optional<double> max_scale;   // ours: never grow above this
  bool diagnostics = false;          // ours: per-step report of non-finite gradients by parameter

  GradScalerOptions& init_scale_(double v) { init_scale = v; return *this; }
  GradScalerOptions& growth_factor_(double v) { growth_factor = v; return *this; }
  GradScalerOptions& backoff_factor_(double v) { backoff_factor = v; return *this; }
  GradScalerOptions& growth_interval_(int64_t v) { growth_interval = v; return *this; }
  GradScalerOptions& enabled_(bool v) { enabled = v; return *this; }
  GradScalerOptions& min_scale_(double v) { min_scale = v; return *this; }
  GradScalerOptions& max_scale_(double v) { max_scale = v; return *this; }
  GradScalerOptions& diagnostics_(bool v) { diagnostics = v; return *this; }
};

struct StepResult {
  bool stepped = false;
  bool found_inf = false;
};

// One parameter whose gradient held non-finite values in the last unscale_.
struct NonFiniteGradient {
  std::string param;  // Tensor::name() (module path), or "param<i>"
  int64_t inf = 0;
  int64_t nan = 0;
  int64_t numel = 0;
};

// What the scaler needs from an optimizer: a stable identity, its parameters, and its step.
struct OptimizerHandle {
  const void* key = nullptr;
  std::function<std::vector<Tensor>()> params;
  std::function<void()> step;
};
// What GradScaler::unscale_/step take: an optimizer (parameters() giving the tensors, and step()),
// as every minidl optimizer.
template <class Opt>
concept ScalableOptimizer = requires(Opt& opt) {
  { opt.parameters() } -> std::convertible_to<std::vector<Tensor>>;
  opt.step();
};
template <class> inline constexpr bool kNotAnOptimizer = false;

// Adapts any optimizer with parameters() and step() (every minidl optimizer).
template <ScalableOptimizer Opt>
OptimizerHandle handle_of(Opt& opt) {
  return {&opt, [&opt] { return opt.parameters(); }, [&opt] { opt.step(); }};
}

// Where an optimizer stands in the current iteration (PyTorch's OptState): Ready until unscale_,
// Unscaled until step, Stepped until update() resets every optimizer to Ready.
enum class OptimizerStage { Ready, Unscaled, Stepped };
const char* to_string(OptimizerStage stage);

class GradScaler {
 public:
  // A CUDA scaler where CUDA is not available warns and disables itself, as PyTorch.
  explicit GradScaler(Device device = Device::cpu(), GradScalerOptions options = {});
  explicit GradScaler(GradScalerOptions options) : GradScaler(Device::cpu(), std::move(options)) {}

  // Multiplies by the current scale (in f32: an f16/bf16 0-dim loss gives an f32 result).
  Tensor scale(const Tensor& outputs);
  std::vector<Tensor> scale(const std::vector<Tensor>& outputs);

  // Opt is an optimizer (ScalableOptimizer); anything else (a model, a tensor) is one clear error.
  template <class Opt> void unscale_(Opt& opt) {
    if constexpr (ScalableOptimizer<Opt>) unscale_(handle_of(opt));
    else static_assert(kNotAnOptimizer<Opt>, "GradScaler::unscale_(opt) takes an optimizer (parameters() and step(), e.g. optim::SGD), not a model or tensor");
  }
  template <class Opt> StepResult step(Opt& opt) {
    if constexpr (ScalableOptimizer<Opt>) return step(handle_of(opt));
    else static_assert(kNotAnOptimizer<Opt>, "GradScaler::step(opt) takes an optimizer (parameters() and step(), e.g. optim::SGD), not a model or tensor");
  }
  void unscale_(const OptimizerHandle& opt);
  StepResult step(const OptimizerHandle& opt);

  void update();
  // Sets the scale (the growth tracker is kept). Deviation: refuses a non-positive or non-finite
  // value. The tensor form takes a 1-element tensor on the scaler's device type that does not
  // require grad, as PyTorch.
  void update(double new_scale);
  void update(const Tensor& new_scale);

  double get_scale() const;
  double get_growth_factor() const { return opt_.growth_factor; }
  double get_backoff_factor() const { return opt_.backoff_factor; }
  int64_t get_growth_interval() const { return opt_.growth_interval; }
  int64_t get_growth_tracker() const { return growth_tracker_; }
  void set_growth_factor(double v);
  void set_backoff_factor(double v);
  void set_growth_interval(int64_t v);
  bool is_enabled() const { return opt_.enabled; }

  // {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}; empty
  // when disabled.
  std::map<std::string, double> state_dict() const;
  void load_state_dict(const std::map<std::string, double>& state);

  // Diagnostics mode: the non-finite gradients found in the last iteration (all optimizers, worst
  // first: most non-finite elements), and a one-line-per-parameter report. Still readable after update().
  const std::vector<NonFiniteGradient>& last_nonfinite() const { return last_nonfinite_; }
  std::string report() const;

  // The optimizer's stage in the current iteration (Ready for one the scaler has not seen).
  template <ScalableOptimizer Opt> OptimizerStage stage(const Opt& opt) const { return stage(static_cast<const void*>(&opt)); }
  OptimizerStage stage(const OptimizerHandle& opt) const { return stage(opt.key); }

  // Total steps skipped for inf/NaN since construction (for progress lines).
  int64_t skipped_steps() const { return skipped_steps_; }

 private:
  struct PerOptimizer {
    OptimizerStage stage = OptimizerStage::Ready;
    bool inf_checked = false;
    bool found_inf = false;
  };
  OptimizerStage stage(const void* key) const;
  void check_scale(const char* fn) const;
  void update_scale(bool found_inf);
  void set_scale(double value);  // fills scale_ and its host mirror

  Device device_;
  GradScalerOptions opt_;
  std::optional<Tensor> scale_;  // lazily created at the first scale(): f32 0-dim on device_
  double scale_value_ = 0.0;     // host mirror of *scale_ (its f32 value): read without a device sync
  int64_t growth_tracker_ = 0;
  std::unordered_map<const void*, PerOptimizer> per_optimizer_;
  std::vector<NonFiniteGradient> last_nonfinite_;  // kept until the next iteration's first unscale_
  bool new_iteration_ = true;
  int64_t skipped_steps_ = 0;
};

}  // namespace minidl::amp
