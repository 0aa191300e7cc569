// div with a rounding mode, atan2, logical_and/or/xor/not, eye, linspace, logspace, meshgrid, roll,
// diagonal, diag, trace, outer and dot against torch 1.13 (the literals are what it printed for the
// same inputs), errors by message, and CUDA against the CPU. Finite-difference checks of the
// differentiable ones are rows of tests/test_gradcheck.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "cuda_checks.h"

using namespace minidl;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
using Vec = std::vector<double>;

// Equal element by element (NaN equals NaN; the sign of a zero counts), with the dtype and shape.
void check_exact(const Tensor& got, DType dtype, const Shape& shape, const Vec& want) {
  CHECK(got.dtype() == dtype);
  CHECK(got.shape() == shape);
  const Vec g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", want " << want[i]);
    CHECK((std::isnan(want[i]) ? std::isnan(g[i]) : (g[i] == want[i] && std::signbit(g[i]) == std::signbit(want[i]))));
  }
}
Tensor i64(const std::vector<int64_t>& v) { return from_vector<int64_t>(v); }
}  // namespace

TEST_CASE("div with rounding_mode floor and trunc, and floor_divide, as torch.div", "[more_ops]") {
  const Tensor a = i64({7, -7, 7, -7, 0, 5, -5}), b = i64({2, 2, -2, -2, 3, 5, 3});
  check_exact(div(a, b, "floor"), DType::I64, {7}, {3, -4, -4, 3, 0, 1, -2});
  check_exact(div(a, b, "trunc"), DType::I64, {7}, {3, -3, -3, 3, 0, 1, -1});
  check_exact(floor_divide(a, b), DType::I64, {7}, {3, -4, -4, 3, 0, 1, -2});
  check_exact(div(a, 3.0, "floor"), DType::I64, {7}, {2, -3, 2, -3, 0, 1, -2});
  const Tensor af = from_vector<double>({7.5, -7.5, 7.5, -7.5, 0.0, -0.0, 1.0, -1.0, kInf, kNaN, 5.0});
  const Tensor bf = from_vector<double>({2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 0.0, 0.0, 2.0, 1.0, kInf});
  check_exact(div(af, bf, "floor"), DType::F64, {11}, {3.0, -4.0, -4.0, 3.0, 0.0, -0.0, kInf, -kInf, kNaN, kNaN, 0.0});
  check_exact(div(af, bf, "trunc"), DType::F64, {11}, {3.0, -3.0, -3.0, 3.0, 0.0, -0.0, kInf, -kInf, kInf, kNaN, 0.0});
  check_exact(div(af, -2.0, "floor"), DType::F64, {11}, {-4.0, 3.0, -4.0, 3.0, -0.0, 0.0, -1.0, 0.0, kNaN, kNaN, -3.0});
  // The most negative value over -1 wraps, as two's complement (no trap).
  check_exact(div(i64({std::numeric_limits<int64_t>::min()}), i64({-1}), "floor"), DType::I64, {1},
              {static_cast<double>(std::numeric_limits<int64_t>::min())});
  CHECK_THROWS_WITH(div(a, i64({1, 0, 1, 1, 1, 1, 1}), "floor"), Catch::Contains("ZeroDivisionError"));
  CHECK_THROWS_WITH(div(a, 0.0, "trunc"), Catch::Contains("ZeroDivisionError"));
  CHECK_THROWS_WITH(div(af, bf, "round"), Catch::Contains("expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'"));
  // Piecewise constant: the gradient is zero, as PyTorch's.
  Tensor x = from_vector<double>({1.5, -2.5}).requires_grad_();
  Tensor y = from_vector<double>({0.5, 2.0}).requires_grad_();
  sum(div(x, y, "floor")).backward();
  CHECK(x.grad().to_vector<double>() == Vec{0, 0});
  CHECK(y.grad().to_vector<double>() == Vec{0, 0});
}

