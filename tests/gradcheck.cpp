#include "gradcheck.h"

#include <cmath>
#include <random>
#include <sstream>

namespace minidl::testing {

std::vector<Tensor> make_inputs(const GradCase& c, uint64_t seed, const Target& t) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(c.lo, c.hi);
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    std::vector<double> v(numel_of(c.shapes[i]));
    for (double& x : v) x = u(rng);
    Tensor r = from_vector(v, c.shapes[i]).to(t.dtype).to(t.dev());
    bool diff = c.differentiable.empty() || c.differentiable[i];
    if (diff) r.requires_grad_(true);
    inputs.push_back(r);
  }
  return inputs;
}

Tensor project(const Tensor& y, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  std::vector<double> w(y.numel());
  for (double& x : w) x = u(rng);
  return sum(mul(y, from_vector(w, y.shape()).to(y.device())));
}

namespace {
bool is_diff(const std::vector<bool>& d, size_t i) { return d.empty() || d[i]; }

using ScalarFn = std::function<double(const std::vector<Tensor>&)>;

// Central differences of f over inputs[i]: one element of a CPU f64 copy is perturbed at a time,
// and f is evaluated on the inputs with inputs[i] replaced by a fresh leaf holding that copy on
// inputs[i]'s device (requiring grad as inputs[i] does, so f may differentiate through it).
Tensor numeric_grad(const ScalarFn& f, const std::vector<Tensor>& inputs, size_t i, double eps) {
  const Tensor& x = inputs[i];
  Tensor host = x.detach().to(Device::cpu()).contiguous().clone();
  double* xp = host.data_ptr<double>();
  std::vector<Tensor> args = inputs;
  auto at = [&](int64_t k, double v) {
    xp[k] = v;
    args[i] = (x.device().is_cpu() ? host.clone() : host.to(x.device())).requires_grad_(x.requires_grad());
    return f(args);
  };
  Tensor g = zeros(x.shape(), DType::F64);
  double* gp = g.data_ptr<double>();
  for (int64_t k = 0; k < x.numel(); ++k) {
    const double orig = xp[k];
    const double fp = at(k, orig + eps), fm = at(k, orig - eps);
    xp[k] = orig;
    gp[k] = (fp - fm) / (2 * eps);
  }
  return g;
}

// "" when every element of got is within tol of want, relative to max(1, |want|).
std::string compare_values(const std::string& what, const Tensor& got, const Tensor& want, double tol) {
  std::ostringstream os;
  if (got.shape() != want.shape()) {
    os << what << ": " << got.meta_str() << ", expected shape " << shape_str(want.shape());
    return os.str();
  }
  std::vector<double> a = got.to_vector<double>(), n = want.to_vector<double>();
  for (size_t k = 0; k < a.size(); ++k) {
    const double err = std::abs(a[k] - n[k]) / std::max(1.0, std::abs(n[k]));
    if (!(err <= tol)) {
      os << what << " element " << k << ": " << a[k] << " vs " << n[k] << " (error " << err << " > " << tol << ")";
      return os.str();
    }
  }
  return "";
}

std::string compare(const std::string& what, size_t i, const Tensor& analytic, const Tensor& numeric, double tol) {
  if (analytic.shape() != numeric.shape() || analytic.dtype() != numeric.dtype()) {
    std::ostringstream os;
    os << what << ": input " << i << ": gradient is " << analytic.meta_str() << ", expected " << numeric.meta_str();
    return os.str();
  }
  return compare_values(what + ": input " + std::to_string(i) + " analytic vs numeric,", analytic, numeric, tol);
}

std::vector<Tensor> differentiable_of(const std::vector<Tensor>& inputs, const std::vector<bool>& differentiable) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (is_diff(differentiable, i)) out.push_back(inputs[i]);
  return out;
}

// Compares `analytic` (one entry per differentiable input; undefined = zero) with the numeric
// gradient of f over each differentiable input.
std::string compare_with_numeric(const std::string& what, const ScalarFn& f, const std::vector<Tensor>& inputs,
                                 const std::vector<Tensor>& analytic, double eps, double tol,
                                 const std::vector<bool>& differentiable) {
  size_t j = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!is_diff(differentiable, i)) continue;
    Tensor a = analytic[j++];
    if (!a.defined()) a = zeros(inputs[i].shape(), DType::F64);
    std::string err = compare(what, i, a, numeric_grad(f, inputs, i, eps), tol);
    if (!err.empty()) return err;
  }
  return "";
}
}  // namespace

