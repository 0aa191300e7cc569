// Gaps against PyTorch in the tensor ops, each closed and held to torch's numbers:
// - remainder and fmod: integer and floating, scalar and broadcast forms, gradients, low precision,
//   autocast, CUDA against the CPU;
// - argmin beside argmax, max/min of bool tensors;
// - index_select of a 0-dim tensor, narrow of a size-0 dim;
// - arange with an integer dtype and a fractional end;
// - conv1d's errors;
// - isnan/isinf/isfinite, any/all, flip, repeat, tril and triu, lerp, addcmul and addcdiv.
// Expected values are torch 1.13's (probed in Python), written here as literals; where 1.13 and 2.x
// differ, 2.x's, as said at the case.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>

#include "cuda_checks.h"
#include "gradcheck.h"

using namespace minidl;
using Catch::Contains;
using testing::GradCase;
using TL = std::vector<Tensor>;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
Tensor f32(const std::vector<float>& v) { return from_vector(v); }
Tensor f64(const std::vector<double>& v) { return from_vector(v); }
Tensor i64(const std::vector<int64_t>& v) { return from_vector(v); }
Tensor bools(const std::vector<bool>& v) { return from_vector(v); }
std::vector<int64_t> ints(const Tensor& t) { return cast(t, DType::I64).to(Device::cpu()).to_vector<int64_t>(); }
std::vector<double> doubles(const Tensor& t) { return t.to(Device::cpu()).to_vector<double>(); }

// Bit-for-bit equality of values: NaN matches NaN, and zeros must agree in sign.
void check_same_values(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  INFO(what << ": " << got.meta_str());
  const std::vector<double> g = doubles(got);
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", want " << want[i]);
    if (std::isnan(want[i])) CHECK(std::isnan(g[i]));
    else CHECK((g[i] == want[i] && std::signbit(g[i]) == std::signbit(want[i])));
  }
}

// |got - want| <= eps(dtype) * |want| per element: one rounding of the exact result (half an ulp) fits.
void check_rounded_once(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  INFO(what << ": " << got.meta_str());
  const double eps = traits(got.dtype()).eps;
  const std::vector<double> g = doubles(got);
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", want " << want[i]);
    CHECK(std::abs(g[i] - want[i]) <= eps * std::abs(want[i]));
  }
}
}  // namespace

// ---------------------------------------------------------------- remainder and fmod

TEST_CASE("remainder and fmod of integers: the divisor's sign and the dividend's, broadcasting, promotion", "[gaps][modulo]") {
  // torch.remainder(a, b) / torch.fmod(a, b), a = [5, -5, 5, -5, 7, 0, -7], b = [3, 3, -3, -3, 7, 3, 2]
  const Tensor a = i64({5, -5, 5, -5, 7, 0, -7}), b = i64({3, 3, -3, -3, 7, 3, 2});
  for (DType t : {DType::I64, DType::I32}) {
    INFO(dtype_name(t));
    const Tensor r = remainder(cast(a, t), cast(b, t)), f = fmod(cast(a, t), cast(b, t));
    CHECK(r.dtype() == t);
    CHECK(f.dtype() == t);
    CHECK(ints(r) == std::vector<int64_t>{2, 1, -1, -2, 0, 0, 1});
    CHECK(ints(f) == std::vector<int64_t>{2, -2, 2, -2, 0, 0, -1});
  }
  // uint8: [200, 7] by [3, 250] -> [2, 7] both; a divisor of -3 wraps to 253: [200, 7].
  const Tensor u = from_vector<uint8_t>({200, 7});
  CHECK(ints(remainder(u, from_vector<uint8_t>({3, 250}))) == std::vector<int64_t>{2, 7});
  CHECK(ints(fmod(u, from_vector<uint8_t>({3, 250}))) == std::vector<int64_t>{2, 7});
  CHECK(remainder(u, -3.0).dtype() == DType::U8);
  CHECK(ints(remainder(u, -3.0)) == std::vector<int64_t>{200, 7});
  // torch.remainder(torch.arange(-3, 3).reshape(2, 3), torch.tensor([[2], [-4]])) -> [[1, 0, 1], [0, -3, -2]]
  const Tensor bc = remainder(arange(-3, 3).reshape({2, 3}), i64({2, -4}).reshape({2, 1}));
  CHECK(bc.shape() == Shape{2, 3});
  CHECK(ints(bc) == std::vector<int64_t>{1, 0, 1, 0, -3, -2});
  CHECK(ints(remainder(i64({7, -7}), 3.0)) == std::vector<int64_t>{1, 2});
  CHECK(ints(fmod(i64({7, -7}), 3.0)) == std::vector<int64_t>{1, -1});
  // Promotion: int % float tensor and int % fractional scalar are f32; int32 % 2 stays int32; a
  // 0-dim i64 divisor does not widen an i32 tensor, a 1-D one does; bool % int is i64.
  CHECK(remainder(i64({5, 7}), f32({2.5f, 3.0f})).dtype() == DType::F32);
  CHECK(fmod(i64({5, 7}), 2.5).to_vector<float>() == std::vector<float>{0, 2});
  CHECK(remainder(i64({5, -7}), 2.5).to_vector<float>() == std::vector<float>{0, 0.5f});
  CHECK(remainder(cast(i64({5, 7}), DType::I32), 2.0).dtype() == DType::I32);
  CHECK(remainder(cast(i64({5}), DType::I32), scalar_tensor(3, DType::I64)).dtype() == DType::I32);
  CHECK(remainder(cast(i64({5}), DType::I32), i64({3})).dtype() == DType::I64);
  CHECK(remainder(cast(i64({5}), DType::U8), scalar_tensor(2, DType::I64)).dtype() == DType::U8);
  CHECK(remainder(f32({5.5f}), scalar_tensor(2.0, DType::F64)).dtype() == DType::F32);
  CHECK(ints(remainder(bools({true, false}), i64({2, 2}))) == std::vector<int64_t>{1, 0});
  CHECK(ints(remainder(i64({3, 4}), bools({true, true}))) == std::vector<int64_t>{0, 0});
  const Tensor bs = fmod(bools({true, false}), 2.0);
  CHECK(bs.dtype() == DType::I64);
  CHECK(ints(bs) == std::vector<int64_t>{1, 0});
  // The most negative value modulo -1 is 0 (torch 1.13's CPU kernel dies of SIGFPE there).
  const int64_t lo = std::numeric_limits<int64_t>::min();
  CHECK(ints(remainder(i64({lo, 5}), -1.0)) == std::vector<int64_t>{0, 0});
  CHECK(ints(fmod(i64({lo, 5}), i64({-1, -1}))) == std::vector<int64_t>{0, 0});
  const Tensor lo32 = from_vector<int32_t>({std::numeric_limits<int32_t>::min()});
  CHECK(ints(fmod(lo32, from_vector<int32_t>({-1}))) == std::vector<int64_t>{0});
}