TEST_CASE("atan2 as torch's: quadrants, signed zeros, infinities, gradients, integer promotion", "[more_ops]") {
  const Tensor y = from_vector<double>({0.0, -0.0, 1.0, -1.0, 0.0, -0.0, 2.0, kInf, kNaN, 3.0});
  const Tensor x = from_vector<double>({1.0, 1.0, 0.0, 0.0, -1.0, -1.0, -2.0, 1.0, 1.0, kInf});
  check_exact(atan2(y, x), DType::F64, {10},
              {0.0, -0.0, 1.5707963267948966, -1.5707963267948966, 3.141592653589793, -3.141592653589793, 2.356194490192345,
               1.5707963267948966, kNaN, 0.0});
  Tensor ya = from_vector<double>({0.3, -1.2, 2.0}).requires_grad_();
  Tensor xa = from_vector<double>({1.5, -0.5, -3.0}).requires_grad_();
  sum(mul(atan2(ya, xa), from_vector<double>({1.0, 2.0, 3.0}))).backward();
  const Vec gy = ya.grad().to_vector<double>(), gx = xa.grad().to_vector<double>();
  const Vec want_gy{0.6410256410256411, -0.591715976331361, -0.6923076923076923};
  const Vec want_gx{-0.12820512820512822, 1.4201183431952662, -0.46153846153846156};
  for (size_t i = 0; i < 3; ++i) {
    CHECK(gy[i] == Approx(want_gy[i]).epsilon(1e-14));
    CHECK(gx[i] == Approx(want_gx[i]).epsilon(1e-14));
  }
  CHECK(atan2(i64({1}), i64({1})).dtype() == DType::F32);
  CHECK(atan2(i64({1}), i64({1})).item() == Approx(0.7853981633974483).epsilon(1e-7));
  CHECK(amp::policy_for("atan2", DeviceType::CUDA) == amp::CastPolicy::Promote);
  CHECK(amp::policy_for("atan2", DeviceType::CPU) == amp::CastPolicy::None);
}

TEST_CASE("logical_and/or/xor/not: bool results of truth values, NaN is true, broadcasting", "[more_ops]") {
  check_exact(logical_and(from_vector<double>({0., 1., kNaN, 2.}), i64({1, 1, 1, 0})), DType::Bool, {4}, {0, 1, 1, 0});
  check_exact(logical_xor(from_vector<bool>({true, false}), from_vector<double>({0.5, 0.0})), DType::Bool, {2}, {0, 0});
  check_exact(logical_or(from_vector<double>({0.0, -0.0, 3.0}, {3, 1}), i64({0, 1})), DType::Bool, {3, 2}, {0, 1, 0, 1, 1, 1});
  check_exact(logical_not(from_vector<double>({0.0, kNaN, -2.0})), DType::Bool, {3}, {1, 0, 0});
}

