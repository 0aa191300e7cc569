// optim::ReduceLROnPlateau: torch.optim.lr_scheduler.ReduceLROnPlateau. Driven by a metric instead
// of the epoch, so it is not an LRScheduler: after `patience` steps without improvement of the
// metric (by `threshold`, relative or absolute) every group's rate is multiplied by `factor`
// (not below its min_lr; a change smaller than eps is skipped), then `cooldown` steps are ignored.
//
//   optim::ReduceLROnPlateau plateau(opt, optim::PlateauOptions().patience(2));
//   for (epoch ...) { train(); plateau.step(validation_loss); }
#pragma once
#include <string>
#include <vector>

#include "framework/json.h"
#include "optim/optimizer.h"

namespace minidl::optim {

enum class PlateauMode { Min, Max };            // the metric should fall (a loss) or rise (an accuracy)
enum class ThresholdMode { Relative, Absolute };

struct PlateauOptions {
  PlateauMode mode_ = PlateauMode::Min;
  double factor_ = 0.1;      // new_lr = lr * factor, in [0, 1)
  int64_t patience_ = 10;    // steps without improvement tolerated before a reduction
  double threshold_ = 1e-4;  // what counts as an improvement
  ThresholdMode threshold_mode_ = ThresholdMode::Relative;
  int64_t cooldown_ = 0;     // steps after a reduction during which bad steps are not counted
  std::vector<double> min_lr_ = {0.0};  // one value for every group, or one per group
  double eps_ = 1e-8;        // a reduction smaller than this is not applied

  PlateauOptions& mode(PlateauMode m) { mode_ = m; return *this; }
  PlateauOptions& factor(double v) { factor_ = v; return *this; }
  PlateauOptions& patience(int64_t v) { patience_ = v; return *this; }
  PlateauOptions& threshold(double v) { threshold_ = v; return *this; }
  PlateauOptions& threshold_mode(ThresholdMode m) { threshold_mode_ = m; return *this; }
  PlateauOptions& cooldown(int64_t v) { cooldown_ = v; return *this; }
  PlateauOptions& min_lr(double v) { min_lr_ = {v}; return *this; }
  PlateauOptions& min_lr(std::vector<double> v) { min_lr_ = std::move(v); return *this; }
  PlateauOptions& eps(double v) { eps_ = v; return *this; }
};

class ReduceLROnPlateau {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer, const PlateauOptions& options = {});
  // Records one value of the metric; may reduce the rates.
  void step(double metric);
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  double best() const { return best_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  int64_t cooldown_counter() const { return cooldown_counter_; }
  int64_t last_epoch() const { return last_epoch_; }

  // {"scheduler", "best", "num_bad_epochs", "cooldown_counter", "last_epoch", "last_lr"}
  Json state_dict() const;
  void load_state_dict(const Json& state);

 private:
  bool is_better(double a) const;

  Optimizer& opt_;
  PlateauOptions options_;
  std::vector<double> min_lrs_;  // one per group
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
  std::vector<double> last_lr_;
};

}  // namespace minidl::optim
