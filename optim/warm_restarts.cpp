#include "optim/warm_restarts.h"

#include <cmath>
#include <numbers>

#include "framework/error.h"

namespace minidl::optim {

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult, double eta_min)
    : LRScheduler(optimizer), T_0_(T_0), T_mult_(T_mult), eta_min_(eta_min) {
  MINIDL_CHECK(T_0 > 0, "CosineAnnealingWarmRestarts", "Expected positive integer T_0, but got ", T_0);
  MINIDL_CHECK(T_mult >= 1, "CosineAnnealingWarmRestarts", "Expected integer T_mult >= 1, but got ", T_mult);
  initialize();
}

std::vector<double> CosineAnnealingWarmRestarts::lr_at(int64_t epoch) const {
  MINIDL_CHECK(epoch >= 0, "CosineAnnealingWarmRestarts", "Expected non-negative epoch, but got ", epoch);
  int64_t t_cur = epoch, t_i = T_0_;
  if (T_mult_ == 1) {
    t_cur = epoch % T_0_;
  } else {
    while (t_cur >= t_i) {  // at most log_{T_mult}(epoch / T_0) + 1 periods
      t_cur -= t_i;
      t_i *= T_mult_;
    }
  }
  const double c = (1.0 + std::cos(std::numbers::pi * static_cast<double>(t_cur) / static_cast<double>(t_i))) / 2.0;
  std::vector<double> out;
  for (double b : base_lrs_) out.push_back(eta_min_ + (b - eta_min_) * c);
  return out;
}

}  // namespace minidl::optim
