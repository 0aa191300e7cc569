// optim::LBFGS (torch.optim.LBFGS): limited-memory BFGS over all parameters as one flat vector,
// with PyTorch's algorithm step for step (two-loop recursion over up to history_size curvature
// pairs, the first step scaled by 1 / |g|_1, optional strong-Wolfe line search with cubic
// interpolation, the same stopping tests), so trajectories match torch's. step(closure) re-evaluates
// the loss as often as it needs (up to max_eval times); the closure zeroes the gradients, computes
// the loss, calls backward and returns the loss.
//
//   optim::LBFGS opt(model->parameters(), optim::LBFGSOptions(1.0).line_search_fn("strong_wolfe"));
//   opt.step([&] { opt.zero_grad(); Tensor loss = criterion(model->forward(x), y); loss.backward(); return loss; });
//
// As PyTorch's: one parameter group, all parameters on one device with one dtype; no GradScaler
// (its step takes no closure). The scalars of the recursion and line search are kept in f64 (PyTorch
// keeps some as 0-dim tensors of the parameters' dtype: equal for f64 parameters). Its state_dict
// holds the hyper-parameters and the iteration count (the parameter's "step"); the curvature
// history stays in the optimizer, so a restored LBFGS starts a new history.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "optim/optimizer.h"

namespace minidl::optim {

struct LBFGSOptions : OptimizerOptions {
  int64_t max_iter_ = 20;                 // iterations per step
  std::optional<int64_t> max_eval_;       // closure calls per step (default max_iter * 5 / 4)
  double tolerance_grad_ = 1e-7;          // stop when max |g| is this small
  double tolerance_change_ = 1e-9;        // stop when the loss or the step changes less
  int64_t history_size_ = 100;            // curvature pairs kept
  std::string line_search_fn_;            // "" (a fixed step of lr) or "strong_wolfe"

  LBFGSOptions(double lr = 1.0) { lr_ = lr; }  // NOLINT: implicit, as libtorch
  LBFGSOptions& lr(double v) { lr_ = v; return *this; }
  LBFGSOptions& max_iter(int64_t v) { max_iter_ = v; return *this; }
  LBFGSOptions& max_eval(int64_t v) { max_eval_ = v; return *this; }
  LBFGSOptions& tolerance_grad(double v) { tolerance_grad_ = v; return *this; }
  LBFGSOptions& tolerance_change(double v) { tolerance_change_ = v; return *this; }
  LBFGSOptions& history_size(int64_t v) { history_size_ = v; return *this; }
  LBFGSOptions& line_search_fn(std::string v) { line_search_fn_ = std::move(v); return *this; }
  int64_t effective_max_eval() const { return max_eval_ ? *max_eval_ : max_iter_ * 5 / 4; }

  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<LBFGSOptions>(*this); }
  Json to_json() const override;
  void from_json(const Json& j) override;
};

class LBFGS : public Optimizer {
 public:
  using Closure = std::function<Tensor()>;
  LBFGS(std::vector<Tensor> params, const LBFGSOptions& options = {});
  // One optimization step (up to max_iter iterations); returns the loss of the first evaluation.
  Tensor step(const Closure& closure);
  void step() override;  // an error: LBFGS needs a closure
  int64_t func_evals() const { return func_evals_; }  // closure calls over all steps
  int64_t n_iter() const { return n_iter_; }          // iterations over all steps

 private:
  Tensor flat_grad() const;                       // every gradient flattened, zeros where none
  void add_to_params(double step, const Tensor& direction);  // params += step * direction
  // Loss and flat gradient at x + t d, the parameters left at x.
  std::pair<double, Tensor> evaluate_at(const Closure& closure, const std::vector<Tensor>& x, double t, const Tensor& d);
  struct LineSearchResult {
    double loss;
    Tensor flat_grad;
    double t;
    int64_t evals;
  };
  LineSearchResult strong_wolfe(const Closure& closure, double t, const Tensor& d, double f, const Tensor& g, double gtd);

  std::vector<Tensor> params_;
  int64_t func_evals_ = 0, n_iter_ = 0;
  Tensor d_, prev_flat_grad_;
  double t_ = 0, h_diag_ = 1;
  std::vector<Tensor> old_dirs_, old_stps_;
  std::vector<double> ro_;
};

}  // namespace minidl::optim