TEST_CASE("integer remainder and fmod by zero throw PyTorch's ZeroDivisionError, naming the op", "[gaps][modulo]") {
  // torch 1.13: RuntimeError "ZeroDivisionError" for int64, int32 and uint8, tensor and scalar divisors,
  // uint8 % 256 and int32 % 2**32 (the divisor wraps to 0) and int % False; an empty result reads no
  // divisor; a floating divisor of 0 gives NaN. (A C++ scalar 0.0 is an integer divisor: README's
  // rule for integral doubles; Python's int % 0.0 is a float scalar and gives NaN.)
  for (DType t : {DType::I64, DType::I32, DType::U8}) {
    INFO(dtype_name(t));
    const Tensor a = cast(i64({1, 2}), t), b = cast(i64({0, 1}), t);
    CHECK_THROWS_WITH(remainder(a, b), Contains("remainder") && Contains("ZeroDivisionError"));
    CHECK_THROWS_WITH(fmod(a, b), Contains("fmod") && Contains("ZeroDivisionError"));
    CHECK_THROWS_WITH(remainder(a, 0.0), Contains("remainder") && Contains("ZeroDivisionError"));
    CHECK_THROWS_WITH(fmod(a, 0.0), Contains("fmod") && Contains("ZeroDivisionError"));
  }
  CHECK_THROWS_WITH(remainder(from_vector<uint8_t>({5}), 256.0), Contains("ZeroDivisionError"));
  CHECK_THROWS_WITH(fmod(from_vector<int32_t>({5}), 4294967296.0), Contains("ZeroDivisionError"));
  CHECK_THROWS_WITH(remainder(i64({3, 4}), bools({true, false})), Contains("ZeroDivisionError"));
  CHECK_THROWS_WITH(remainder(i64({3, 4}), i64({2, 0}).reshape({2, 1})), Contains("ZeroDivisionError"));
  CHECK(remainder(zeros({0}, DType::I64), i64({0})).shape() == Shape{0});
  CHECK(fmod(i64({3}), zeros({0}, DType::I64)).shape() == Shape{0});
  CHECK(std::isnan(fmod(f32({3, 4}), i64({0, 2})).to_vector<float>()[0]));
  CHECK(fmod(f32({3, 4}), i64({0, 2})).to_vector<float>()[1] == 0.0f);
  // Two bool tensors are refused, as PyTorch refuses them ("remainder_cpu" has no 'Bool' kernel).
  CHECK_THROWS_WITH(remainder(bools({true}), bools({true})), Contains("remainder") && Contains("bool"));
  CHECK_THROWS_WITH(fmod(bools({true}), bools({true})), Contains("fmod") && Contains("bool"));
  CHECK_THROWS_WITH(remainder(zeros({2}), ones({3})), Contains("remainder"));
}

TEST_CASE("floating remainder and fmod: signs, zeros, NaN and inf as PyTorch", "[gaps][modulo]") {
  // torch 1.13, f32: x % y and torch.fmod(x, y) elementwise.
  const std::vector<double> x = {5.5, -5.5, 5.5, -5.5, 1.0, 0.0, -0.0, kInf, 3.0, kNaN, 2.0, 6.0, -6.0, 3.0, -3.0, 3.0, -3.0};
  const std::vector<double> y = {2.0, 2.0, -2.0, -2.0, 0.0, 3.0, 3.0, 2.0, kInf, 1.0, kNaN, -3.0, 3.0, -kInf, -kInf, kInf, kInf};
  const std::vector<double> rem = {1.5, 0.5, -0.5, -1.5, kNaN, 0.0, -0.0, kNaN, 3.0, kNaN, kNaN, 0.0, -0.0, -kInf, -3.0, 3.0, kInf};
  const std::vector<double> fm = {1.5, -1.5, 1.5, -1.5, kNaN, 0.0, -0.0, kNaN, 3.0, kNaN, kNaN, 0.0, -0.0, 3.0, -3.0, 3.0, -3.0};
  for (DType t : {DType::F32, DType::F64}) {
    const Tensor a = cast(f64(x), t), b = cast(f64(y), t);
    CHECK(remainder(a, b).dtype() == t);
    check_same_values(remainder(a, b), rem, std::string("remainder ") + dtype_name(t));
    check_same_values(fmod(a, b), fm, std::string("fmod ") + dtype_name(t));
  }
  check_same_values(remainder(f64({-0.0, 0.0, 6.0, -6.0}), -3.0), {-0.0, 0.0, 0.0, -0.0}, "remainder by a scalar");
  check_same_values(remainder(f64({1.0}), -0.0), {kNaN}, "remainder by -0");
  // Quotients near an integer, f32: fmod rounds a / b (1 / 0.1 -> 10), remainder floors through fmod
  // (-> 9, remainder 0.09999999); torch 1.13's values and gradients in b (-floor, -trunc).
  const Tensor a = f32({0.3f, -0.3f, 1.0f, -1.0f, 5.5f}).requires_grad_();
  const Tensor b = f32({0.1f, 0.1f, 0.1f, -0.1f, -2.0f}).requires_grad_();
  const Tensor r = remainder(a, b), f = fmod(a, b);
  CHECK(r.to_vector<float>() == std::vector<float>{7.450580596923828e-09f, 0.09999999403953552f, 0.09999998658895493f,
                                                   -0.09999998658895493f, -0.5f});
  CHECK(f.to_vector<float>() == std::vector<float>{7.450580596923828e-09f, -7.450580596923828e-09f, 0.09999998658895493f,
                                                   -0.09999998658895493f, 1.5f});
  const TL gr = autograd::grad({r.sum()}, {a, b});
  const TL gf = autograd::grad({f.sum()}, {a, b});
  CHECK(gr[0].to_vector<float>() == std::vector<float>{1, 1, 1, 1, 1});
  CHECK(gr[1].to_vector<float>() == std::vector<float>{-3, 4, -9, -9, 3});
  CHECK(gf[1].to_vector<float>() == std::vector<float>{-3, 3, -10, -10, 2});
}

