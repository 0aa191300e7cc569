// Closed forms of torch.optim.lr_scheduler's factor schedules, with PyTorch's argument checks.
#include "optim/factor_schedulers.h"

#include <algorithm>
#include <cmath>

#include "framework/error.h"

namespace minidl::optim {

namespace {
// min(epoch, total) / total as a double.
double progress(int64_t epoch, int64_t total) {
  return static_cast<double>(std::min(epoch, total)) / static_cast<double>(total);
}

// One function per group: a single one serves every group; else one each.
std::vector<LRLambda> per_group(const char* op, const Optimizer& opt, std::vector<LRLambda> fs) {
  const size_t groups = opt.param_groups().size();
  if (fs.size() == 1) fs.resize(groups, fs[0]);
  MINIDL_CHECK(fs.size() == groups, op, "expected ", groups, " lr_lambdas (one per param group), got ", fs.size());
  for (const LRLambda& f : fs) MINIDL_CHECK(static_cast<bool>(f), op, "an lr_lambda is empty");
  return fs;
}
}  // namespace

std::vector<double> FactorScheduler::lr_at(int64_t epoch) const {
  std::vector<double> out;
  for (size_t g = 0; g < base_lrs_.size(); ++g) out.push_back(base_lrs_[g] * factor(g, epoch));
  return out;
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : FactorScheduler(optimizer), gamma_(gamma) {
  initialize();
}

double ExponentialLR::factor(size_t, int64_t epoch) const { return std::pow(gamma_, static_cast<double>(epoch)); }

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters)
    : FactorScheduler(optimizer), factor_(factor), total_iters_(total_iters) {
  MINIDL_CHECK(factor >= 0.0 && factor <= 1.0, "ConstantLR",
               "Constant multiplicative factor expected to be between 0 and 1, got ", factor);
  MINIDL_CHECK(total_iters >= 0, "ConstantLR", "total_iters must be non-negative, got ", total_iters);
  initialize();
}

// total_iters 0 keeps the factor for good: PyTorch's chained form multiplies by it at step 0 and
// undoes it only at step == total_iters, which it never reaches again.
double ConstantLR::factor(size_t, int64_t epoch) const {
  return epoch < total_iters_ || total_iters_ == 0 ? factor_ : 1.0;
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : FactorScheduler(optimizer), start_(start_factor), end_(end_factor), total_iters_(total_iters) {
  MINIDL_CHECK(start_factor > 0.0 && start_factor <= 1.0, "LinearLR",
               "Starting multiplicative factor expected to be greater than 0 and less or equal to 1, got ", start_factor);
  MINIDL_CHECK(end_factor >= 0.0 && end_factor <= 1.0, "LinearLR",
               "Ending multiplicative factor expected to be between 0 and 1, got ", end_factor);
  MINIDL_CHECK(total_iters > 0, "LinearLR", "total_iters must be positive, got ", total_iters);
  initialize();
}

double LinearLR::factor(size_t, int64_t epoch) const { return start_ + (end_ - start_) * progress(epoch, total_iters_); }

PolynomialLR::PolynomialLR(Optimizer& optimizer, int64_t total_iters, double power)
    : FactorScheduler(optimizer), total_iters_(total_iters), power_(power) {
  MINIDL_CHECK(total_iters > 0, "PolynomialLR", "total_iters must be positive, got ", total_iters);
  initialize();
}

double PolynomialLR::factor(size_t, int64_t epoch) const {
  return std::pow(1.0 - progress(epoch, total_iters_), power_);
}

LambdaLR::LambdaLR(Optimizer& optimizer, LRLambda lr_lambda)
    : LambdaLR(optimizer, std::vector<LRLambda>{std::move(lr_lambda)}) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<LRLambda> lr_lambdas)
    : FactorScheduler(optimizer), lambdas_(per_group("LambdaLR", optimizer, std::move(lr_lambdas))) {
  initialize();
}

double LambdaLR::factor(size_t group, int64_t epoch) const { return lambdas_[group](epoch); }

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, LRLambda lr_lambda)
    : MultiplicativeLR(optimizer, std::vector<LRLambda>{std::move(lr_lambda)}) {}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, std::vector<LRLambda> lr_lambdas)
    : FactorScheduler(optimizer), lambdas_(per_group("MultiplicativeLR", optimizer, std::move(lr_lambdas))) {
  products_.assign(lambdas_.size(), std::vector<double>{1.0});
  initialize();
}

double MultiplicativeLR::factor(size_t group, int64_t epoch) const {
  MINIDL_CHECK(epoch >= 0, "MultiplicativeLR", "epoch must be non-negative, got ", epoch);
  std::vector<double>& p = products_[group];
  while (static_cast<int64_t>(p.size()) <= epoch) {
    const int64_t e = static_cast<int64_t>(p.size());
    p.push_back(p.back() * lambdas_[group](e));
  }
  return p[static_cast<size_t>(epoch)];
}

}  // namespace minidl::optim
