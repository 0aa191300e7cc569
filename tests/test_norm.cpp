// The vector norm: values against plain f64 loops for every kind of p, dims and keepdim, PyTorch's
// zero gradient at a zero norm, low precision within dtype-derived tolerances, the autocast
// policy and errors. Gradients are checked by finite differences in the gradient-check table.
#include <catch2/catch.hpp>

#include <cmath>

#include "gradcheck.h"
#include "random_values.h"

using namespace minidl;
using minidl::testing::max_abs_diff;
using minidl::testing::random_values;

namespace {
// ||x||_p along the middle dim of x viewed as [outer, n, inner].
std::vector<double> ref_norm(const std::vector<double>& x, int64_t outer, int64_t n, int64_t inner, double p) {
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = std::isinf(p) ? (p > 0 ? 0.0 : INFINITY) : 0.0;
      for (int64_t c = 0; c < n; ++c) {
        const double a = std::fabs(x[(o * n + c) * inner + i]);
        if (std::isinf(p)) acc = p > 0 ? std::max(acc, a) : std::min(acc, a);
        else if (p == 0) acc += a != 0;
        else acc += std::pow(a, p);
      }
      out.push_back(std::isinf(p) || p == 0 ? acc : std::pow(acc, 1.0 / p));
    }
  return out;
}
}  // namespace

TEST_CASE("norm matches plain loops for every p, along a dim and over all", "[ops][norm]") {
  std::vector<double> v = random_values(2 * 5 * 3, -2.0, 2.0, 11);
  v[4] = 0.0;  // a zero counts for p = 0 only
  const Tensor x = from_vector(v, {2, 5, 3});
  for (double p : std::vector<double>{2.0, 1.0, INFINITY, -INFINITY, 0.0, 3.0, 0.5}) {
    INFO("p = " << p);
    const std::vector<double> want = ref_norm(v, 2, 5, 3, p);
    CHECK(max_abs_diff(norm(x, p, {1}), from_vector(want, {2, 3})) < 1e-12);
    CHECK(norm(x, p, {1}, true).shape() == Shape{2, 1, 3});
    const double all = ref_norm(v, 1, 30, 1, p)[0];
    CHECK(norm(x, p).item() == Approx(all).epsilon(1e-12));
    CHECK(norm(x, p).dim() == 0);
  }
  // Two dims at once: dims {0, 2} of [2, 5, 3] is the norm of each middle slice.
  const Tensor per_slice = norm(x.transpose(0, 1).contiguous().reshape({5, 6}), 2.0, {1});
  CHECK(max_abs_diff(norm(x, 2.0, {0, 2}), per_slice) < 1e-12);
  CHECK(norm(from_vector<float>({3.0f, -4.0f})).item() == 5.0);
}

TEST_CASE("norm at a zero vector has a zero gradient, as PyTorch", "[ops][norm]") {
  for (double p : {2.0, 1.5, 3.0}) {
    Tensor z = zeros({3}, DType::F64).requires_grad_();
    norm(z, p).backward();
    CHECK(z.grad().to_vector<double>() == std::vector<double>{0.0, 0.0, 0.0});
  }
  // The inf norm shares its gradient evenly among tied extremes.
  Tensor t = from_vector<double>({-2.0, 1.0, 2.0}).requires_grad_();
  norm(t, INFINITY).backward();
  CHECK(t.grad().to_vector<double>() == std::vector<double>{-0.5, 0.0, 0.5});
}

TEST_CASE("norm propagates NaN and inf as PyTorch", "[ops][norm]") {
  CHECK(std::isnan(norm(from_vector<double>({1.0, NAN})).item()));
  CHECK(std::isinf(norm(from_vector<double>({1.0, INFINITY})).item()));
  CHECK(norm(from_vector<double>({1.0, -INFINITY}), INFINITY).item() == INFINITY);
}

TEST_CASE("norm in f16/bf16 accumulates in f32 and returns the input dtype", "[ops][norm][low_precision]") {
  // 4096 elements of 16: the sum of squares (1,048,576) is past f16's max, the norm (1024) is not.
  for (DType t : {DType::F16, DType::BF16}) {
    Tensor x = full({4096}, 16.0, t);
    Tensor n = norm(x);
    CHECK(n.dtype() == t);
    CHECK(n.item() == Approx(1024.0).epsilon(traits(t).eps));
    const std::vector<double> v = random_values(64, -3.0, 3.0, 5);
    Tensor low = from_vector(v, {8, 8}).to(t);
    Tensor want = norm(low.to(DType::F64), 2.0, {1});
    CHECK(max_abs_diff(norm(low, 2.0, {1}), want) <= 4 * traits(t).eps * max(want).item());
  }
}

TEST_CASE("norm's autocast policy: none on CPU, f32 on CUDA (PyTorch's lists)", "[ops][norm][amp]") {
  CHECK(amp::policy_for("norm", DeviceType::CPU) == amp::CastPolicy::None);
  CHECK(amp::policy_for("norm", DeviceType::CUDA) == amp::CastPolicy::FP32SetOptDtype);
  Tensor x = from_vector<float>({3.0f, 4.0f}).to(DType::BF16);
  {
    amp::autocast scope(DeviceType::CPU);
    CHECK(norm(x).dtype() == DType::BF16);  // CPU: runs in what it receives
    amp::set_policy("norm", DeviceType::CPU, amp::CastPolicy::FP32SetOptDtype);
    CHECK(norm(x).dtype() == DType::F32);  // the policy is consulted
    amp::reset_policy("norm");
  }
}

TEST_CASE("norm errors name the op", "[ops][norm][errors]") {
  CHECK_THROWS_WITH(norm(from_vector<int64_t>({1, 2})), Catch::Contains("norm") && Catch::Contains("floating point"));
  CHECK_THROWS_WITH(norm(ones({2, 3}), 2.0, {2}), Catch::Contains("norm") && Catch::Contains("dim"));
  CHECK_THROWS_WITH(norm(ones({2, 3}), NAN), Catch::Contains("norm") && Catch::Contains("nan"));
  CHECK_THROWS_WITH(norm(ones({2, 0}), INFINITY, {1}), Catch::Contains("norm") && Catch::Contains("empty"));
  CHECK(norm(ones({2, 0}), 2.0, {1}).to_vector<float>() == std::vector<float>{0.0f, 0.0f});
}