TEST_CASE("remainder and fmod gradients: 1 in a, -floor(a/b) or -trunc(a/b) in b, as PyTorch", "[gaps][modulo][grad]") {
  // torch 1.13, f64: out = fn(a, b), autograd.grad(out, (a, b), g) with g = [1, 2, 3, 4, 5].
  const Tensor a = f64({5.5, -5.5, 5.5, -5.5, 0.3}).requires_grad_();
  const Tensor b = f64({2.0, 2.0, -2.0, -2.0, 0.7}).requires_grad_();
  const Tensor g = f64({1, 2, 3, 4, 5});
  const Tensor r = remainder(a, b), f = fmod(a, b);
  REQUIRE(r.grad_fn());
  CHECK(r.grad_fn()->name() == "RemainderBackward");
  CHECK(f.grad_fn()->name() == "FmodBackward");
  check_same_values(r, {1.5, 0.5, -0.5, -1.5, 0.3}, "remainder");
  check_same_values(f, {1.5, -1.5, 1.5, -1.5, 0.3}, "fmod");
  TL gr = autograd::grad({r}, {a, b}, {g});
  TL gf = autograd::grad({f}, {a, b}, {g});
  check_same_values(gr[0], {1, 2, 3, 4, 5}, "remainder d/da");
  check_same_values(gr[1], {-2, 6, 9, -8, -0.0}, "remainder d/db");
  check_same_values(gf[0], {1, 2, 3, 4, 5}, "fmod d/da");
  check_same_values(gf[1], {-2, 4, 6, -8, -0.0}, "fmod d/db");
  // Scalar divisor: d/da = g.
  check_same_values(autograd::grad({remainder(a, 2.5)}, {a}, {g})[0], {1, 2, 3, 4, 5}, "remainder scalar d/da");
  check_same_values(autograd::grad({fmod(a, -2.5)}, {a}, {g})[0], {1, 2, 3, 4, 5}, "fmod scalar d/da");
  // Broadcast divisor: gradients summed back. a = [[1.5, -2.5, 3.5], [4.5, -5.5, 6.5]], b = [[2], [-3]].
  const Tensor a2 = f64({1.5, -2.5, 3.5, 4.5, -5.5, 6.5}).reshape({2, 3}).requires_grad_();
  const Tensor b2 = f64({2, -3}).reshape({2, 1}).requires_grad_();
  const Tensor r2 = remainder(a2, b2), f2 = fmod(a2, b2);
  check_same_values(r2, {1.5, 1.5, 1.5, -1.5, -2.5, -2.5}, "remainder broadcast");
  check_same_values(f2, {1.5, -0.5, 1.5, 1.5, -2.5, 0.5}, "fmod broadcast");
  TL g2 = autograd::grad({r2.sum()}, {a2, b2});
  CHECK(g2[1].shape() == Shape{2, 1});
  check_same_values(g2[0], {1, 1, 1, 1, 1, 1}, "remainder broadcast d/da");
  check_same_values(g2[1], {1, 4}, "remainder broadcast d/db");
  check_same_values(autograd::grad({f2.sum()}, {b2})[0], {0, 2}, "fmod broadcast d/db");
  // A zero divisor: NaN forward, -inf in b (g * -(1 / 0)); an infinite one: floor(-3 / inf) = -1.
  const Tensor one = f32({1}).requires_grad_(), zero = f32({0}).requires_grad_();
  check_same_values(autograd::grad({remainder(one, zero).sum()}, {one, zero})[1], {-kInf}, "remainder d/db at b = 0");
  check_same_values(autograd::grad({fmod(one, zero).sum()}, {one, zero})[1], {-kInf}, "fmod d/db at b = 0");
  const Tensor a3 = f64({3, -3}).requires_grad_(), b3 = f64({kInf, kInf}).requires_grad_();
  check_same_values(autograd::grad({remainder(a3, b3).sum()}, {b3})[0], {-0.0, 1.0}, "remainder d/db at b = inf");
  check_same_values(autograd::grad({fmod(a3, b3).sum()}, {b3})[0], {-0.0, 0.0}, "fmod d/db at b = inf");
}

namespace {
// Inputs in [0.5, 2.5) (quotients 0.2 to 5), signs set by exact negations; the seeds keep every
// quotient clear of the integers, where both functions jump.
const std::vector<GradCase>& modulo_cases() {
  static const std::vector<GradCase> cases = {
      {.name = "remainder", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return remainder(x[0], x[1]); }, .lo = 0.5, .hi = 2.5},
      {.name = "remainder -a", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return remainder(neg(x[0]), x[1]); }, .lo = 0.5, .hi = 2.5},
      {.name = "remainder -b", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return remainder(x[0], neg(x[1])); }, .lo = 0.5, .hi = 2.5},
      {.name = "remainder {2,3}x{3}", .shapes = {{2, 3}, {3}}, .fn = [](const TL& x) { return remainder(neg(x[0]), x[1]); }, .lo = 0.5, .hi = 2.5},
      {.name = "remainder scalar", .shapes = {{2, 3}}, .fn = [](const TL& x) { return remainder(neg(x[0]), 0.7); }, .lo = 0.5, .hi = 2.5},
      {.name = "fmod", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return fmod(x[0], x[1]); }, .lo = 0.5, .hi = 2.5},
      {.name = "fmod -a", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return fmod(neg(x[0]), x[1]); }, .lo = 0.5, .hi = 2.5},
      {.name = "fmod -b {3,1}x{1,4}", .shapes = {{3, 1}, {1, 4}}, .fn = [](const TL& x) { return fmod(x[0], neg(x[1])); }, .lo = 0.5, .hi = 2.5},
      {.name = "fmod scalar", .shapes = {{2, 3}}, .fn = [](const TL& x) { return fmod(neg(x[0]), -0.7); }, .lo = 0.5, .hi = 2.5},
  };
  return cases;
}
}  // namespace

TEST_CASE("remainder and fmod: f64 finite differences (first and second order) on every device", "[gaps][modulo][grad]") {
  for (const testing::Target& t : testing::gradcheck_targets())
    for (const GradCase& c : modulo_cases()) {
      INFO("case: " << c.name << " on " << t.name());
      CHECK(testing::run_on(t, c.name, [&] { return testing::run_case(c, t.dev()); }) == "");
    }
}

TEST_CASE("remainder and fmod: every (device, dtype) target against the f64 CPU result", "[gaps][modulo][grad]") {
  for (const testing::Target& t : testing::reference_targets())
    for (const GradCase& c : modulo_cases()) {
      INFO("case: " << c.name << " on " << t.name());
      CHECK(testing::run_on(t, c.name, [&] { return testing::check_against_reference(c, t); }) == "");
    }
}

TEST_CASE("remainder and fmod in f16 and bf16: torch's values, a scalar divisor rounded to the dtype", "[gaps][modulo]") {
  // torch 1.13: fn(x.to(dt), y.to(dt)) and fn(x.to(dt), 0.3), x and y f32 tensors. PyTorch's kernels
  // take the scalar as an f16/bf16 value (0.3 -> 0.30005 in f16), so 5.5 % 0.3 is 0.0991, not 0.1.
  const Tensor x = f32({5.5f, -5.5f, 100.3f, -7.1f, 1000.0f, 0.1f}), y = f32({2.0f, 2.0f, -3.3f, 0.4f, 0.3f, 0.03f});
  struct Want {
    DType t;
    std::vector<double> rem, rem_scalar, fmod, fmod_scalar;
  };
  const std::vector<Want> wants = {
      {DType::F16,
       {1.5, 0.5, -2.01171875, 0.0966796875, 0.2373046875, 0.009979248046875},
       {0.09912109375, 0.200927734375, 0.09619140625, 0.099609375, 0.2373046875, 0.0999755859375},
       {1.5, -1.5, 1.2890625, -0.30322265625, 0.2373046875, 0.009979248046875},
       {0.09912109375, -0.09912109375, 0.09619140625, -0.200439453125, 0.2373046875, 0.0999755859375}},
      {DType::BF16,
       {1.5, 0.5, -1.703125, 0.11328125, 0.203125, 0.010009765625},
       {0.0859375, 0.21484375, 0.0390625, 0.125, 0.203125, 0.10009765625},
       {1.5, -1.5, 1.59375, -0.287109375, 0.203125, 0.010009765625},
       {0.0859375, -0.0859375, 0.0390625, -0.17578125, 0.203125, 0.10009765625}},
  };
  for (const Want& w : wants) {
    const std::string dt = dtype_name(w.t);
    const Tensor a = cast(x, w.t), b = cast(y, w.t);
    CHECK(remainder(a, b).dtype() == w.t);
    CHECK(fmod(a, 0.3).dtype() == w.t);
    check_rounded_once(remainder(a, b), w.rem, "remainder " + dt);
    check_rounded_once(remainder(a, 0.3), w.rem_scalar, "remainder by 0.3 " + dt);
    check_rounded_once(fmod(a, b), w.fmod, "fmod " + dt);
    check_rounded_once(fmod(a, 0.3), w.fmod_scalar, "fmod by 0.3 " + dt);
    // A 0-dim f32 divisor does not widen the tensor (torch: bf16 % tensor(0.3) is bf16, 5.5 -> 0.0859).
    CHECK(remainder(a, scalar_tensor(0.3, DType::F32)).dtype() == w.t);
  }
}

