// Learning-rate schedules (torch.optim.lr_scheduler): StepLR, MultiStepLR, CosineAnnealingLR,
// LinearWarmup and OneCycleLR. Each computes the rate of every param group in closed form from the
// epoch (PyTorch's _get_closed_form_lr; its recursive forms agree up to rounding), so a schedule
// resumed from a state dict continues exactly.
//
// As in PyTorch, constructing a scheduler records each group's "initial_lr" (the first scheduler
// on an optimizer wins), makes the first step (last_epoch becomes 0) and sets the epoch-0 rate;
// call step() after each optimizer.step() (per iteration or per epoch, as the schedule is meant).
//
//   optim::SGD opt(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
//   auto cosine = std::make_shared<optim::CosineAnnealingLR>(opt, /*T_max=*/1000);
//   optim::LinearWarmup sched(opt, optim::LinearWarmupOptions(100), cosine);  // 100 warm-up steps, then cosine
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/json.h"
#include "optim/optimizer.h"

namespace minidl::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // Advances one step and sets the groups' learning rates.
  void step();
  // The rates set by the last step, one per group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return opt_; }

  // The closed-form rate of each group at `epoch` (no side effects).
  virtual std::vector<double> lr_at(int64_t epoch) const = 0;
  virtual std::string name() const = 0;

  // {"scheduler", "last_epoch", "base_lrs", "last_lr"} (+ a wrapped schedule's state). Loading
  // restores the counters, not the optimizer's rates (which the optimizer's own state dict holds),
  // as in PyTorch.
  virtual Json state_dict() const;
  virtual void load_state_dict(const Json& state);

 protected:
  explicit LRScheduler(Optimizer& optimizer);
  // Derived constructors call this last: the first step (epoch 0), which sets start_rates().
  void initialize();
  // The rates the first step sets, given the groups' current ones: lr_at(0) by default. PyTorch's
  // chainable schedules (StepLR, MultiStepLR, CosineAnnealingLR, ExponentialLR, MultiplicativeLR,
  // PolynomialLR) keep each group's current rate there instead, which matters when the optimizer's
  // state dict was loaded before the scheduler was built: the resumed rate stays.
  virtual std::vector<double> start_rates(const std::vector<double>& current) const;
  // For those schedules' overrides.
  static std::vector<double> keep(const std::vector<double>& current) { return current; }
  // Sets the rates for `epoch` (OneCycleLR also sets momentum).
  virtual void apply(int64_t epoch, const std::vector<double>& lrs);

  Optimizer& opt_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = -1;
  std::vector<double> last_lr_;
};

// lr = base_lr * gamma^(epoch / step_size)   (integer division)
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);
  std::vector<double> lr_at(int64_t epoch) const override;
  std::string name() const override { return "StepLR"; }

 protected:
  std::vector<double> start_rates(const std::vector<double>& current) const override { return keep(current); }

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = base_lr * gamma^(number of milestones <= epoch)
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);
  std::vector<double> lr_at(int64_t epoch) const override;
  std::string name() const override { return "MultiStepLR"; }

 protected:
  // The current rates, times gamma for each milestone at 0 (PyTorch's chainable form at step 0).
  std::vector<double> start_rates(const std::vector<double>& current) const override;

 private:
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

// lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);
  std::vector<double> lr_at(int64_t epoch) const override;
  std::string name() const override { return "CosineAnnealingLR"; }

 protected:
  std::vector<double> start_rates(const std::vector<double>& current) const override { return keep(current); }

 private:
  int64_t T_max_;
  double eta_min_;
};

struct LinearWarmupOptions {
  int64_t warmup_steps_;              // steps over which the factor rises to 1
  double start_factor_ = 1.0 / 3.0;  // factor at step 0, in (0, 1] (torch LinearLR's default)

  LinearWarmupOptions(int64_t warmup_steps) : warmup_steps_(warmup_steps) {}  // NOLINT
  LinearWarmupOptions& warmup_steps(int64_t v) { warmup_steps_ = v; return *this; }
  LinearWarmupOptions& start_factor(double v) { start_factor_ = v; return *this; }
};

