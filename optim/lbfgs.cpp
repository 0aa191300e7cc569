// optim::LBFGS: torch.optim.LBFGS's step and _strong_wolfe line search in ops on the flattened
// parameters and gradients.
#include "optim/lbfgs.h"

#include <algorithm>
#include <cmath>

#include "framework/error.h"
#include "framework/grad_mode.h"
#include "ops/ops.h"

namespace minidl::optim {

namespace {
// The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to bounds (by default
// the two points); their midpoint when the cubic has none. PyTorch's _cubic_interpolate.
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds = std::nullopt) {
  const auto [lo, hi] = bounds ? *bounds : (x1 <= x2 ? std::make_pair(x1, x2) : std::make_pair(x2, x1));
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square >= 0) {
    const double d2 = std::sqrt(d2_square);
    const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                    : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
    return std::min(std::max(min_pos, lo), hi);
  }
  return (lo + hi) / 2.0;
}

double dot_value(const Tensor& a, const Tensor& b) { return dot(a, b).item(); }
double abs_max(const Tensor& a) { return amax(abs(a)).item(); }
}  // namespace

Json LBFGSOptions::to_json() const {
  Json j = Json::object();
  j["lr"] = lr_;
  j["max_iter"] = max_iter_;
  j["max_eval"] = effective_max_eval();
  j["tolerance_grad"] = tolerance_grad_;
  j["tolerance_change"] = tolerance_change_;
  j["history_size"] = history_size_;
  j["line_search_fn"] = line_search_fn_.empty() ? Json(nullptr) : Json(line_search_fn_);  // PyTorch's None
  return j;
}

void LBFGSOptions::from_json(const Json& j) {
  lr_ = j.get("lr", lr_);
  max_iter_ = j.get("max_iter", max_iter_);
  if (j.find("max_eval")) max_eval_ = j.get("max_eval", effective_max_eval());  // saved resolved
  tolerance_grad_ = j.get("tolerance_grad", tolerance_grad_);
  tolerance_change_ = j.get("tolerance_change", tolerance_change_);
  history_size_ = j.get("history_size", history_size_);
  if (const Json* f = j.find("line_search_fn")) line_search_fn_ = f->is_null() ? "" : f->as_string();
}

LBFGS::LBFGS(std::vector<Tensor> params, const LBFGSOptions& o)
    : Optimizer("LBFGS", single_group(params), o.clone()), params_(std::move(params)) {
  MINIDL_CHECK(o.lr_ > 0.0, "LBFGS", "Invalid learning rate: ", o.lr_);
  MINIDL_CHECK(o.max_iter_ >= 1 && o.effective_max_eval() >= 1, "LBFGS", "max_iter and max_eval must be positive, got ",
               o.max_iter_, " and ", o.effective_max_eval());
  MINIDL_CHECK(o.history_size_ >= 1, "LBFGS", "history_size must be positive, got ", o.history_size_);
  MINIDL_CHECK(o.line_search_fn_.empty() || o.line_search_fn_ == "strong_wolfe", "LBFGS",
               "only 'strong_wolfe' is supported, got '", o.line_search_fn_, "'");
  for (const Tensor& p : params_) {
    MINIDL_CHECK(p.is_floating_point() && p.dtype() == params_[0].dtype() && p.device() == params_[0].device(), "LBFGS",
                 "every parameter must be floating point, with one dtype on one device; got ", p.meta_str(), " and ",
                 params_[0].meta_str());
  }
}

void LBFGS::step() { MINIDL_FAIL("LBFGS", "step needs a closure that re-evaluates the loss: step(closure)"); }

Tensor LBFGS::flat_grad() const {
  std::vector<Tensor> views;
  for (const Tensor& p : params_)
    views.push_back(p.grad().defined() ? p.grad().reshape({-1}) : zeros({p.numel()}, TensorOptions(p.dtype()).device(p.device())));
  return cat(views, 0);
}

void LBFGS::add_to_params(double step, const Tensor& direction) {
  int64_t offset = 0;
  for (const Tensor& p : params_) {
    p.add_(mul(direction.narrow(0, offset, p.numel()).reshape(p.shape()), step));
    offset += p.numel();
  }
}