TEST_CASE("remainder and fmod autocast: on no list, they run in the promoted input dtype", "[gaps][modulo][amp]") {
  // torch 1.13 under torch.autocast('cpu') (bf16): fn(f32, f32) -> f32, fn(bf16, f32) -> f32,
  // fn(bf16, 2.0) -> bf16. CUDA's autocast_mode.cpp lists neither op.
  for (const char* op : {"remainder", "fmod"}) {
    CHECK(amp::policy_for(op, DeviceType::CPU) == amp::CastPolicy::None);
    CHECK(amp::policy_for(op, DeviceType::CUDA) == amp::CastPolicy::None);
  }
  const Tensor x = f32({5.5f, -7.1f}).requires_grad_(), y = f32({2.0f, 0.4f});
  amp::autocast scope(DeviceType::CPU);
  CHECK(remainder(x, y).dtype() == DType::F32);
  CHECK(fmod(x, y).dtype() == DType::F32);
  CHECK(remainder(cast(x, DType::BF16), y).dtype() == DType::F32);
  CHECK(fmod(cast(x, DType::BF16), y).dtype() == DType::F32);
  CHECK(remainder(cast(x, DType::BF16), 2.0).dtype() == DType::BF16);
  CHECK(fmod(cast(x, DType::BF16), 2.0).dtype() == DType::BF16);
}

TEST_CASE("cuda: remainder and fmod agree with the CPU: dtypes, broadcasting, scalars, gradients, zero divisors", "[cuda][gaps][modulo]") {
  using namespace cuda_test;
  MINIDL_REQUIRE_GPU();
  for (DType t : kFloat64) {
    const Tensor a = randn_cpu({37, 29}, t, 11, 3.0), b = randn_cpu({29}, t, 12, 2.0);
    for (bool rem : {true, false}) {
      const std::string what = std::string(rem ? "remainder " : "fmod ") + dtype_name(t);
      auto fn = [rem](const Tensor& p, const Tensor& q) { return rem ? remainder(p, q) : fmod(p, q); };
      auto fs = [rem](const Tensor& p, double q) { return rem ? remainder(p, q) : fmod(p, q); };
      check_equal(fn(a.to(kCuda), b.to(kCuda)), fn(a, b), what);
      check_equal(fn(a.t().to(kCuda), b.reshape({29, 1}).to(kCuda)), fn(a.t(), b.reshape({29, 1})), what + " strided");
      check_equal(fs(a.to(kCuda), -0.3), fs(a, -0.3), what + " scalar");
      if (t == DType::F64 || t == DType::F32) {
        const Tensor ha = a.detach().requires_grad_(), hb = b.detach().requires_grad_();
        const Tensor da = a.to(kCuda).requires_grad_(), db = b.to(kCuda).requires_grad_();
        const TL hg = autograd::grad({fn(ha, hb).sum()}, {ha, hb});
        const TL dg = autograd::grad({fn(da, db).sum()}, {da, db});
        check_equal(dg[0], hg[0], what + " d/da");
        check_equal(dg[1], hg[1], what + " d/db (sums of integers)");
      }
    }
  }
  const Tensor a = i64({5, -5, 5, -5, 7, 0, -7, std::numeric_limits<int64_t>::min()});
  const Tensor b = i64({3, 3, -3, -3, 7, 3, 2, -1});
  for (DType t : {DType::I64, DType::I32, DType::U8}) {
    const Tensor ha = cast(t == DType::U8 ? abs(a.slice(0, 0, 7)) : a, t);
    const Tensor hb = cast(t == DType::U8 ? abs(b.slice(0, 0, 7)) : b, t);
    check_equal(remainder(ha.to(kCuda), hb.to(kCuda)), remainder(ha, hb), std::string("int remainder ") + dtype_name(t));
    check_equal(fmod(ha.to(kCuda), hb.to(kCuda)), fmod(ha, hb), std::string("int fmod ") + dtype_name(t));
    check_equal(remainder(ha.to(kCuda), -3.0), remainder(ha, -3.0), std::string("int remainder scalar ") + dtype_name(t));
    CHECK_THROWS_WITH(remainder(ha.to(kCuda), zeros({1}, TensorOptions(t).device(kCuda))), Contains("ZeroDivisionError"));
    CHECK_THROWS_WITH(fmod(ha.to(kCuda), 0.0), Contains("ZeroDivisionError"));
  }
}

// ---------------------------------------------------------------- argmin, max/min of bool

TEST_CASE("argmin along a dim and over all elements: first of ties, first NaN, as argmax and PyTorch", "[gaps][reduce]") {
  // torch 1.13: x = [[3, 1, 1, 5], [2, nan, 0, nan], [4, 4, 4, 4]]
  const Tensor x = f32({3, 1, 1, 5, 2, NAN, 0, NAN, 4, 4, 4, 4}).reshape({3, 4});
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    INFO(dtype_name(t));
    const Tensor xt = cast(x, t);
    CHECK(argmin(xt, 1).dtype() == DType::I64);
    CHECK(ints(argmin(xt, 1)) == std::vector<int64_t>{1, 1, 0});
    CHECK(ints(argmin(xt, -1, true)) == std::vector<int64_t>{1, 1, 0});
    CHECK(argmin(xt, -1, true).shape() == Shape{3, 1});
    CHECK(ints(argmin(xt, 0)) == std::vector<int64_t>{1, 1, 1, 1});
    CHECK(argmin(xt).item<int64_t>() == 5);
    CHECK(argmin(xt).shape() == Shape{});
    CHECK(ints(argmax(xt, 1)) == std::vector<int64_t>{3, 1, 0});
    CHECK(ints(argmax(xt, 0)) == std::vector<int64_t>{2, 1, 2, 1});
    CHECK(argmax(xt).item<int64_t>() == 5);
  }
  CHECK(argmin(f32({1, -INFINITY, -INFINITY})).item<int64_t>() == 1);
  CHECK(ints(argmin(i64({5, -3, -3, 7}).reshape({1, 4}), 1)) == std::vector<int64_t>{1});
  CHECK(argmin(i64({5, -3, -3, 7})).item<int64_t>() == 1);
  CHECK(argmin(cast(i64({5, -3, 7}), DType::I32)).item<int64_t>() == 1);
  CHECK(argmin(from_vector<uint8_t>({5, 0, 0})).item<int64_t>() == 1);
  // 0-dim: index 0, shape [] (keepdim too), dims 0 and -1 only.
  const Tensor s = scalar_tensor(3.0);
  CHECK(argmin(s).item<int64_t>() == 0);
  CHECK(argmin(s, 0).shape() == Shape{});
  CHECK(argmin(s, 0, true).shape() == Shape{});
  CHECK(argmin(s, -1).shape() == Shape{});
  CHECK_THROWS_WITH(argmin(s, 1), Contains("argmin"));
  // Empty: no reduction over a size-0 dim ("Expected reduction dim 1 to have non-zero size"); over
  // another dim the result is empty.
  CHECK_THROWS_WITH(argmin(zeros({0})), Contains("argmin"));
  CHECK_THROWS_WITH(argmin(zeros({2, 0}), 1), Contains("argmin") && Contains("zero-size"));
  CHECK(argmin(zeros({2, 0}), 0).shape() == Shape{0});
  CHECK_THROWS_WITH(argmin(zeros({2, 3}), 2), Contains("argmin") && Contains("dim 2"));
  // Bool is refused, as PyTorch refuses it ("argmin_cpu" / "argmax_cpu" have no 'Bool' kernel).
  CHECK_THROWS_WITH(argmin(bools({true, false})), Contains("argmin") && Contains("bool"));
  CHECK_THROWS_WITH(argmax(bools({true, false}).reshape({1, 2}), 1), Contains("argmax") && Contains("bool"));
  // No gradient.
  const Tensor w = f32({2, 1}).requires_grad_();
  CHECK_FALSE(argmin(w).requires_grad());
  CHECK_FALSE(argmin(w, 0).requires_grad());
}

