// The gradient-check harness: compares autograd's gradients (and, optionally, second derivatives
// through create_graph) with central finite differences, all in f64. Tests describe cases as a
// table (op, input shapes, eps, tolerance, input range avoiding kinks).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "minidl.h"

namespace minidl::testing {

using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;

struct GradCase {
  std::string name;
  std::vector<Shape> shapes;
  TensorFn fn;
  double lo = -2.0, hi = 2.0;  // input range; keep clear of kinks (e.g. [0.1, 2] for log)
  double eps = 1e-6;           // finite-difference step
  double tol = 1e-5;           // max |analytic - numeric| / max(1, |numeric|)
  bool second_order = true;    // also check gradients of gradients
  std::vector<bool> differentiable = {};  // per input; empty = all
};

// Random f64 inputs in [lo, hi) that require grad, from a fixed seed.
std::vector<Tensor> make_inputs(const GradCase& c, uint64_t seed = 1234);

// Returns an empty string on success, else a description of the first mismatch.
std::string check_gradients(const TensorFn& fn, const std::vector<Tensor>& inputs, double eps, double tol,
                            const std::vector<bool>& differentiable = {});
std::string check_second_order(const TensorFn& fn, const std::vector<Tensor>& inputs, double eps, double tol,
                               const std::vector<bool>& differentiable = {});

// Runs both checks for a case (second order when c.second_order).
std::string run_case(const GradCase& c);

// Max |a - b| over all elements (both converted to f64).
double max_abs_diff(const Tensor& a, const Tensor& b);

// sum(y * w) with w a fixed random tensor in [0.5, 1.5) drawn from `seed`: turns any output into a
// scalar whose gradient reaches every element with a distinct weight (the harness's loss).
Tensor project(const Tensor& y, uint64_t seed = 99);

}  // namespace minidl::testing
