// The op-table harness. A GradCase is one row of the op table (op, input shapes, eps, tolerance,
// input range avoiding kinks); it runs on (device, dtype) targets (tests/targets.h):
// - the gradient check compares autograd's gradients (and, optionally, second derivatives through
//   create_graph) with central finite differences, all in f64, on one device;
// - the reference check runs the case on a target and on the f64 CPU reference from the same
//   values and compares the output and the gradients within a tolerance from the dtype's traits.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "minidl.h"
#include "targets.h"

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

// Random inputs in [lo, hi) from a fixed seed, rounded to t.dtype and placed on t.device; the
// differentiable ones are leaves that require grad.
std::vector<Tensor> make_inputs(const GradCase& c, uint64_t seed = 1234, const Target& t = kReference);

// Returns an empty string on success, else a description of the first mismatch. Inputs are f64 on
// any one device; the numeric side perturbs a CPU copy and evaluates fn on that device.
std::string check_gradients(const TensorFn& fn, const std::vector<Tensor>& inputs, double eps, double tol,
                            const std::vector<bool>& differentiable = {});
std::string check_second_order(const TensorFn& fn, const std::vector<Tensor>& inputs, double eps, double tol,
                               const std::vector<bool>& differentiable = {});

// Runs both checks for a case in f64 on `device` (second order when c.second_order).
std::string run_case(const GradCase& c, Device device = Device::cpu());

// The reference check's bound for a target dtype: kReferenceUlps times the dtype's eps, relative
// to max(1, |reference|): a few roundings per op over the table's short chains. The CPU's worst
// over the table is about 14 eps (f32 linear), 3 (f16) and 6 (bf16); 64 leaves room for another
// backend's summation order and math library.
inline constexpr double kReferenceUlps = 64;
double reference_tolerance(DType t);

// The case on target t against kReference: inputs from `seed` rounded to t.dtype (so both sides
// see the same values); output and every input's gradient (which must have the input's dtype and
// device) within reference_tolerance(t.dtype). Returns "" or the first mismatch.
std::string check_against_reference(const GradCase& c, const Target& t, uint64_t seed = 777);

// Max |a - b| over all elements (both converted to f64).
double max_abs_diff(const Tensor& a, const Tensor& b);

// sum(y * w) with w a fixed random f64 tensor in [0.5, 1.5) on y's device, drawn from `seed`:
// turns any output into a scalar whose gradient reaches every element with a distinct weight
// (the harness's loss).
Tensor project(const Tensor& y, uint64_t seed = 99);

}  // namespace minidl::testing