TEST_CASE("max and min of a bool tensor: bool values, first indices, as PyTorch", "[gaps][reduce]") {
  // torch 1.13: b = [[T, F, T], [F, F, F], [F, T, T]]
  const Tensor b = bools({true, false, true, false, false, false, false, true, true}).reshape({3, 3});
  ValuesIndices mx = max(b, 1);
  CHECK(mx.values.dtype() == DType::Bool);
  CHECK(mx.values.to_vector<bool>() == std::vector<bool>{true, false, true});
  CHECK(ints(mx.indices) == std::vector<int64_t>{0, 0, 1});
  ValuesIndices mn = min(b, 1);
  CHECK(mn.values.dtype() == DType::Bool);
  CHECK(mn.values.to_vector<bool>() == std::vector<bool>{false, false, false});
  CHECK(ints(mn.indices) == std::vector<int64_t>{1, 0, 0});
  ValuesIndices mk = max(b, 0, true);
  CHECK(mk.values.shape() == Shape{1, 3});
  CHECK(mk.values.to_vector<bool>() == std::vector<bool>{true, true, true});
  CHECK(ints(mk.indices) == std::vector<int64_t>{0, 2, 0});
  CHECK(max(b).dtype() == DType::Bool);
  CHECK(max(b).to_vector<bool>() == std::vector<bool>{true});
  CHECK(min(b).to_vector<bool>() == std::vector<bool>{false});
  ValuesIndices m0 = max(bools({true}).reshape({}), 0);
  CHECK(m0.values.shape() == Shape{});
  CHECK(m0.values.to_vector<bool>() == std::vector<bool>{true});
  CHECK(m0.indices.item<int64_t>() == 0);
}

TEST_CASE("cuda: argmin and max/min of bool tensors agree with the CPU", "[cuda][gaps][reduce]") {
  using namespace cuda_test;
  MINIDL_REQUIRE_GPU();
  for (DType t : kFloat64) {
    const Tensor x = randn_cpu({33, 517}, t, 21);
    for (int64_t d : {0, 1}) check_equal(argmin(x.to(kCuda), d), argmin(x, d), std::string("argmin ") + dtype_name(t));
    check_equal(argmin(x.to(kCuda)), argmin(x), std::string("argmin all ") + dtype_name(t));
  }
  const Tensor ties = f32({3, 1, 1, 5, 2, NAN, 0, NAN}).reshape({2, 4});
  CHECK(ints(argmin(ties.to(kCuda), 1)) == std::vector<int64_t>{1, 1});
  const Tensor mask = gt(randn_cpu({40, 70}, DType::F32, 22), 1.5);
  for (int64_t d : {0, 1}) {
    ValuesIndices h = max(mask, d), g = max(mask.to(kCuda), d);
    check_equal(g.values, h.values, "bool max values");
    check_equal(g.indices, h.indices, "bool max indices");
    ValuesIndices hm = min(mask, d), gm = min(mask.to(kCuda), d);
    check_equal(gm.values, hm.values, "bool min values");
    check_equal(gm.indices, hm.indices, "bool min indices");
  }
}

// ---------------------------------------------------------------- index_select, narrow, arange

TEST_CASE("index_select of a 0-dim tensor takes one index and gives a 0-dim result", "[gaps][index]") {
  // torch 1.13: torch.index_select(torch.tensor(5.), 0, torch.tensor([0])) -> tensor(5.) (0-dim), also
  // with a 0-dim index, an int32 index and dim -1; index [1] or [-1] -> "index out of range in self";
  // dim 1 -> "Dimension out of range". Index [0, 0] and [] are errors in 2.x ("Index to scalar can
  // have only 1 value, got 2 value(s)"; 1.13 returned tensor(5.) and uninitialised memory).
  const Tensor s = scalar_tensor(5.0, DType::F32);
  CHECK(index_select(s, 0, i64({0})).shape() == Shape{});
  CHECK(index_select(s, 0, i64({0})).item() == 5.0);
  CHECK(index_select(s, 0, scalar_tensor(0, DType::I64)).shape() == Shape{});
  CHECK(index_select(s, -1, i64({0})).item() == 5.0);
  CHECK(index_select(s, 0, cast(i64({0}), DType::I32)).shape() == Shape{});
  const Tensor si = index_select(scalar_tensor(7, DType::I64), 0, i64({0}));
  CHECK(si.dtype() == DType::I64);
  CHECK(si.shape() == Shape{});
  CHECK(si.item<int64_t>() == 7);
  CHECK_THROWS_WITH(index_select(s, 0, i64({1})), Contains("index_select") && Contains("out of bounds"));
  CHECK_THROWS_WITH(index_select(s, 0, i64({-1})), Contains("index_select") && Contains("out of bounds"));
  CHECK_THROWS_WITH(index_select(s, 1, i64({0})), Contains("index_select"));
  CHECK_THROWS_WITH(index_select(s, 0, i64({0, 0})), Contains("index_select") && Contains("only 1 value, got 2"));
  CHECK_THROWS_WITH(index_select(s, 0, zeros({0}, DType::I64)), Contains("index_select") && Contains("only 1 value, got 0"));
  // The gradient reaches the 0-dim input: backward(tensor(3.)) -> grad tensor(3.).
  const Tensor w = scalar_tensor(5.0, DType::F64).requires_grad_();
  const Tensor out = index_select(w, 0, i64({0}));
  const TL g = autograd::grad({out}, {w}, {scalar_tensor(3.0, DType::F64)});
  CHECK(g[0].shape() == Shape{});
  CHECK(g[0].item() == 3.0);
  // A 1-D input with a 0-dim index keeps its dim: torch gives tensor([3.]).
  CHECK(index_select(f32({1, 2, 3}), 0, scalar_tensor(2, DType::I64)).shape() == Shape{1});
}