// Linear warm-up: for epoch < W, lr = base_lr * (start_factor + (1 - start_factor) * epoch / W)
// (torch LinearLR with end_factor 1); from epoch W on, the wrapped schedule's rate at epoch - W
// (torch SequentialLR([LinearLR, after], milestones=[W])), or base_lr when nothing is wrapped. The
// wrapped schedule must drive the same optimizer; only the wrapper is stepped.
class LinearWarmup : public LRScheduler {
 public:
  LinearWarmup(Optimizer& optimizer, const LinearWarmupOptions& options, std::shared_ptr<LRScheduler> after = nullptr);
  std::vector<double> lr_at(int64_t epoch) const override;
  std::string name() const override { return "LinearWarmup"; }
  Json state_dict() const override;
  void load_state_dict(const Json& state) override;

 private:
  LinearWarmupOptions options_;
  std::shared_ptr<LRScheduler> after_;
};

enum class AnnealStrategy { Cos, Linear };

struct OneCycleLROptions {
  std::vector<double> max_lrs_;                      // peak rate, one per group (or one for all)
  int64_t total_steps_;                              // steps in the cycle (epochs * steps_per_epoch)
  double pct_start_ = 0.3;                           // fraction of the cycle spent increasing the rate
  AnnealStrategy anneal_strategy_ = AnnealStrategy::Cos;  // cosine or linear annealing
  bool cycle_momentum_ = true;                       // cycle momentum (SGD) or beta1 (Adam) inversely
  double base_momentum_ = 0.85;                      // lowest momentum, reached at the peak rate
  double max_momentum_ = 0.95;                       // highest momentum, at the start and end
  double div_factor_ = 25.0;                         // initial_lr = max_lr / div_factor
  double final_div_factor_ = 1e4;                    // min_lr = initial_lr / final_div_factor
  bool three_phase_ = false;                         // up, symmetric down, then annihilate

  OneCycleLROptions(double max_lr, int64_t total_steps) : max_lrs_{max_lr}, total_steps_(total_steps) {}
  OneCycleLROptions(std::vector<double> max_lrs, int64_t total_steps)
      : max_lrs_(std::move(max_lrs)), total_steps_(total_steps) {}
  OneCycleLROptions& pct_start(double v) { pct_start_ = v; return *this; }
  OneCycleLROptions& anneal_strategy(AnnealStrategy v) { anneal_strategy_ = v; return *this; }
  OneCycleLROptions& cycle_momentum(bool v) { cycle_momentum_ = v; return *this; }
  OneCycleLROptions& base_momentum(double v) { base_momentum_ = v; return *this; }
  OneCycleLROptions& max_momentum(double v) { max_momentum_ = v; return *this; }
  OneCycleLROptions& div_factor(double v) { div_factor_ = v; return *this; }
  OneCycleLROptions& final_div_factor(double v) { final_div_factor_ = v; return *this; }
  OneCycleLROptions& three_phase(bool v) { three_phase_ = v; return *this; }
};

// The 1cycle policy (torch OneCycleLR): from max_lr/div_factor up to max_lr over pct_start of the
// steps, then down to initial_lr/final_div_factor (three_phase: back to initial_lr first, then
// down). Stepping past total_steps is an error. With cycle_momentum the optimizer's momentum (SGD)
// or beta1 (Adam/AdamW) moves inversely between max_momentum and base_momentum; as in PyTorch this
// turns momentum on for an SGD optimizer created without it.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& options);
  std::vector<double> lr_at(int64_t epoch) const override;
  // The momentum (or beta1) of each group at `epoch`; empty without cycle_momentum.
  std::vector<double> momentum_at(int64_t epoch) const;
  std::string name() const override { return "OneCycleLR"; }

 protected:
  void apply(int64_t epoch, const std::vector<double>& lrs) override;

 private:
  struct Phase {
    double end_step;
    int start_lr, end_lr;            // 0 initial, 1 max, 2 min
    int start_momentum, end_momentum;  // 0 max, 1 base
  };
  double anneal(double start, double end, double pct) const;
  // Evaluates phase interpolation for one group; which = 0 for lr, 1 for momentum.
  double at(size_t group, int64_t epoch, int which) const;

  OneCycleLROptions options_;
  std::vector<double> initial_lrs_, max_lrs_, min_lrs_;
  std::vector<Phase> phases_;
};

// Reads or sets the momentum of a group: SGD's and RMSprop's momentum, or beta1 for Adam/AdamW. Returns false
// (get: nullopt) when the options have neither.
std::optional<double> get_momentum(const OptimizerOptions& options);
bool set_momentum(OptimizerOptions& options, double momentum);

}  // namespace minidl::optim
