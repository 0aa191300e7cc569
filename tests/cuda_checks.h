// Shared by the CUDA test files (test_cuda.cpp, test_cuda_cnn.cpp): the GPU requirement (skip
// without a GPU, fail under MINIDL_EXPECT_GPU=1, or run with the CPU standing in), the device under
// test, CPU random inputs, and closeness checks with dtype-derived tolerances.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "minidl.h"
#include "ops/kernels.h"
#include "targets.h"

namespace minidl::cuda_test {
// MINIDL_CUDA_TESTS_ON_CPU=1 runs the device half with the CPU standing in for the GPU: the
// comparisons become trivial, but every threshold, count and training target below is exercised,
// so a machine without a GPU checks the harness itself before device time is spent on it.
inline bool cpu_stand_in() {
  static const bool v = [] {
    const char* e = std::getenv("MINIDL_CUDA_TESTS_ON_CPU");
    return e != nullptr && e[0] == '1';
  }();
  return v;
}

// Without a GPU (and no CPU stand-in) the test returns, reported as skipped (a failure under
// MINIDL_EXPECT_GPU=1, tests/targets.h).
#define MINIDL_REQUIRE_GPU()                                                                       \
  do {                                                                                             \
    if (!cpu_stand_in() && !testing::runs_here(DeviceType::CUDA, Catch::getResultCapture().getCurrentTestName())) \
      return;                                                                                      \
  } while (0)

// The device under test.
inline const Device kCuda = cpu_stand_in() ? Device::cpu() : Device::cuda(0);
// What autocast picks by default there.
inline const DType kAmpDType = kCuda.is_cuda() ? DType::F16 : DType::BF16;
inline const std::vector<DType> kFloat = {DType::F32, DType::F16, DType::BF16};
inline const std::vector<DType> kFloat64 = {DType::F32, DType::F64, DType::F16, DType::BF16};

inline double eps_of(DType t) { return traits(t).eps; }

inline Tensor randn_cpu(const Shape& shape, DType dt, uint64_t seed, double scale = 1.0) {
  Generator g(seed);
  Tensor x = randn(shape, {}, &g);
  if (scale != 1.0) x = mul(x, scale);
  return cast(x, dt);
}

// |got - want| <= atol + rtol * (|want| + scale) everywhere (NaN matches NaN, inf matches the same
// inf). scale, when defined (same shape, any dtype, on the CPU), is how far the function moves when
// its inputs move by one relative unit (relative_sensitivity below): where the result cancels or
// amplifies its inputs' rounding, two correct implementations differ by about rtol times that, not
// rtol times the result.
inline void check_close(const Tensor& got, const Tensor& want, double rtol, double atol, const std::string& what,
                        const Tensor& scale = Tensor()) {
  INFO(what << ": got " << got.meta_str() << ", want " << want.meta_str());
  REQUIRE(got.shape() == want.shape());
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  const std::vector<double> sc = scale.defined() ? scale.to_vector<double>() : std::vector<double>(g.size(), 0.0);
  REQUIRE(sc.size() == g.size());
  double worst = 0;
  int64_t at = -1;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) || std::isnan(g[i])) {
      if (std::isnan(w[i]) != std::isnan(g[i])) { worst = INFINITY; at = static_cast<int64_t>(i); break; }
      continue;
    }
    if (std::isinf(w[i]) || std::isinf(g[i])) {
      if (g[i] != w[i]) { worst = INFINITY; at = static_cast<int64_t>(i); break; }
      continue;
    }
    const double excess = std::fabs(g[i] - w[i]) / (atol + rtol * (std::fabs(w[i]) + sc[i]));
    if (excess > worst) { worst = excess; at = static_cast<int64_t>(i); }
  }
  std::ostringstream worst_at;
  if (at >= 0) worst_at << "worst element " << at << ": got " << g[at] << ", want " << w[at] << ", scale " << sc[at] << " (" << worst << "x the tolerance)";
  INFO(worst_at.str());
  CHECK(worst <= 1.0);
}

// |f(x (1 + h)) - f(x (1 - h))| / (2h), element-wise, with f evaluated in f64 on the CPU: how much f
// moves per relative unit of x. With f(x) = x it is |x|; where f amplifies x's rounding (exp of a
// large argument) or cancels (1 - y^2 near |y| = 1, gelu's derivative near its zero) it is much more
// than |f(x)|.
inline Tensor relative_sensitivity(const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  const double h = 1.0 / (1 << 20);
  const Tensor x64 = cast(x.device().is_cpu() ? x : x.to(Device::cpu()), DType::F64);
  return mul(abs(sub(f(mul(x64, 1 + h)), f(mul(x64, 1 - h)))), 0.5 / h);
}

inline void check_equal(const Tensor& got, const Tensor& want, const std::string& what) { check_close(got, want, 0, 0, what); }

// Element-wise tolerance: both sides compute in f32 (f64) and round once into the dtype; the f32
// math libraries differ by a few ulp.
inline double ew_rtol(DType t) { return is_low_precision(t) ? 2 * eps_of(t) : 16 * eps_of(t); }

inline const kernels::Registry& R() { return kernels::registry(); }

// Fresh leaves that require grad, never sharing storage with t (also when the CPU stands in).
inline Tensor leaf_on_cpu(const Tensor& t) { return t.detach().clone().requires_grad_(); }
inline Tensor leaf_on_device(const Tensor& t) {
  return (kCuda.is_cuda() ? t.detach().to(kCuda) : t.detach().clone()).requires_grad_();
}
}  // namespace minidl::cuda_test