TEST_CASE("narrow of a size-0 dim: start 0 only, as PyTorch 2.x", "[gaps][view]") {
  // torch 2.x: torch.zeros(0, 3).narrow(0, -1, 0) -> IndexError "start out of range (expected to be
  // in range of [0, 0], but got -1)" (torch 1.13 wrapped -1 to 0 and returned an empty tensor);
  // narrow(0, 0, 0) -> shape [0, 3]; narrow(0, 0, 1) -> "start (0) + length (1) exceeds dimension
  // size (0)."; narrow(0, 1, 0) -> start out of range.
  const Tensor z = zeros({0, 3});
  CHECK_THROWS_WITH(z.narrow(0, -1, 0), Contains("narrow") && Contains("start out of range") && Contains("-1"));
  CHECK_THROWS_WITH(z.narrow(0, -1, 1), Contains("narrow") && Contains("start out of range"));
  CHECK(z.narrow(0, 0, 0).shape() == Shape{0, 3});
  CHECK_THROWS_WITH(z.narrow(0, 0, 1), Contains("narrow") && Contains("exceeds dimension size 0"));
  CHECK_THROWS_WITH(z.narrow(0, 1, 0), Contains("narrow") && Contains("start out of range"));
  CHECK(zeros({3, 2}).narrow(0, 3, 0).shape() == Shape{0, 2});
  CHECK(zeros({3, 2}).narrow(0, -1, 0).shape() == Shape{0, 2});
}