std::pair<double, Tensor> LBFGS::evaluate_at(const Closure& closure, const std::vector<Tensor>& x, double t, const Tensor& d) {
  add_to_params(t, d);
  double loss;
  {
    EnableGradGuard grad;
    loss = closure().item();
  }
  Tensor g = flat_grad();
  for (size_t i = 0; i < params_.size(); ++i) params_[i].copy_(x[i]);
  return {loss, g};
}

LBFGS::LineSearchResult LBFGS::strong_wolfe(const Closure& closure, double t, const Tensor& d, double f, const Tensor& g,
                                            double gtd) {
  constexpr double c1 = 1e-4, c2 = 0.9, tolerance_change = 1e-9;
  constexpr int64_t max_ls = 25;
  std::vector<Tensor> x;
  for (const Tensor& p : params_) x.push_back(p.clone());
  const double d_norm = abs_max(d);
  auto [f_new, g_new] = evaluate_at(closure, x, t, d);
  int64_t evals = 1;
  double gtd_new = dot_value(g_new, d);
  double t_prev = 0, f_prev = f, gtd_prev = gtd;
  Tensor g_prev = g;
  bool done = false;
  int64_t ls_iter = 0;
  // The bracket: one or two points (step, loss, gradient, directional derivative).
  std::vector<double> bracket, bracket_f, bracket_gtd;
  std::vector<Tensor> bracket_g;
  while (ls_iter < max_ls) {
    if (f_new > f + c1 * t * gtd || (ls_iter > 1 && f_new >= f_prev)) {
      bracket = {t_prev, t}, bracket_f = {f_prev, f_new}, bracket_g = {g_prev, g_new}, bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    if (std::abs(gtd_new) <= -c2 * gtd) {
      bracket = {t}, bracket_f = {f_new}, bracket_g = {g_new};
      done = true;
      break;
    }
    if (gtd_new >= 0) {
      bracket = {t_prev, t}, bracket_f = {f_prev, f_new}, bracket_g = {g_prev, g_new}, bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    const double min_step = t + 0.01 * (t - t_prev), max_step = t * 10, previous = t;
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, std::make_pair(min_step, max_step));
    t_prev = previous, f_prev = f_new, g_prev = g_new, gtd_prev = gtd_new;
    std::tie(f_new, g_new) = evaluate_at(closure, x, t, d);
    ++evals;
    gtd_new = dot_value(g_new, d);
    ++ls_iter;
  }
  if (ls_iter == max_ls) bracket = {0, t}, bracket_f = {f, f_new}, bracket_g = {g, g_new};

  // Zoom: shrink the bracket until a point meets the strong Wolfe conditions.
  bool insufficient_progress = false;
  size_t low = bracket_f.front() <= bracket_f.back() ? 0 : 1, high = 1 - low;
  while (!done && ls_iter < max_ls) {
    if (std::abs(bracket[1] - bracket[0]) * d_norm < tolerance_change) break;
    t = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]);
    const double top = std::max(bracket[0], bracket[1]), bottom = std::min(bracket[0], bracket[1]);
    const double eps = 0.1 * (top - bottom);
    if (std::min(top - t, t - bottom) < eps) {
      // Too close to an end: move away from it, unless the last step made progress.
      if (insufficient_progress || t >= top || t <= bottom) {
        t = std::abs(t - top) < std::abs(t - bottom) ? top - eps : bottom + eps;
        insufficient_progress = false;
      } else {
        insufficient_progress = true;
      }
    } else {
      insufficient_progress = false;
    }
    std::tie(f_new, g_new) = evaluate_at(closure, x, t, d);
    ++evals;
    gtd_new = dot_value(g_new, d);
    ++ls_iter;
    if (f_new > f + c1 * t * gtd || f_new >= bracket_f[low]) {
      bracket[high] = t, bracket_f[high] = f_new, bracket_g[high] = g_new, bracket_gtd[high] = gtd_new;
      low = bracket_f[0] <= bracket_f[1] ? 0 : 1, high = 1 - low;
    } else {
      if (std::abs(gtd_new) <= -c2 * gtd) {
        done = true;
      } else if (gtd_new * (bracket[high] - bracket[low]) >= 0) {
        bracket[high] = bracket[low], bracket_f[high] = bracket_f[low], bracket_g[high] = bracket_g[low],
        bracket_gtd[high] = bracket_gtd[low];
      }
      bracket[low] = t, bracket_f[low] = f_new, bracket_g[low] = g_new, bracket_gtd[low] = gtd_new;
    }
  }
  return {bracket_f[low], bracket_g[low], bracket[low], evals};
}