std::string check_gradients(const TensorFn& fn, const std::vector<Tensor>& inputs, double eps, double tol,
                            const std::vector<bool>& differentiable) {
  Tensor loss = project(fn(inputs), 99);
  std::vector<Tensor> grads = autograd::grad({loss}, differentiable_of(inputs, differentiable), {}, false, false, true);
  auto f = [&](const std::vector<Tensor>& in) {
    NoGradGuard ng;
    return project(fn(in), 99).item();
  };
  return compare_with_numeric("first order", f, inputs, grads, eps, tol, differentiable);
}

std::string check_second_order(const TensorFn& fn, const std::vector<Tensor>& inputs, double eps, double tol,
                               const std::vector<bool>& differentiable) {
  // h(x) = sum_i <dL/dx_i, v_i>, a scalar whose gradient needs second derivatives of fn.
  auto h = [&](const std::vector<Tensor>& in, bool create) {
    Tensor loss = project(fn(in), 99);
    std::vector<Tensor> g = autograd::grad({loss}, differentiable_of(in, differentiable), {}, true, create, true);
    Tensor total = zeros({}, TensorOptions(DType::F64).device(loss.device()));
    for (size_t k = 0; k < g.size(); ++k)
      if (g[k].defined()) total = add(total, project(g[k], 7 + k));
    return total;
  };
  Tensor hv = h(inputs, true);
  if (!hv.requires_grad()) return "";  // gradient is constant in the inputs (e.g. linear ops)
  std::vector<Tensor> grads = autograd::grad({hv}, differentiable_of(inputs, differentiable), {}, false, false, true);
  auto f = [&](const std::vector<Tensor>& in) { return h(in, false).item(); };
  return compare_with_numeric("second order", f, inputs, grads, eps, tol, differentiable);
}

std::string run_case(const GradCase& c, Device device) {
  std::vector<Tensor> inputs = make_inputs(c, 1234, {device.type, DType::F64});
  std::string err = check_gradients(c.fn, inputs, c.eps, c.tol, c.differentiable);
  if (err.empty() && c.second_order) err = check_second_order(c.fn, inputs, std::sqrt(c.eps) * 1e-2, c.tol * 100, c.differentiable);
  return err.empty() ? err : c.name + ": " + err;
}

double reference_tolerance(DType t) { return kReferenceUlps * traits(t).eps; }

std::string check_against_reference(const GradCase& c, const Target& t, uint64_t seed) {
  const std::vector<Tensor> in = make_inputs(c, seed, t);
  std::vector<Tensor> ref_in;  // the same values, exactly, as f64 CPU leaves
  for (const Tensor& x : in) ref_in.push_back(x.detach().to(Device::cpu()).to(DType::F64).requires_grad_(x.requires_grad()));
  const Tensor out = c.fn(in), ref_out = c.fn(ref_in);
  const std::vector<Tensor> g = autograd::grad({project(out)}, differentiable_of(in, c.differentiable), {}, false, false, true);
  const std::vector<Tensor> ref_g =
      autograd::grad({project(ref_out)}, differentiable_of(ref_in, c.differentiable), {}, false, false, true);
  const double tol = reference_tolerance(t.dtype);
  const std::string where = c.name + " on " + t.name() + ": ";
  if (out.device() != t.dev()) return where + "output is on " + out.device().str();
  std::string err = compare_values("output", out, ref_out, tol);
  if (!err.empty()) return where + err;
  for (size_t i = 0; i < g.size(); ++i) {
    const std::string what = "gradient of input " + std::to_string(i);
    if (g[i].defined() != ref_g[i].defined()) return where + what + (g[i].defined() ? " is defined" : " is undefined") + ", unlike the reference";
    if (!g[i].defined()) continue;
    if (g[i].dtype() != t.dtype || g[i].device() != t.dev()) return where + what + " is " + g[i].meta_str() + " on " + g[i].device().str();
    err = compare_values(what, g[i], ref_g[i], tol);
    if (!err.empty()) return where + err;
  }
  return "";
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double m = 0;
  for (size_t k = 0; k < x.size(); ++k) m = std::max(m, std::abs(x[k] - y[k]));
  return m;
}

}  // namespace minidl::testing