TEST_CASE("arange with an integer dtype and a fractional end: PyTorch's sign check, NumPy's length", "[gaps][factory]") {
  // torch 1.13 (and 2.x), every integer dtype: the step's sign is checked against the end converted
  // to the integer type: arange(0, -0.5) -> [] (it was an error here), arange(0, -1.5) -> "upper bound
  // and larger bound inconsistent with step sign"; float32 arange(0, -0.5) is that error too.
  CHECK(arange(0, -0.5, 1, DType::I64).shape() == Shape{0});
  CHECK(arange(0, -0.5, 1, DType::I32).shape() == Shape{0});
  CHECK(arange(0, -0.5, 1, DType::U8).shape() == Shape{0});
  CHECK(arange(0, -0.5).dtype() == DType::I64);
  CHECK_THROWS_WITH(arange(0, -1.5, 1, DType::I64), Contains("arange") && Contains("inconsistent"));
  CHECK_THROWS_WITH(arange(0, -1.5, 1, DType::I32), Contains("arange") && Contains("inconsistent"));
  CHECK_THROWS_WITH(arange(0, -0.5, 1, DType::F32), Contains("arange") && Contains("inconsistent"));
  // The length: int32, uint8 and float32 count from the end itself, as NumPy: arange(0, 5.5) has 6
  // elements, arange(5, 0.5, -1) 5, arange(0, 1e-9) 1.
  CHECK(ints(arange(0, 5.5, 1, DType::I32)) == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  CHECK(ints(arange(0, 5.5, 1, DType::U8)) == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  CHECK(arange(0, 5.5, 1, DType::F32).to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5});
  CHECK(ints(arange(5, 0.5, -1, DType::I32)) == std::vector<int64_t>{5, 4, 3, 2, 1});
  CHECK(ints(arange(5, -0.5, -2, DType::I32)) == std::vector<int64_t>{5, 3, 1});
  CHECK(ints(arange(0, 1e-9, 1, DType::I32)) == std::vector<int64_t>{0});
  // int64 counts the same way here. Deliberate difference: torch's int64 path truncates the end
  // first (pytorch#149097, reported as a bug): arange(0, 5.5) -> [0..4], arange(0, 5.5, 2) -> [0, 2, 4],
  // arange(0, -5.5, -1) -> [0..-4], arange(0, 1e-9) -> [].
  CHECK(ints(arange(0, 5.5, 1, DType::I64)) == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  CHECK(ints(arange(0, 5.5, 2, DType::I64)) == std::vector<int64_t>{0, 2, 4});
  CHECK(ints(arange(0, -5.5, -1, DType::I64)) == std::vector<int64_t>{0, -1, -2, -3, -4, -5});
  CHECK(ints(arange(0, 1e-9, 1, DType::I64)) == std::vector<int64_t>{0});
  CHECK(ints(arange(0, 5.0, 1, DType::I64)) == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(ints(arange(5, 0.5, -1, DType::I64)) == std::vector<int64_t>{5, 4, 3, 2, 1});
}

// ---------------------------------------------------------------- conv1d's errors

TEST_CASE("conv1d's errors name conv1d and show its 3-D shapes and 1-D hyper-parameters", "[gaps][conv]") {
  // torch 1.13, F.conv1d(x [2, 4, 10], w [6, 4, 3], b [6]) and one wrong argument each (messages
  // such as "Given groups=1, weight of size [6, 4, 3], expected input[2, 5, 10] to have 4 channels,
  // but got 5 channels instead"; "Calculated padded input size per channel: (2). Kernel size: (3).").
  const Tensor x = zeros({2, 4, 10}), w = zeros({6, 4, 3}), b = zeros({6});
  CHECK(conv1d(x, w, b).shape() == Shape{2, 6, 8});
  auto conv1d_error = [](const std::function<void()>& f, const std::string& part) {
    INFO("expected an error containing \"" << part << "\"");
    try {
      f();
      FAIL("no error");
    } catch (const Error& e) {
      const std::string msg = e.what();
      INFO("message: " << msg);
      CHECK(msg.rfind("conv1d: ", 0) == 0);
      CHECK(msg.find("conv2d") == std::string::npos);
      CHECK(msg.find("4-D") == std::string::npos);
      CHECK(msg.find(part) != std::string::npos);
    }
  };
  conv1d_error([&] { conv1d(zeros({2, 4, 10, 1}), w); }, "3-D (batched) input, but got input of size [2, 4, 10, 1]");
  conv1d_error([&] { conv1d(zeros({10}), w); }, "input of size [10]");
  conv1d_error([&] { conv1d(x, zeros({6, 4})); }, "3-D weight");
  conv1d_error([&] { conv1d(zeros({2, 5, 10}), w); }, "weight of size [6, 4, 3], expected input[2, 5, 10] to have 4 channels, but got 5");
  conv1d_error([&] { conv1d(zeros({5, 10}), w); }, "expected input[5, 10] to have 4 channels");
  conv1d_error([&] { conv1d(x, zeros({6, 2, 3}), Tensor(), 1, 0, 1, 4); }, "but got weight of size [6, 2, 3]");
  conv1d_error([&] { conv1d(x, w, zeros({5})); }, "weight of size [6, 4, 3], expected bias to be 1-dimensional with 6 elements");
  conv1d_error([&] { conv1d(zeros({2, 4, 2}), w); }, "padded input size per channel: (2). Kernel size: (3)");
  conv1d_error([&] { conv1d(zeros({2, 4, 5}), w, Tensor(), 1, 0, 3); }, "(5). Kernel size: (7)");
  conv1d_error([&] { conv1d(x, w, Tensor(), 0); }, "non-positive stride is not supported, got stride 0");
  conv1d_error([&] { conv1d(x, w, Tensor(), 1, -1); }, "negative padding is not supported, got padding -1");
  conv1d_error([&] { conv1d(x, w, Tensor(), 1, 0, 0); }, "got dilation 0");
  conv1d_error([&] { conv1d(x, w, Tensor(), 1, 0, 1, 0); }, "non-positive groups");
  conv1d_error([&] { conv1d(x, cast(w, DType::F64)); }, "weight type (f64)");
  conv1d_error([&] { conv1d(x, w, cast(b, DType::F64)); }, "bias type (f64)");
  conv1d_error([&] { conv1d(cast(x, DType::I64), cast(w, DType::I64)); }, "conv1d");
  // conv2d keeps its own names and shapes.
  CHECK_THROWS_WITH(conv2d(zeros({2, 5, 10, 10}), zeros({6, 4, 3, 3})),
                    Contains("conv2d") && Contains("weight of size [6, 4, 3, 3], expected input[2, 5, 10, 10]"));
  CHECK_THROWS_WITH(conv2d(zeros({2, 4, 2, 2}), zeros({6, 4, 3, 3})), Contains("conv2d") && Contains("(2 x 2). Kernel size: (3 x 3)"));
}

// PyTorch's overlap rule for in-place ops: a source sharing the destination's memory in another
// layout or at another offset is refused (it would be read after being overwritten: y.add_(y.t())
// gave [0, 3, 5, 6]); the same memory in the same layout, disjoint memory, and tensors with gaps
// (PyTorch's "too hard" case) run. Cases and outcomes as torch 1.13 printed them.
TEST_CASE("in-place ops refuse a partly overlapping source as PyTorch", "[tensor][inplace]") {
  using Catch::Matchers::Contains;
  auto square = [] { return arange(0, 4, 1, DType::F32).reshape({2, 2}); };
  auto refused = [&](const std::function<void()>& f, const char* op) {
    CHECK_THROWS_WITH(f(), Contains(op) && Contains("refer to a single memory location") && Contains("clone()"));
  };
  refused([&] { Tensor z = square(); z.add_(z.t()); }, "add_");
  refused([&] { Tensor z = square(); z.add_(z.select(0, 0)); }, "add_");
  refused([&] { Tensor z = square(); z.mul_(z.t()); }, "mul_");
  refused([&] { Tensor z = square(); z.copy_(z.t()); }, "copy_");
  refused([&] { Tensor z = arange(0, 6, 1, DType::F32); z.slice(0, 1, 5).copy_(z.slice(0, 0, 4)); }, "copy_");
  Tensor z = square();
  z.add_(z);
  CHECK(z.to_vector<double>() == std::vector<double>{0, 2, 4, 6});
  z.mul_(z.view({2, 2}));
  CHECK(z.to_vector<double>() == std::vector<double>{0, 4, 16, 36});
  Tensor line = arange(0, 6, 1, DType::F32);
  line.slice(0, 0, 3).copy_(line.slice(0, 3, 6));
  CHECK(line.to_vector<double>() == std::vector<double>{3, 4, 5, 3, 4, 5});
  line = arange(0, 6, 1, DType::F32);
  line.slice(0, 0, 6, 2).copy_(line.slice(0, 1, 6, 2));
  CHECK(line.to_vector<double>() == std::vector<double>{1, 1, 3, 3, 5, 5});
}

// No-op views are views with a node of their own (PyTorch: SqueezeBackward1, TBackward0,
// TransposeBackward0), so a hook on them sees only the gradient that flows through them.
TEST_CASE("squeeze of a longer dim, t() of a vector and transpose of a 0-dim tensor are views of their own", "[tensor][autograd]") {
  Tensor x = arange(0, 3, 1, DType::F32).requires_grad_();
  for (int which = 0; which < 3; ++which) {
    x.set_grad(Tensor());
    Tensor base = which == 2 ? x.sum() : x;
    Tensor v = which == 0 ? base.squeeze(0) : which == 1 ? base.t() : base.transpose(0, -1);
    CHECK_FALSE(v.is_leaf());
    CHECK(v.shape() == base.shape());
    v.register_hook([](const Tensor& g) { return mul(g, 10.0); });
    add(v.sum(), base.sum()).backward();
    CHECK(x.grad().to_vector<double>() == std::vector<double>{11, 11, 11});
  }
  // Still views: a write through one shows in the base.
  Tensor y = arange(0, 3, 1, DType::F32);
  y.squeeze(0).fill_(7.0);
  CHECK(y.to_vector<double>() == std::vector<double>{7, 7, 7});
}

TEST_CASE("an empty tensor is contiguous whatever its strides, as PyTorch", "[tensor]") {
  Tensor e = zeros({0, 3}).t();
  CHECK(e.is_contiguous());
  CHECK(e.contiguous().is_same(e));
  CHECK(e.is_contiguous(MemoryFormat::Contiguous));
  // An empty channels-last tensor still suggests (and clone keeps) channels-last.
  Tensor cl = zeros({0, 3, 2, 2}).contiguous(MemoryFormat::ChannelsLast);
  CHECK(cl.suggest_memory_format() == MemoryFormat::ChannelsLast);
}

// norm(x, inf) with a NaN element: the norm is NaN and, as PyTorch's backward (2.x counts the NaN
// element as the extreme; times sign(NaN) = 0), every gradient is 0 (torch 1.13 printed [0, 0, 0];
// it was all NaN here, the shared gradient divided by zero extremes).
TEST_CASE("norm with p = inf gives a NaN norm PyTorch's zero gradient", "[tensor][reduce]") {
  for (double p : {INFINITY, -INFINITY}) {
    Tensor x = from_vector<double>({3.0, NAN, 1.0}).requires_grad_();
    Tensor n = norm(x, p);
    CHECK(std::isnan(n.item()));
    n.backward();
    const std::vector<double> g = x.grad().to_vector<double>();
    CHECK(g == std::vector<double>{0.0, 0.0, 0.0});
  }
  // Without NaN: ties share the gradient (PyTorch's amax rule), signs kept.
  Tensor y = from_vector<double>({-2.0, 2.0, 1.0}).requires_grad_();
  norm(y, INFINITY).backward();
  CHECK(y.grad().to_vector<double>() == std::vector<double>{-0.5, 0.5, 0.0});
}

TEST_CASE("isnan, isinf and isfinite match torch, integers included", "[gaps]") {
  const Tensor x = f32({1.0f, NAN, INFINITY, -INFINITY, 0.0f});
  CHECK(isnan(x).dtype() == DType::Bool);
  CHECK(ints(isnan(x)) == std::vector<int64_t>{0, 1, 0, 0, 0});
  CHECK(ints(isinf(x)) == std::vector<int64_t>{0, 0, 1, 1, 0});
  CHECK(ints(isfinite(x)) == std::vector<int64_t>{1, 0, 0, 0, 1});
  CHECK(ints(isnan(i64({1, 2}))) == std::vector<int64_t>{0, 0});
  CHECK(ints(isfinite(i64({1, 2}))) == std::vector<int64_t>{1, 1});
  CHECK(ints(isinf(cast(f32({INFINITY, 1.0f}), DType::BF16))) == std::vector<int64_t>{1, 0});
  CHECK(ints(isfinite(bools({true, false}))) == std::vector<int64_t>{1, 1});
}

TEST_CASE("any and all match torch: dims, keepdim, empty tensors, NaN, u8 results", "[gaps]") {
  const Tensor m = from_vector<double>({0, 1, 0, 0, 0, 0}, {2, 3});
  CHECK(any(m).dtype() == DType::Bool);
  CHECK(ints(any(m)) == std::vector<int64_t>{1});
  CHECK(ints(all(m)) == std::vector<int64_t>{0});
  CHECK(ints(any(m, 1)) == std::vector<int64_t>{1, 0});
  const Tensor k = all(from_vector<double>({1, 2, 3, 0}, {2, 2}), 0, true);
  CHECK(k.shape() == Shape{1, 2});
  CHECK(ints(k) == std::vector<int64_t>{1, 0});
  CHECK(any(cast(i64({0, 2}), DType::U8)).dtype() == DType::U8);
  CHECK(ints(any(cast(i64({0, 2}), DType::U8))) == std::vector<int64_t>{1});
  CHECK(ints(all(cast(i64({0, 2}), DType::U8))) == std::vector<int64_t>{0});
  CHECK(ints(any(zeros({0}))) == std::vector<int64_t>{0});
  CHECK(ints(all(zeros({0}))) == std::vector<int64_t>{1});
  CHECK(ints(any(f32({NAN}))) == std::vector<int64_t>{1});
  CHECK(ints(all(f32({NAN}))) == std::vector<int64_t>{1});
  CHECK(ints(any(from_vector<int64_t>({0, 3, 0, 0}, {2, 2}), 0)) == std::vector<int64_t>{0, 1});
  // The common check of a training loop: is any gradient not finite?
  CHECK(ints(any(eq(isfinite(f32({1.0f, INFINITY})), 0.0))) == std::vector<int64_t>{1});
}

TEST_CASE("flip and repeat match torch: values, gradients, errors", "[gaps]") {
  const Tensor a = cast(arange(0, 6, 1), DType::F32).reshape({2, 3});
  check_same_values(flip(a, {0}), {3, 4, 5, 0, 1, 2}, "flip 0");
  check_same_values(flip(a, {0, -1}), {5, 4, 3, 2, 1, 0}, "flip 0, -1");
  check_same_values(flip(f32({3.0f}).reshape({}), {0}), {3}, "flip 0-dim");
  CHECK_FALSE(flip(a, {}).is_same(a));  // a new tensor, as torch's
  CHECK_THROWS_WITH(flip(a, {0, 0}), Catch::Contains("flip: dim 0 appears multiple times in the list of dims"));
  const Tensor r = repeat(a, {2, 1, 2});
  CHECK(r.shape() == Shape{2, 2, 6});
  check_same_values(r, {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5, 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}, "repeat");
  CHECK(repeat(a, {0, 2}).shape() == Shape{0, 6});
  CHECK(repeat(a, {1, 1}).raw_data() != a.raw_data());  // a copy even when nothing repeats, as torch's
  CHECK_THROWS_WITH(repeat(a, {2}), Catch::Contains("repeat: the number of repeats (1) can not be smaller than the number of dimensions"));
  CHECK_THROWS_WITH(repeat(a, {2, -1}), Catch::Contains("repeat: repeats must be non-negative, got -1"));
  // torch: (g.repeat(2, 2) * arange(12).reshape(2, 6)).sum().backward() -> [18, 22, 26];
  // (flip(h, [0]) * [1, 10, 100]).sum().backward() -> [100, 10, 1]
  Tensor g = f32({1, 2, 3}).requires_grad_();
  sum(mul(repeat(g, {2, 2}), cast(arange(0, 12, 1), DType::F32).reshape({2, 6}))).backward();
  check_same_values(g.grad(), {18, 22, 26}, "repeat gradient");
  Tensor h = f32({1, 2, 3}).requires_grad_();
  sum(mul(flip(h, {0}), f32({1, 10, 100}))).backward();
  check_same_values(h.grad(), {100, 10, 1}, "flip gradient");
}

TEST_CASE("tril and triu match torch: diagonals, batches, bool, NaN, gradient", "[gaps]") {
  const Tensor a = cast(arange(1, 13, 1), DType::F32).reshape({3, 4});
  check_same_values(tril(a), {1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0}, "tril");
  check_same_values(tril(a, -1), {0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}, "tril -1");
  check_same_values(triu(a, 1), {0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12}, "triu 1");
  check_same_values(triu(a, -2), {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, "triu -2");
  const Tensor b = tril(ones({2, 2, 3}, DType::Bool));
  CHECK(b.dtype() == DType::Bool);
  CHECK(ints(b) == std::vector<int64_t>{1, 0, 0, 1, 1, 0, 1, 0, 0, 1, 1, 0});
  check_same_values(tril(f32({1.0f, NAN, 3.0f, 4.0f}).reshape({2, 2})), {1, 0, 3, 4}, "tril NaN above");
  CHECK_THROWS_WITH(tril(ones({3})), Catch::Contains("tril: expected a tensor of at least 2 dims"));
  // torch: (triu(g) * [[10, 20, 30], [40, 50, 60]]).sum().backward() -> [[10, 20, 30], [0, 50, 60]]
  Tensor g = cast(arange(1, 7, 1), DType::F32).reshape({2, 3}).requires_grad_();
  sum(mul(triu(g), cast(arange(10, 70, 10), DType::F32).reshape({2, 3}))).backward();
  check_same_values(g.grad(), {10, 20, 30, 0, 50, 60}, "triu gradient");
}

TEST_CASE("lerp, addcmul and addcdiv match torch bit for bit, gradients as torch's formulas", "[gaps]") {
  const Tensor a = f32({1, 2, -3, 10}), b = f32({3, -2, 5, 10.5}), w = f32({0.1f, 0.6f, 1.5f, -0.5f});
  check_same_values(lerp(a, b, 0.3), {1.600000023841858, 0.7999999523162842, -0.5999999046325684, 10.149999618530273}, "lerp 0.3");
  check_same_values(lerp(a, b, 0.75), {2.5, -1, 3, 10.375}, "lerp 0.75");
  check_same_values(lerp(a, b, w), {1.2000000476837158, -0.40000009536743164, 9, 9.75}, "lerp tensor weight");
  check_same_values(lerp(zeros({2, 1}), ones({1, 3}), 0.25), {0.25, 0.25, 0.25, 0.25, 0.25, 0.25}, "lerp broadcast");
  Tensor ga = a.clone().requires_grad_(), gb = b.clone().requires_grad_(), gw = w.clone().requires_grad_();
  sum(lerp(ga, gb, gw)).backward();
  check_same_values(ga.grad(), {0.8999999761581421, 0.3999999761581421, -0.5, 1.5}, "lerp d/dstart");
  check_same_values(gb.grad(), {0.10000000149011612, 0.6000000238418579, 1.5, -0.5}, "lerp d/dend");
  check_same_values(gw.grad(), {2, -4, 8, 0.5}, "lerp d/dweight");
  CHECK_THROWS_WITH(lerp(a, cast(b, DType::F64), 0.5), Catch::Contains("lerp: expected end of self's dtype f32"));
  check_same_values(addcmul(a, b, w, 0.5), {1.149999976158142, 1.399999976158142, 0.75, 7.375}, "addcmul");
  check_same_values(addcdiv(a, b, w, 2.0), {61, -4.666666507720947, 3.6666665077209473, -32}, "addcdiv");
  CHECK_THROWS_WITH(addcdiv(i64({1}), i64({2}), i64({3})), Catch::Contains("addcdiv: integer division with addcdiv is not supported"));
}
