// Learning-rate schedules that scale each group's base rate by a factor of the epoch
// (torch.optim.lr_scheduler): ExponentialLR, ConstantLR, LinearLR, PolynomialLR, LambdaLR and
// MultiplicativeLR. As the schedules of optim/scheduler.h they are closed forms of the epoch, so a
// schedule resumed from its state dict continues exactly; PyTorch's recursive forms (each step
// multiplies the current rate) agree with them up to rounding while nothing else changes the rates.
//
//   optim::SGD opt(model->parameters(), optim::SGDOptions(0.1));
//   optim::LinearLR warmup(opt, /*start_factor=*/0.1, /*end_factor=*/1.0, /*total_iters=*/500);
#pragma once
#include <functional>
#include <vector>

#include "optim/scheduler.h"

namespace minidl::optim {

// lr = base_lr * factor(group, epoch).
class FactorScheduler : public LRScheduler {
 public:
  std::vector<double> lr_at(int64_t epoch) const override;

 protected:
  using LRScheduler::LRScheduler;
  virtual double factor(size_t group, int64_t epoch) const = 0;
};

// lr = base_lr * gamma^epoch
class ExponentialLR : public FactorScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);
  std::string name() const override { return "ExponentialLR"; }

 protected:
  std::vector<double> start_rates(const std::vector<double>& current) const override { return keep(current); }
  double factor(size_t group, int64_t epoch) const override;

 private:
  double gamma_;
};

// lr = base_lr * factor for epoch < total_iters, then base_lr. factor in [0, 1].
class ConstantLR : public FactorScheduler {
 public:
  explicit ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3.0, int64_t total_iters = 5);
  std::string name() const override { return "ConstantLR"; }

 protected:
  double factor(size_t group, int64_t epoch) const override;

 private:
  double factor_;
  int64_t total_iters_;
};

// lr = base_lr * (start + (end - start) * min(epoch, total_iters) / total_iters); start in (0, 1],
// end in [0, 1].
class LinearLR : public FactorScheduler {
 public:
  explicit LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3.0, double end_factor = 1.0,
                    int64_t total_iters = 5);
  std::string name() const override { return "LinearLR"; }

 protected:
  double factor(size_t group, int64_t epoch) const override;

 private:
  double start_, end_;
  int64_t total_iters_;
};

// lr = base_lr * (1 - min(epoch, total_iters) / total_iters)^power
class PolynomialLR : public FactorScheduler {
 public:
  explicit PolynomialLR(Optimizer& optimizer, int64_t total_iters = 5, double power = 1.0);
  std::string name() const override { return "PolynomialLR"; }

 protected:
  std::vector<double> start_rates(const std::vector<double>& current) const override { return keep(current); }
  double factor(size_t group, int64_t epoch) const override;

 private:
  int64_t total_iters_;
  double power_;
};

// A user's factor of the epoch: one for every group, or one per group.
using LRLambda = std::function<double(int64_t epoch)>;

// lr = base_lr * lambda(epoch). The state dict holds the counters, not the functions (PyTorch saves
// only callable objects' attributes; a C++ function has none to save).
class LambdaLR : public FactorScheduler {
 public:
  LambdaLR(Optimizer& optimizer, LRLambda lr_lambda);
  LambdaLR(Optimizer& optimizer, std::vector<LRLambda> lr_lambdas);
  std::string name() const override { return "LambdaLR"; }

 protected:
  double factor(size_t group, int64_t epoch) const override;

 private:
  std::vector<LRLambda> lambdas_;
};

// lr = base_lr * lambda(1) * lambda(2) * ... * lambda(epoch) (PyTorch multiplies the current rate
// by lambda(epoch) at each step after the first). The products are kept as they are computed, so
// each step costs one call per group.
class MultiplicativeLR : public FactorScheduler {
 public:
  MultiplicativeLR(Optimizer& optimizer, LRLambda lr_lambda);
  MultiplicativeLR(Optimizer& optimizer, std::vector<LRLambda> lr_lambdas);
  std::string name() const override { return "MultiplicativeLR"; }

 protected:
  std::vector<double> start_rates(const std::vector<double>& current) const override { return keep(current); }
  double factor(size_t group, int64_t epoch) const override;

 private:
  std::vector<LRLambda> lambdas_;
  mutable std::vector<std::vector<double>> products_;  // products_[g][e]: the factor at epoch e
};

}  // namespace minidl::optim