Tensor LBFGS::step(const Closure& closure) {
  MINIDL_CHECK(static_cast<bool>(closure), "LBFGS", "step needs a closure");
  NoGradGuard no_grad;
  const auto& o = options_of<LBFGSOptions>(param_groups()[0]);
  const double lr = o.lr_, tolerance_change = o.tolerance_change_;
  Tensor orig_loss;
  {
    EnableGradGuard grad;
    orig_loss = closure();
  }
  MINIDL_CHECK(orig_loss.defined() && orig_loss.numel() == 1, "LBFGS", "the closure must return the loss, a one-element tensor");
  double loss = orig_loss.item();
  int64_t current_evals = 1;
  ++func_evals_;
  Tensor g = flat_grad();
  bool opt_cond = abs_max(g) <= o.tolerance_grad_;
  if (opt_cond) return orig_loss;

  double prev_loss = loss;
  for (int64_t n_iter = 1; n_iter <= o.max_iter_; ++n_iter) {
    ++n_iter_;
    state(params_[0]).step = n_iter_;
    if (n_iter_ == 1) {
      d_ = neg(g);
      old_dirs_.clear(), old_stps_.clear(), ro_.clear();
      h_diag_ = 1;
    } else {
      // Update the curvature pairs, then d = -H g by the two-loop recursion.
      const Tensor y = sub(g, prev_flat_grad_), s = mul(d_, t_);
      const double ys = dot_value(y, s);
      if (ys > 1e-10) {
        if (static_cast<int64_t>(old_dirs_.size()) == o.history_size_) {
          old_dirs_.erase(old_dirs_.begin()), old_stps_.erase(old_stps_.begin()), ro_.erase(ro_.begin());
        }
        old_dirs_.push_back(y), old_stps_.push_back(s), ro_.push_back(1.0 / ys);
        h_diag_ = ys / dot_value(y, y);
      }
      const size_t num_old = old_dirs_.size();
      std::vector<double> al(num_old);
      Tensor q = neg(g);
      for (size_t i = num_old; i-- > 0;) {
        al[i] = dot_value(old_stps_[i], q) * ro_[i];
        q = sub(q, mul(old_dirs_[i], al[i]));
      }
      Tensor r = mul(q, h_diag_);
      for (size_t i = 0; i < num_old; ++i) {
        const double be_i = dot_value(old_dirs_[i], r) * ro_[i];
        r = add(r, mul(old_stps_[i], al[i] - be_i));
      }
      d_ = r;
    }
    prev_flat_grad_ = g.clone();
    prev_loss = loss;
    // The first step of all is scaled so that it moves by at most lr in the 1-norm of g.
    t_ = n_iter_ == 1 ? std::min(1.0, 1.0 / sum(abs(g)).item()) * lr : lr;
    const double gtd = dot_value(g, d_);
    if (gtd > -tolerance_change) break;  // not a descent direction

    int64_t ls_evals = 0;
    if (o.line_search_fn_ == "strong_wolfe") {
      LineSearchResult ls = strong_wolfe(closure, t_, d_, loss, g, gtd);
      loss = ls.loss, g = ls.flat_grad, t_ = ls.t, ls_evals = ls.evals;
      add_to_params(t_, d_);
      opt_cond = abs_max(g) <= o.tolerance_grad_;
    } else {
      add_to_params(t_, d_);
      if (n_iter != o.max_iter_) {
        {
          EnableGradGuard grad;
          loss = closure().item();
        }
        g = flat_grad();
        opt_cond = abs_max(g) <= o.tolerance_grad_;
        ls_evals = 1;
      }
    }
    current_evals += ls_evals;
    func_evals_ += ls_evals;

    if (n_iter == o.max_iter_) break;
    if (current_evals >= o.effective_max_eval()) break;
    if (opt_cond) break;
    if (abs_max(mul(d_, t_)) <= tolerance_change) break;  // the step is negligible
    if (std::abs(loss - prev_loss) < tolerance_change) break;  // so is the change in loss
  }
  return orig_loss;
}

}  // namespace minidl::optim