TEST_CASE("eye, linspace, logspace and meshgrid as torch's", "[more_ops][factory]") {
  check_exact(eye(2, 3), DType::F32, {2, 3}, {1, 0, 0, 0, 1, 0});
  check_exact(eye(3, std::nullopt, DType::I64), DType::I64, {3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1});
  CHECK(eye(0).shape() == Shape{0, 0});
  CHECK_THROWS_WITH(eye(-1), Catch::Contains("n must be greater or equal to 0, got -1"));
  // Each half counts from its own end, in the dtype's precision: torch's values on both dtypes here.
  check_exact(linspace(-3.3, 7.1, 11), DType::F32, {11},
              {-3.299999952316284, -2.259999990463257, -1.2200000286102295, -0.18000006675720215, 0.8599998950958252,
               1.9000000953674316, 2.940000057220459, 3.9800000190734863, 5.019999980926514, 6.059999942779541, 7.099999904632568});
  // In f64, torch's AVX2 kernel computes elements 5-7 (one vector that starts before the halfway
  // point) from the start, with fused multiply-adds: a few ulp of the range's ends from the values
  // counted from the end.
  const Vec want64{-3.3, -2.26, -1.2200000000000002, -0.1800000000000006, 0.8599999999999994, 1.8999999999999992,
                   2.939999999999999, 3.9799999999999986, 5.02, 6.06, 7.1};
  const Vec got64 = linspace(-3.3, 7.1, 11, DType::F64).to_vector<double>();
  REQUIRE(got64.size() == want64.size());
  for (size_t i = 0; i < want64.size(); ++i) CHECK(std::abs(got64[i] - want64[i]) <= 4 * std::numeric_limits<double>::epsilon() * 7.1);
  check_exact(linspace(0, 10, 5, DType::I64), DType::I64, {5}, {0, 2, 5, 7, 10});
  check_exact(linspace(0, 1, 1), DType::F32, {1}, {0});
  CHECK(linspace(0, 1, 0).shape() == Shape{0});
  CHECK_THROWS_WITH(linspace(0, 1, -1), Catch::Contains("number of steps must be non-negative"));
  // An integer dtype truncates the ends first; ends the dtype cannot hold are refused, as torch's.
  check_exact(linspace(-7.5, 7.5, 7, DType::I64), DType::I64, {7}, {-7, -4, -2, 0, 2, 4, 7});
  check_exact(logspace(0.5, 1.5, 3, 4.0, DType::I64), DType::I64, {3}, {1, 2, 4});
  CHECK_THROWS_WITH(linspace(-10, 0, 4, DType::U8), Catch::Contains("value cannot be converted to type u8 without overflow"));
  CHECK_THROWS_WITH(linspace(0, 1e5, 4, DType::F16), Catch::Contains("without overflow"));
  CHECK_THROWS_WITH(linspace(0, 1, 4, DType::Bool), Catch::Contains("not implemented for 'Bool'"));
  check_exact(logspace(-2, 3, 6, 10.0, DType::F64), DType::F64, {6}, {0.01, 0.1, 1.0, 10.0, 100.0, 1000.0});
  check_exact(logspace(0, 4, 5, 2.0, DType::F64), DType::F64, {5}, {1.0, 2.0, 4.0, 8.0, 16.0});
  const std::vector<Tensor> xy = meshgrid({i64({1, 2, 3}), i64({4, 5})}, "xy");
  check_exact(xy[0], DType::I64, {2, 3}, {1, 2, 3, 1, 2, 3});
  check_exact(xy[1], DType::I64, {2, 3}, {4, 4, 4, 5, 5, 5});
  const std::vector<Tensor> ij = meshgrid({i64({1, 2, 3}), i64({4, 5})});
  check_exact(ij[0], DType::I64, {3, 2}, {1, 1, 2, 2, 3, 3});
  check_exact(ij[1], DType::I64, {3, 2}, {4, 5, 4, 5, 4, 5});
  CHECK_THROWS_WITH(meshgrid({i64({1})}, "yx"), Catch::Contains("indexing must be one of \"xy\" or \"ij\""));
  CHECK_THROWS_WITH(meshgrid({ones({2, 2})}), Catch::Contains("Expected 0D or 1D tensor"));
}

