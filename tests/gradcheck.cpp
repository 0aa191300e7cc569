#include "gradcheck.h"

#include <cmath>
#include <random>
#include <sstream>

namespace minidl::testing {

std::vector<Tensor> make_inputs(const GradCase& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(c.lo, c.hi);
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    std::vector<double> v(numel_of(c.shapes[i]));
    for (double& x : v) x = u(rng);
    Tensor t = from_vector(v, c.shapes[i]);
    bool diff = c.differentiable.empty() || c.differentiable[i];
    if (diff) t.requires_grad_(true);
    inputs.push_back(t);
  }
  return inputs;
}

Tensor project(const Tensor& y, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  std::vector<double> w(y.numel());
  for (double& x : w) x = u(rng);
  return sum(mul(y, from_vector(w, y.shape())));
}

namespace {
bool is_diff(const std::vector<bool>& d, size_t i) { return d.empty() || d[i]; }

double scalar_of(const TensorFn& fn, const std::vector<Tensor>& inputs) {
  NoGradGuard ng;
  return project(fn(inputs), 99).item();
}

// Numeric gradient of scalar f over inputs[i], perturbing the f64 storage in place.
Tensor numeric_grad(const std::function<double()>& f, const Tensor& x, double eps) {
  Tensor g = zeros(x.shape(), DType::F64);
  double* gp = g.data_ptr<double>();
  double* xp = x.data_ptr<double>();
  for (int64_t k = 0; k < x.numel(); ++k) {
    const double orig = xp[k];
    xp[k] = orig + eps;
    const double fp = f();
    xp[k] = orig - eps;
    const double fm = f();
    xp[k] = orig;
    gp[k] = (fp - fm) / (2 * eps);
  }
  return g;
}

std::string compare(const std::string& what, size_t i, const Tensor& analytic, const Tensor& numeric, double tol) {
  if (analytic.shape() != numeric.shape() || analytic.dtype() != numeric.dtype()) {
    std::ostringstream os;
    os << what << ": input " << i << ": gradient is " << analytic.meta_str() << ", expected " << numeric.meta_str();
    return os.str();
  }
  std::vector<double> a = analytic.to_vector<double>(), n = numeric.to_vector<double>();
  for (size_t k = 0; k < a.size(); ++k) {
    const double err = std::abs(a[k] - n[k]) / std::max(1.0, std::abs(n[k]));
    if (!(err <= tol)) {
      std::ostringstream os;
      os << what << ": input " << i << " element " << k << ": analytic " << a[k] << " vs numeric " << n[k]
         << " (error " << err << " > " << tol << ")";
      return os.str();
    }
  }
  return "";
}
}  // namespace

std::string check_gradients(const TensorFn& fn, const std::vector<Tensor>& inputs, double eps, double tol,
                            const std::vector<bool>& differentiable) {
  Tensor loss = project(fn(inputs), 99);
  std::vector<Tensor> diff_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) if (is_diff(differentiable, i)) diff_inputs.push_back(inputs[i]);
  std::vector<Tensor> grads = autograd::grad({loss}, diff_inputs, {}, false, false, true);
  size_t j = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!is_diff(differentiable, i)) continue;
    Tensor analytic = grads[j++];
    if (!analytic.defined()) analytic = zeros(inputs[i].shape(), DType::F64);
    Tensor numeric = numeric_grad([&] { return scalar_of(fn, inputs); }, inputs[i], eps);
    std::string err = compare("first order", i, analytic, numeric, tol);
    if (!err.empty()) return err;
  }
  return "";
}

std::string check_second_order(const TensorFn& fn, const std::vector<Tensor>& inputs, double eps, double tol,
                               const std::vector<bool>& differentiable) {
  std::vector<Tensor> diff_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) if (is_diff(differentiable, i)) diff_inputs.push_back(inputs[i]);
  // h(x) = sum_i <dL/dx_i, v_i>, a scalar whose gradient needs second derivatives of fn.
  auto h = [&](bool create) {
    Tensor loss = project(fn(inputs), 99);
    std::vector<Tensor> g = autograd::grad({loss}, diff_inputs, {}, true, create, true);
    Tensor total = zeros({}, DType::F64);
    for (size_t k = 0; k < g.size(); ++k)
      if (g[k].defined()) total = add(total, project(g[k], 7 + k));
    return total;
  };
  Tensor hv = h(true);
  if (!hv.requires_grad()) return "";  // gradient is constant in the inputs (e.g. linear ops)
  std::vector<Tensor> grads = autograd::grad({hv}, diff_inputs, {}, false, false, true);
  size_t j = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!is_diff(differentiable, i)) continue;
    Tensor analytic = grads[j++];
    if (!analytic.defined()) analytic = zeros(inputs[i].shape(), DType::F64);
    Tensor numeric = numeric_grad([&] { return h(false).item(); }, inputs[i], eps);
    std::string err = compare("second order", i, analytic, numeric, tol);
    if (!err.empty()) return err;
  }
  return "";
}

std::string run_case(const GradCase& c) {
  std::vector<Tensor> inputs = make_inputs(c);
  std::string err = check_gradients(c.fn, inputs, c.eps, c.tol, c.differentiable);
  if (err.empty() && c.second_order) err = check_second_order(c.fn, inputs, std::sqrt(c.eps) * 1e-2, c.tol * 100, c.differentiable);
  return err.empty() ? err : c.name + ": " + err;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double m = 0;
  for (size_t k = 0; k < x.size(); ++k) m = std::max(m, std::abs(x[k] - y[k]));
  return m;
}

}  // namespace minidl::testing
