// Cyclical learning rates (torch CyclicLR, Smith 2017): each group's rate climbs from base_lr to
// max_lr over step_size_up steps and falls back over step_size_down, cycle after cycle; the
// amplitude is scaled per cycle (triangular: 1; triangular2: halved each cycle) or per step
// (exp_range: gamma^step), or by a function of the user's. Stepped once per batch. With
// cycle_momentum the momentum (SGD, RMSprop) or beta1 (Adam, AdamW: PyTorch 2.x; 1.13 refuses them)
// moves the other way, between max_momentum and base_momentum. As PyTorch, building it sets each
// group's rate to base_lr.
//   optim::CyclicLR sched(opt, optim::CyclicLROptions(0.001, 0.1).step_size_up(500).mode(optim::CyclicMode::Triangular2));
#pragma once
#include <functional>
#include <vector>

#include "optim/scheduler.h"

namespace minidl::optim {

enum class CyclicMode { Triangular, Triangular2, ExpRange };

struct CyclicLROptions {
  std::vector<double> base_lrs_, max_lrs_;  // one for every group, or one per group
  double step_size_up_ = 2000;              // steps of the rising half of a cycle
  std::optional<double> step_size_down_;    // of the falling half (default: step_size_up)
  CyclicMode mode_ = CyclicMode::Triangular;
  double gamma_ = 1.0;                      // exp_range's factor per step
  std::function<double(double)> scale_fn_;  // replaces the mode's amplitude scale when set
  bool scale_by_cycle_ = true;              // scale_fn of the cycle number (else of the step)
  bool cycle_momentum_ = true;
  double base_momentum_ = 0.8, max_momentum_ = 0.9;

  CyclicLROptions(double base_lr, double max_lr) : base_lrs_{base_lr}, max_lrs_{max_lr} {}
  CyclicLROptions(std::vector<double> base_lrs, std::vector<double> max_lrs)
      : base_lrs_(std::move(base_lrs)), max_lrs_(std::move(max_lrs)) {}
  CyclicLROptions& step_size_up(double v) { step_size_up_ = v; return *this; }
  CyclicLROptions& step_size_down(double v) { step_size_down_ = v; return *this; }
  CyclicLROptions& mode(CyclicMode v) { mode_ = v; return *this; }
  CyclicLROptions& gamma(double v) { gamma_ = v; return *this; }
  // PyTorch's scale_fn and scale_mode ("cycle": by_cycle true, "iterations": false).
  CyclicLROptions& scale_fn(std::function<double(double)> f, bool by_cycle = true) {
    scale_fn_ = std::move(f);
    scale_by_cycle_ = by_cycle;
    return *this;
  }
  CyclicLROptions& cycle_momentum(bool v) { cycle_momentum_ = v; return *this; }
  CyclicLROptions& base_momentum(double v) { base_momentum_ = v; return *this; }
  CyclicLROptions& max_momentum(double v) { max_momentum_ = v; return *this; }
};

class CyclicLR : public LRScheduler {
 public:
  CyclicLR(Optimizer& optimizer, const CyclicLROptions& options);
  std::vector<double> lr_at(int64_t epoch) const override;
  // Each group's momentum (or beta1) at `epoch`; empty without cycle_momentum.
  std::vector<double> momentum_at(int64_t epoch) const;
  std::string name() const override { return "CyclicLR"; }

 protected:
  void apply(int64_t epoch, const std::vector<double>& lrs) override;

 private:
  // The position in the cycle (0 at base_lr, 1 at max_lr) and the amplitude's scale at `epoch`.
  std::pair<double, double> shape_at(int64_t epoch) const;

  CyclicLROptions options_;
  std::vector<double> max_lrs_;
  double total_size_, step_ratio_;
};

}  // namespace minidl::optim