TEST_CASE("roll, diagonal, diag, trace, outer and dot as torch's", "[more_ops]") {
  const Tensor m = arange(12, DType::F64).reshape({3, 4});
  check_exact(roll(m, {1}), DType::F64, {3, 4}, {11, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  check_exact(roll(m, {-1}, {1}), DType::F64, {3, 4}, {1, 2, 3, 0, 5, 6, 7, 4, 9, 10, 11, 8});
  check_exact(roll(m, {1, 5}, {0, 1}), DType::F64, {3, 4}, {11, 8, 9, 10, 3, 0, 1, 2, 7, 4, 5, 6});
  CHECK_THROWS_WITH(roll(m, {1, 2}, {0}), Catch::Contains("shifts and dimensions must align. shifts: 2, dims:1"));
  const std::vector<std::pair<int64_t, Vec>> diagonals = {{0, {0, 5, 10}}, {1, {1, 6, 11}}, {3, {3}}, {4, {}},
                                                         {-1, {4, 9}},    {-2, {8}},        {-3, {}}};
  for (const auto& [offset, want] : diagonals) {
    INFO("offset " << offset);
    check_exact(diagonal(m, offset), DType::F64, {static_cast<int64_t>(want.size())}, want);
  }
  const Tensor t = arange(24, DType::F64).reshape({2, 3, 4});
  check_exact(diagonal(t, 1, 0, 2), DType::F64, {3, 2}, {1, 14, 5, 18, 9, 22});
  check_exact(diagonal(t, -1, 2, 1), DType::F64, {2, 3}, {1, 6, 11, 13, 18, 23});
  CHECK_THROWS_WITH(diagonal(t, 0, 1, -2), Catch::Contains("diagonal dimensions cannot be identical 1, -2"));
  check_exact(diag(from_vector<double>({1, 2, 3}), 1), DType::F64, {4, 4}, {0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0});
  check_exact(diag(from_vector<double>({1, 2}), -2), DType::F64, {4, 4}, {0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0});
  check_exact(diag(m, 1), DType::F64, {3}, {1, 6, 11});
  CHECK_THROWS_WITH(diag(t), Catch::Contains("Supports 1D or 2D tensors. Got 3D"));
  check_exact(trace(m), DType::F64, {}, {15});
  check_exact(trace(arange(6).reshape({2, 3})), DType::I64, {}, {4});
  CHECK_THROWS_WITH(trace(t), Catch::Contains("expected a matrix, but got tensor with dim 3"));
  check_exact(outer(from_vector<double>({1, 2}), from_vector<double>({3, 4, 5})), DType::F64, {2, 3}, {3, 4, 5, 6, 8, 10});
  check_exact(dot(from_vector<double>({1, 2, 3}), from_vector<double>({4, -5, 6})), DType::F64, {}, {12});
  CHECK_THROWS_WITH(dot(ones({2}), ones({3})), Catch::Contains("inconsistent tensor size"));
  CHECK_THROWS_WITH(dot(ones({2}), ones({2}, DType::F64)), Catch::Contains("expected both vectors to have same dtype"));
  // An integer dot keeps its dtype and wraps, as torch's: 2^30 * 2 * 2 is 0 in i32.
  const Tensor big = from_vector<int32_t>({1 << 30, 1 << 30}), two = from_vector<int32_t>({2, 2});
  check_exact(dot(big, two), DType::I32, {}, {0});
  check_exact(dot(from_vector<uint8_t>({200, 3}), from_vector<uint8_t>({2, 5})), DType::U8, {}, {(400 + 15) % 256});
  CHECK_THROWS_WITH(dot(from_vector<bool>({true}), from_vector<bool>({true})), Catch::Contains("not implemented for 'Bool'"));
  CHECK_THROWS_WITH(trace(ones({2, 2}, DType::Bool)), Catch::Contains("trace") && Catch::Contains("not implemented for 'Bool'"));
  CHECK_THROWS_WITH(logical_and(ones({2}), ones({3})), Catch::Contains("logical_and"));
  CHECK_THROWS_WITH(roll(scalar_tensor(1.0), {1}, {0}), Catch::Contains("roll"));
  // A new tensor in every layout: writing into it leaves x unchanged.
  Tensor square = arange(9, DType::F64).reshape({3, 3});
  diagonal(square).fill_(-1.0);
  CHECK(square.to_vector<double>() == arange(9, DType::F64).to_vector<double>());
  // Gradients flow back to the diagonal's elements only.
  Tensor x = ones({3, 4}, DType::F64).requires_grad_();
  sum(mul(diagonal(x, 1), from_vector<double>({1, 2, 3}))).backward();
  check_exact(x.grad(), DType::F64, {3, 4}, {0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3});
}

TEST_CASE("cuda: rounded division, atan2, roll, diagonal and linspace agree with the CPU", "[cuda]") {
  using namespace minidl::cuda_test;
  MINIDL_REQUIRE_GPU();
  const Tensor a = i64({7, -7, 7, -7, 0, 5, -5}), b = i64({2, 2, -2, -2, 3, 5, 3});
  check_equal(div(a.to(kCuda), b.to(kCuda), "floor").to(Device::cpu()), div(a, b, "floor"), "floor i64");
  check_equal(div(a.to(kCuda), b.to(kCuda), "trunc").to(Device::cpu()), div(a, b, "trunc"), "trunc i64");
  const Tensor y = randn({40, 3}, DType::F32), x = randn({40, 3}, DType::F32);
  check_close(atan2(y.to(kCuda), x.to(kCuda)).to(Device::cpu()), atan2(y, x), ew_rtol(DType::F32), 1e-7, "atan2");
  check_close(div(y.to(kCuda), x.to(kCuda), "floor").to(Device::cpu()), div(y, x, "floor"), 0, 0, "floor f32");
  const Tensor m = arange(24, DType::F32).reshape({2, 3, 4});
  check_equal(roll(m.to(kCuda), {1, -2}, {0, 2}).to(Device::cpu()), roll(m, {1, -2}, {0, 2}), "roll");
  check_equal(diagonal(m.to(kCuda), 1, 1, 2).to(Device::cpu()), diagonal(m, 1, 1, 2), "diagonal");
  check_equal(linspace(-1, 1, 9, TensorOptions(DType::F32).device(kCuda)).to(Device::cpu()), linspace(-1, 1, 9), "linspace");
  check_equal(eye(3, 4, TensorOptions(DType::F32).device(kCuda)).to(Device::cpu()), eye(3, 4), "eye");
}
