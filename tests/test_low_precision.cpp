// f16 and bf16: element-wise, reduction and matmul ops against f64 references on the rounded
// inputs, with tolerances derived from traits(dtype).eps (the result is computed in f32 and rounded
// once, so it must lie within half an ulp of the exact value plus the f32 error); conversion
// exactness (round-to-nearest-even on chosen bit patterns, overflow, subnormals, NaN) on both the
// vectorized and the scalar paths; the DType traits table.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <sstream>

#include "framework/half.h"
#include "ops/cpu/conv_dnnl.h"
#include "ops/cpu/matmul_dnnl.h"
#include "minidl.h"
#include "thread_count.h"

using namespace minidl;

namespace {

using Vec = std::vector<double>;
constexpr double kEps32 = 1.1920928955078125e-07;

const DType kLow[] = {DType::F16, DType::BF16};

// Random values rounded to dt, returned as the tensor and the exact f64 values it holds.
std::pair<Tensor, Vec> rand_low(const Shape& shape, double lo, double hi, uint64_t seed, DType dt) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Vec v(numel_of(shape));
  for (double& x : v) x = u(rng);
  Tensor t = from_vector(v, shape).to(dt);
  return {t, t.to_vector<double>()};
}

// Allowed error of a low-precision result computed in f32 and rounded once: half an ulp of the
// value (eps/2 relative, as ulp <= eps * |x|), a few f32 ulps of slack, and a floor for results in
// the subnormal range (eps * min_normal is the subnormal spacing).
double bound(DType dt, double ref, double f32_slack = 8) {
  const DTypeTraits& tr = traits(dt);
  return 0.5 * tr.eps * std::abs(ref) + f32_slack * kEps32 * std::abs(ref) + tr.eps * tr.min_normal;
}

std::string within(const Tensor& got, const Vec& ref, const std::function<double(size_t)>& tol) {
  Vec g = got.to_vector<double>();
  if (g.size() != ref.size()) return "size mismatch";
  for (size_t k = 0; k < g.size(); ++k) {
    const bool ok = (std::isnan(ref[k]) && std::isnan(g[k])) || (std::isinf(ref[k]) && g[k] == ref[k]) ||
                    std::abs(g[k] - ref[k]) <= tol(k);
    if (!ok) {
      std::ostringstream os;
      os << "element " << k << ": got " << g[k] << ", expected " << ref[k] << " +- " << tol(k) << " (" << got.meta_str() << ")";
      return os.str();
    }
  }
  return "";
}

uint16_t bits16(const Tensor& t, int64_t i) {
  uint16_t b;
  std::memcpy(&b, static_cast<const char*>(t.contiguous().raw_data()) + 2 * i, 2);
  return b;
}

Tensor from_bits32(const std::vector<uint32_t>& bits) {
  std::vector<float> f(bits.size());
  std::memcpy(f.data(), bits.data(), bits.size() * 4);
  return from_vector(f);
}

Tensor from_bits16(const std::vector<uint16_t>& bits, DType dt) { return from_blob(bits.data(), {static_cast<int64_t>(bits.size())}, dt); }

constexpr double kSqrt1_2 = 0.70710678118654752440;

struct UnaryRef {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  double lo, hi;
};

}  // namespace

// ---------------------------------------------------------------- traits

TEST_CASE("DType traits table", "[low_precision][traits]") {
  using hl = std::numeric_limits<half>;
  using bl = std::numeric_limits<bfloat16>;
  CHECK(traits(DType::F16).eps == std::ldexp(1.0, -10));
  // (Eigen 3.4's numeric_limits<half>::epsilon() is 2^-13, a known Eigen bug: not compared.)
  CHECK(traits(DType::F16).max == 65504.0);
  CHECK(traits(DType::F16).max == static_cast<float>(hl::max()));
  CHECK(traits(DType::F16).min_normal == std::ldexp(1.0, -14));
  CHECK(traits(DType::F16).min_normal == static_cast<float>(hl::min()));
  CHECK(traits(DType::F16).mantissa_bits == 10);
  CHECK(traits(DType::BF16).eps == std::ldexp(1.0, -7));
  CHECK(traits(DType::BF16).eps == static_cast<float>(bl::epsilon()));
  CHECK(traits(DType::BF16).max == static_cast<float>(bl::max()));
  CHECK(traits(DType::BF16).max == (2 - std::ldexp(1.0, -7)) * std::ldexp(1.0, 127));
  CHECK(traits(DType::BF16).min_normal == std::ldexp(1.0, -126));
  CHECK(traits(DType::BF16).mantissa_bits == 7);
  CHECK(traits(DType::F32).eps == std::numeric_limits<float>::epsilon());
  CHECK(traits(DType::F32).max == std::numeric_limits<float>::max());
  CHECK(traits(DType::F32).min_normal == std::numeric_limits<float>::min());
  CHECK(traits(DType::F32).mantissa_bits == 23);
  CHECK(traits(DType::F64).eps == std::numeric_limits<double>::epsilon());
  CHECK(traits(DType::F64).max == std::numeric_limits<double>::max());
  CHECK(traits(DType::F64).min_normal == std::numeric_limits<double>::min());
  CHECK(traits(DType::F64).mantissa_bits == 52);
  CHECK(traits(DType::I64).max == static_cast<double>(std::numeric_limits<int64_t>::max()));
  CHECK(traits(DType::I32).max == std::numeric_limits<int32_t>::max());
  CHECK(traits(DType::U8).max == 255);
  CHECK(traits(DType::Bool).max == 1);
  for (int i = 0; i < kNumDTypes; ++i) {
    const DType t = static_cast<DType>(i);
    const DTypeTraits& tr = traits(t);
    INFO(tr.name);
    if (tr.is_floating) {
      CHECK(tr.eps == std::ldexp(1.0, -tr.mantissa_bits));  // eps follows from the mantissa width
      // max is representable and survives a round trip; the value just above it (by half an ulp of
      // the dtype, rounding to even = up) overflows to inf in a cast, and is refused as a fill value
      // (PyTorch's checked scalar conversion).
      if (t != DType::F64) {
        CHECK(full({1}, tr.max, t).item() == tr.max);
        if (t != DType::F32) {
          CHECK(std::isinf(cast(full({1}, tr.max * (1 + tr.eps / 2), DType::F64), t).item()));
          CHECK_THROWS_WITH(full({1}, tr.max * (1 + tr.eps / 2), t), Catch::Contains("overflow"));
        }
      }
      CHECK(full({1}, tr.min_normal, t).item() == tr.min_normal);
      CHECK(full({1}, 1 + tr.eps, t).item() == 1 + tr.eps);
      CHECK(full({1}, 1 + tr.eps / 4, t).item() == 1.0);
    } else {
      CHECK(tr.eps == 0);
      CHECK(tr.mantissa_bits == 0);
    }
  }
  CHECK(element_size(DType::F16) == 2);
  CHECK(element_size(DType::BF16) == 2);
  CHECK(element_size(DType::Bool) == 1);
  CHECK(element_size(DType::I64) == 8);
  CHECK(is_low_precision(DType::F16));
  CHECK(is_low_precision(DType::BF16));
  CHECK_FALSE(is_low_precision(DType::F32));
  CHECK(is_floating(DType::BF16));
  CHECK_FALSE(is_floating(DType::I32));
}

// ---------------------------------------------------------------- conversions

TEST_CASE("f32 -> bf16 rounds to nearest even, on the vector and the scalar path", "[low_precision][convert]") {
  // (f32 bits, expected bf16 bits)
  const std::vector<std::pair<uint32_t, uint16_t>> cases = {
      {0x3F800000, 0x3F80},  // 1.0 exact
      {0x3F808000, 0x3F80},  // halfway, lower is even: down
      {0x3F818000, 0x3F82},  // halfway, lower is odd: up
      {0x3F808001, 0x3F81},  // just above halfway: up
      {0x3F807FFF, 0x3F80},  // just below halfway: down
      {0xBF818000, 0xBF82},  // negative, halfway, odd: away from zero
      {0x7F7FFFFF, 0x7F80},  // FLT_MAX rounds up to inf
      {0x7F7F7FFF, 0x7F7F},  // largest value that stays finite
      {0x7F800000, 0x7F80},  // inf
      {0xFF800000, 0xFF80},  // -inf
      {0x00000001, 0x0000},  // smallest f32 subnormal -> +0
      {0x00018000, 0x0002},  // subnormal halfway, odd: up
      {0x00008000, 0x0000},  // subnormal halfway, even: down
      {0x80000000, 0x8000},  // -0 keeps its sign
      {0x007FFFFF, 0x0080},  // largest f32 subnormal rounds up to the smallest normal
  };
  std::vector<uint32_t> in;
  for (auto& c : cases) in.push_back(c.first);
  // Repeat to 3 * 15 = 45 elements: vector blocks plus a tail.
  std::vector<uint32_t> rep;
  for (int r = 0; r < 3; ++r) rep.insert(rep.end(), in.begin(), in.end());
  Tensor src = from_bits32(rep);
  Tensor contiguous = src.to(DType::BF16);
  Tensor strided = src.reshape({3, 15}).t().to(DType::BF16).t().reshape({45});  // element-wise (scalar) path
  for (size_t i = 0; i < rep.size(); ++i) {
    INFO("f32 bits 0x" << std::hex << rep[i]);
    CHECK(bits16(contiguous, i) == cases[i % cases.size()].second);
    CHECK(bits16(strided, i) == cases[i % cases.size()].second);
  }
  // NaN stays NaN (a signaling NaN must not truncate to inf), sign kept.
  Tensor n = from_bits32({0x7F800001, 0xFF800001, 0x7FC00000, 0x7F800001, 0x7F800001, 0x7F800001, 0x7F800001, 0x7F800001, 0x7F800001}).to(DType::BF16);
  for (int i = 0; i < 9; ++i) {
    const uint16_t b = bits16(n, i);
    CHECK((b & 0x7F80) == 0x7F80);
    CHECK((b & 0x007F) != 0);
  }
  CHECK((bits16(n, 1) & 0x8000) != 0);
}

TEST_CASE("f32 -> f16: nearest even, max 65504, overflow to inf, subnormals", "[low_precision][convert]") {
  const double tiny = std::ldexp(1.0, -24);  // smallest f16 subnormal
  // (input, expected f16 value)
  const std::vector<std::pair<float, double>> cases = {
      {65504.0f, 65504.0},
      {65519.0f, 65504.0},             // below the halfway point to 65536
      {65520.0f, INFINITY},            // halfway: ties to even = inf
      {1e5f, INFINITY},
      {-1e5f, -INFINITY},
      {2049.0f, 2048.0},               // spacing 2 at 2048: tie to even
      {2051.0f, 2052.0},
      {1.0f + 1.0f / 2048, 1.0},       // 1 + eps/2: tie, even
      {1.0f + 3.0f / 2048, 1.0 + 2.0 / 1024},
      {static_cast<float>(tiny), tiny},
      {static_cast<float>(tiny / 2), 0.0},             // halfway to 0: even
      {static_cast<float>(tiny * 0.75), tiny},         // above halfway
      {static_cast<float>(tiny * 1.5), 2 * tiny},      // halfway between 1 and 2 subnormal steps: even
      {static_cast<float>(std::ldexp(1.0, -20)), std::ldexp(1.0, -20)},  // subnormal, exact
      {static_cast<float>(std::ldexp(1.0, -14)), std::ldexp(1.0, -14)},  // min normal
      {static_cast<float>(std::ldexp(1.0, -14) - tiny), std::ldexp(1.0, -14) - tiny},  // largest subnormal
      {1e-10f, 0.0},
      {-0.0f, -0.0},
  };
  std::vector<float> in;
  for (auto& c : cases) in.push_back(c.first);
  Tensor src = from_vector(in);  // 18 elements: two vector blocks of 8 and a tail of 2
  Tensor v = src.to(DType::F16);
  Tensor s = src.reshape({2, 9}).t().to(DType::F16).t().reshape({18});
  Vec got_v = v.to_vector<double>(), got_s = s.to_vector<double>();
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("input " << cases[i].first);
    CHECK(got_v[i] == cases[i].second);
    CHECK(got_s[i] == cases[i].second);
    CHECK(std::signbit(got_v[i]) == std::signbit(cases[i].second));
  }
  Tensor n = from_vector<float>({NAN, -NAN}).to(DType::F16);
  CHECK(std::isnan(n.to_vector<float>()[0]));
}

TEST_CASE("every f16 and bf16 bit pattern survives a round trip through f32 and f64", "[low_precision][convert]") {
  std::vector<uint16_t> all(65536);
  for (int i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  for (DType dt : kLow) {
    INFO(dtype_name(dt));
    Tensor t = from_bits16(all, dt);
    Tensor through32 = t.to(DType::F32).to(dt);
    Tensor through64 = t.to(DType::F64).to(dt);
    Tensor strided = t.reshape({256, 256}).t().to(DType::F32).t().to(dt).reshape({65536});  // element-wise paths
    Vec f = t.to_vector<double>();
    int bad = 0;
    for (int i = 0; i < 65536; ++i) {
      if (std::isnan(f[i])) continue;  // NaN payloads may change: checked below
      bad += bits16(through32, i) != all[i];
      bad += bits16(through64, i) != all[i];
      bad += bits16(strided, i) != all[i];
    }
    CHECK(bad == 0);
    // NaNs stay NaN on every path.
    Vec r32 = through32.to_vector<double>(), r64 = through64.to_vector<double>();
    int nan_bad = 0;
    for (int i = 0; i < 65536; ++i)
      if (std::isnan(f[i])) nan_bad += !std::isnan(r32[i]) + !std::isnan(r64[i]);
    CHECK(nan_bad == 0);
  }
}

TEST_CASE("conversions between low precision and integers", "[low_precision][convert]") {
  Tensor h = from_vector<float>({-2.75f, -0.5f, 0.0f, 1.5f, 300.0f}).to(DType::F16);
  CHECK(h.to(DType::I64).to_vector<int64_t>() == std::vector<int64_t>{-2, 0, 0, 1, 300});
  CHECK(h.to(DType::Bool).to_vector<bool>() == std::vector<bool>{true, true, false, true, true});
  CHECK(h.to(DType::BF16).to_vector<float>() == std::vector<float>{-2.75f, -0.5f, 0.0f, 1.5f, 300.0f});
  CHECK(from_vector<int64_t>({2049, 70000}).to(DType::F16).to_vector<float>() == std::vector<float>{2048, INFINITY});
  CHECK(from_vector<int64_t>({257, 259}).to(DType::BF16).to_vector<float>() == std::vector<float>{256, 260});
}

// ---------------------------------------------------------------- element-wise

TEST_CASE("f16/bf16 element-wise ops are the f64 result on the rounded inputs, rounded once", "[low_precision][elementwise]") {
  const std::vector<UnaryRef> unary = {
      {"exp", [](const Tensor& x) { return exp(x); }, [](double v) { return std::exp(v); }, -4, 4},
      {"log", [](const Tensor& x) { return log(x); }, [](double v) { return std::log(v); }, 0.05, 8},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](double v) { return std::sqrt(v); }, 0, 8},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, [](double v) { return 1 / std::sqrt(v); }, 0.05, 8},
      {"abs", [](const Tensor& x) { return abs(x); }, [](double v) { return std::abs(v); }, -4, 4},
      {"neg", [](const Tensor& x) { return neg(x); }, [](double v) { return -v; }, -4, 4},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double v) { return std::tanh(v); }, -4, 4},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, [](double v) { return 1 / (1 + std::exp(-v)); }, -8, 8},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double v) { return v > 0 ? v : 0; }, -4, 4},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.1); }, [](double v) { return v > 0 ? v : 0.1 * v; }, -4, 4},
      {"gelu", [](const Tensor& x) { return gelu(x); }, [](double v) { return 0.5 * v * (1 + std::erf(v * kSqrt1_2)); }, -3, 3},
      {"gelu tanh", [](const Tensor& x) { return gelu(x, true); },
       [](double v) { return 0.5 * v * (1 + std::tanh(0.79788456080286535588 * (v + 0.044715 * v * v * v))); }, -3, 3},
      {"softplus", [](const Tensor& x) { return softplus(x); }, [](double v) { return std::log1p(std::exp(v)); }, -6, 6},
      {"clamp", [](const Tensor& x) { return clamp(x, -1.0, 0.5); }, [](double v) { return std::min(std::max(v, -1.0), 0.5); }, -4, 4},
      {"add scalar", [](const Tensor& x) { return add(x, 0.3); }, [](double v) { return v + static_cast<float>(0.3); }, -4, 4},
      {"mul scalar", [](const Tensor& x) { return mul(x, 1.7); }, [](double v) { return v * static_cast<float>(1.7); }, -4, 4},
      {"div scalar", [](const Tensor& x) { return div(x, 3.0); }, [](double v) { return v / 3; }, -4, 4},
      {"pow scalar", [](const Tensor& x) { return pow(x, 2.5); }, [](double v) { return std::pow(v, 2.5); }, 0, 4},
  };
  uint64_t seed = 1;
  for (DType dt : kLow) {
    for (const UnaryRef& u : unary) {
      INFO(u.name << " " << dtype_name(dt));
      // 1037 elements: vector blocks, a partial block, and a strided view (scalar loads).
      auto [x, xv] = rand_low({1037}, u.lo, u.hi, seed++, dt);
      Tensor out = u.op(x);
      CHECK(out.dtype() == dt);
      Vec ref(xv.size());
      for (size_t i = 0; i < xv.size(); ++i) ref[i] = u.ref(xv[i]);
      CHECK(within(out, ref, [&](size_t k) { return bound(dt, ref[k]); }) == "");
      Tensor sv = x.slice(0, 1, 1037, 3);
      Vec sref;
      for (size_t i = 1; i < xv.size(); i += 3) sref.push_back(u.ref(xv[i]));
      CHECK(within(u.op(sv), sref, [&](size_t k) { return bound(dt, sref[k]); }) == "");
    }
    // Binary, broadcasting a row.
    auto [a, av] = rand_low({33, 31}, -4, 4, seed++, dt);
    auto [b, bv] = rand_low({31}, 0.25, 4, seed++, dt);
    const std::vector<std::pair<const char*, std::function<double(double, double)>>> bin = {
        {"add", [](double x, double y) { return x + y; }}, {"sub", [](double x, double y) { return x - y; }},
        {"mul", [](double x, double y) { return x * y; }}, {"div", [](double x, double y) { return x / y; }},
        {"maximum", [](double x, double y) { return std::max(x, y); }},
        {"pow", [](double x, double y) { return std::pow(std::abs(x), y); }},
    };
    for (const auto& [name, f] : bin) {
      INFO(name << " " << dtype_name(dt));
      Tensor out;
      const std::string n = name;
      if (n == "add") out = add(a, b);
      else if (n == "sub") out = sub(a, b);
      else if (n == "mul") out = mul(a, b);
      else if (n == "div") out = div(a, b);
      else if (n == "maximum") out = maximum(a, b);
      else out = pow(abs(a), b);
      CHECK(out.dtype() == dt);
      Vec ref(av.size());
      for (size_t i = 0; i < av.size(); ++i) ref[i] = f(av[i], bv[i % 31]);
      // pow reads |a| rounded: abs is exact, so the same reference applies.
      CHECK(within(out, ref, [&](size_t k) { return bound(dt, ref[k]); }) == "");
    }
    // Comparisons are exact.
    Tensor c = gt(a, b.unsqueeze(0));
    Vec cv = c.to_vector<double>();
    int wrong = 0;
    for (size_t i = 0; i < av.size(); ++i) wrong += cv[i] != double(av[i] > bv[i % 31]);
    CHECK(wrong == 0);
  }
}

TEST_CASE("fused activation backward kernels in f32, f16 and bf16", "[low_precision][elementwise]") {
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> op;
    std::function<double(double x, double y)> dydx;  // from the rounded input x and rounded output y
  };
  const std::vector<Case> cases = {
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double, double y) { return 1 - y * y; }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, [](double, double y) { return y * (1 - y); }},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double, double y) { return y > 0 ? 1.0 : 0.0; }},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.25); }, [](double x, double) { return x > 0 ? 1.0 : 0.25; }},
      {"gelu", [](const Tensor& x) { return gelu(x); },
       [](double x, double) { return 0.5 * (1 + std::erf(x * kSqrt1_2)) + x * 0.3989422804014327 * std::exp(-0.5 * x * x); }},
      {"gelu tanh", [](const Tensor& x) { return gelu(x, true); },
       [](double x, double) {
         const double c = 0.79788456080286535588, t = std::tanh(c * (x + 0.044715 * x * x * x));
         return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x);
       }},
      {"softplus", [](const Tensor& x) { return softplus(x); }, [](double x, double) { return 1 / (1 + std::exp(-x)); }},
      {"softplus beta 2 threshold 3", [](const Tensor& x) { return softplus(x, 2.0, 3.0); },
       [](double x, double) { return 2 * x > 3 ? 1.0 : 1 / (1 + std::exp(-2 * x)); }},
  };
  uint64_t seed = 77;
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    for (const Case& c : cases) {
      INFO(c.name << " " << dtype_name(dt));
      auto [x0, xv] = rand_low({301}, -3, 3, seed++, dt);
      Tensor x = x0.detach().requires_grad_();
      Tensor y = c.op(x);
      auto [g, gv] = rand_low({301}, -2, 2, seed++, dt);
      Tensor gx = autograd::grad({y}, {x}, {g})[0];
      CHECK(gx.dtype() == dt);
      Vec yv = y.to_vector<double>(), ref(xv.size());
      for (size_t i = 0; i < xv.size(); ++i) ref[i] = gv[i] * c.dydx(xv[i], yv[i]);
      const Vec& gvals = gv;  // clang 14 cannot capture a structured binding
      CHECK(within(gx, ref, [&](size_t k) { return bound(dt, ref[k], 16) + 16 * kEps32 * std::abs(gvals[k]); }) == "");
    }
  }
}

// ---------------------------------------------------------------- reductions

TEST_CASE("f16/bf16 reductions accumulate in f32 and round once", "[low_precision][reduce]") {
  uint64_t seed = 300;
  for (DType dt : kLow) {
    const Shape shape{24, 129};
    auto [x, xv] = rand_low(shape, -2, 2, seed++, dt);
    for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{{}, {0}, {1}}) {
      INFO(dtype_name(dt) << " dims " << shape_str(dims));
      const int64_t rows = shape[0], cols = shape[1];
      const bool all = dims.empty();
      const int64_t nout = all ? 1 : (dims[0] == 0 ? cols : rows);
      const int64_t n = all ? rows * cols : shape[dims[0]];
      Vec s(nout, 0.0), sa(nout, 0.0), mx(nout, -INFINITY);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          const int64_t o = all ? 0 : (dims[0] == 0 ? j : i);
          const double v = xv[i * cols + j];
          s[o] += v;
          sa[o] += std::abs(v);
          mx[o] = std::max(mx[o], v);
        }
      auto sum_tol = [&](size_t k) { return bound(dt, s[k]) + n * kEps32 * sa[k]; };
      Tensor got = sum(x, dims);
      CHECK(got.dtype() == dt);
      CHECK(within(got, s, sum_tol) == "");
      Vec m = s;
      for (double& v : m) v /= n;
      CHECK(within(mean(x, dims), m, [&](size_t k) { return bound(dt, m[k]) + kEps32 * sa[k]; }) == "");
      if (!all) CHECK(within(max(x, dims[0]).values, mx, [](size_t) { return 0.0; }) == "");
      // Transposed input: the other reduction path.
      std::vector<int64_t> tdims;
      for (int64_t d : dims) tdims.push_back(1 - d);
      CHECK(within(sum(x.t(), tdims), s, sum_tol) == "");
    }
  }
}

TEST_CASE("low-precision sums do not lose small addends (f32 accumulation)", "[low_precision][reduce]") {
  // In f16, 2048 + 1 rounds back to 2048; accumulated in f32 the sum is exact and representable.
  CHECK(sum(from_vector<float>({2048, 1, 1}).to(DType::F16)).item() == 2050);
  CHECK(sum(from_vector<float>({256, 1, 1}).to(DType::BF16)).item() == 258);
  // 100k elements (parallel path): 1 + 99,999 * 2^-8 in bf16 would stall at 2; in f32 it does not.
  Tensor many = full({100000}, 1.0 / 256, DType::BF16);
  CHECK(sum(many).item() == Approx(100000.0 / 256).epsilon(traits(DType::BF16).eps));
  Tensor cols = full({1000, 100}, 1.0 / 256, DType::F16);
  for (double v : sum(cols, {0}).to_vector<double>()) CHECK(v == Approx(1000.0 / 256).epsilon(traits(DType::F16).eps));
}

TEST_CASE("mean and var of f16 do not overflow in the intermediate sums", "[low_precision][reduce]") {
  // The sum (120,000) and the squares (up to 9e8) exceed f16's max; the results do not.
  Tensor big = from_vector<float>({60000, 60000}).to(DType::F16);
  Tensor m = mean(big);
  CHECK(m.dtype() == DType::F16);
  CHECK(m.item() == 60000);
  // var = 22,500: each square fits in f16, their sum (90,000) does not.
  Tensor v = var(from_vector<float>({-150, 150, -150, 150}).to(DType::F16), {}, 0);
  CHECK(v.dtype() == DType::F16);
  CHECK(v.item() == 22496);  // 22,500 rounded to f16 (spacing 16)
  // A result beyond f16's range is inf, as it must be.
  CHECK(std::isinf(var(from_vector<float>({-300, 300, -300, 300}).to(DType::F16)).item()));
}

// ---------------------------------------------------------------- matmul

TEST_CASE("f16/bf16 matmul accumulates in f32: error within eps/2 of the result plus f32 bounds", "[low_precision][linear]") {
  const std::vector<std::array<int64_t, 3>> sizes = {{1, 1, 1}, {7, 13, 5}, {33, 64, 17}, {20, 257, 9}, {64, 1024, 8}};
  uint64_t seed = 900;
  for (DType dt : kLow) {
    for (auto [m, k, n] : sizes) {
      INFO(dtype_name(dt) << " " << m << "x" << k << "x" << n);
      auto [a, av] = rand_low({m, k}, -1, 1, seed++, dt);
      auto [b, bv] = rand_low({k, n}, -1, 1, seed++, dt);
      auto [bias, biasv] = rand_low({n}, -1, 1, seed++, dt);
      Vec ref(m * n), ab(m * n), lin(m * n);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double s = 0, sa = 0;
          for (int64_t p = 0; p < k; ++p) {
            s += av[i * k + p] * bv[p * n + j];
            sa += std::abs(av[i * k + p] * bv[p * n + j]);
          }
          ref[i * n + j] = s;
          ab[i * n + j] = sa;
          lin[i * n + j] = s + biasv[j];
        }
      // f32 accumulation error grows like sqrt(K) in practice; K is a hard bound. Low-precision
      // accumulation would be ~eps(dt) * sqrt(K) * sum|ab|, far outside this.
      const double sqrt_k = std::sqrt(double(k));  // a copy: clang 14 cannot capture a structured binding
      auto tol = [&](size_t q) { return bound(dt, ref[q], 2) + 2 * sqrt_k * kEps32 * ab[q] + 1e-30; };
      Tensor c = mm(a, b);
      CHECK(c.dtype() == dt);
      CHECK(within(c, ref, tol) == "");
      CHECK(within(matmul(a, b), ref, tol) == "");
      CHECK(within(mm(a.t().contiguous().t(), b.t().contiguous().t()), ref, tol) == "");  // column-major operands
      CHECK(within(bmm(a.unsqueeze(0).expand({2, m, k}), b.unsqueeze(0).expand({2, k, n})).select(0, 1), ref, tol) == "");
      Tensor w = b.t().contiguous();  // [n, k]
      CHECK(within(linear(a, w, bias), lin, [&](size_t q) { return bound(dt, lin[q], 2) + 2 * sqrt_k * kEps32 * (ab[q] + 1); }) == "");
    }
  }
  // The f16 result may overflow even though every product fits: that is the f16 contract.
  Tensor a = full({1, 4}, 200, DType::F16), b = full({4, 1}, 200, DType::F16);
  CHECK(std::isinf(mm(a, b).item()));
  CHECK(mm(a.to(DType::BF16), b.to(DType::BF16)).item() == 159744);  // 160,000 rounded to bf16 (spacing 1024)
}

// Where the CPU has AVX512_BF16, bf16 products run on oneDNN's bf16 matmul (ops/cpu/matmul_dnnl.h);
// the test above checks them against f64, this one against the widened f32 GEMM they replace, in
// every layout and with alpha and beta, and that they really ran there.
TEST_CASE("bf16 products on oneDNN's bf16 matmul match the widened f32 GEMM", "[low_precision][linear][dnnl]") {
  namespace dc = kernels::cpu::dnnl_conv;
  struct Restore {
    ~Restore() { dc::set_native_bf16(true); }
  } restore;
  dc::set_native_bf16(true);
  const minidl::testing::ThreadCount two(2);  // products above the GEMM's threshold cut into two threads' row slabs
  if (!dc::native_bf16()) {
    WARN("skipped: oneDNN finds no AVX512_BF16 on this CPU (or was not built in)");
    return;
  }
  const double eps = traits(DType::BF16).eps;
  uint64_t seed = 4200;
  // The MLP's products (fc1 forward, its weight gradient through transposed views, the 10-class
  // head), odd sizes, and one product the slabs of two threads split unevenly; a column-major a
  // (layouts 1 and 3) has each slab's rows copied row-major first.
  const std::vector<std::array<int64_t, 3>> sizes = {{128, 784, 256}, {256, 128, 784}, {128, 256, 10}, {40, 90, 80}, {300, 200, 500}};
  for (const auto& size : sizes) {
    const int64_t m = size[0], k = size[1], n = size[2];  // not a structured binding: clang 14 cannot capture one
    for (int layout = 0; layout < 4; ++layout) {
      INFO(m << "x" << k << "x" << n << ", layout " << layout);
      Tensor a = rand_low({m, k}, -1, 1, seed++, DType::BF16).first;
      Tensor b = rand_low({k, n}, -1, 1, seed++, DType::BF16).first;
      Tensor bias = rand_low({m, n}, -1, 1, seed++, DType::BF16).first;
      if (layout & 1) a = a.t().contiguous().t();  // column-major views
      if (layout & 2) b = b.t().contiguous().t();
      auto both = [&](const std::function<Tensor()>& f) {
        const int64_t before = kernels::cpu::dnnl_matmul::calls();
        Tensor native = f();
        CHECK(kernels::cpu::dnnl_matmul::calls() > before);
        dc::set_native_bf16(false);
        const int64_t widened_before = kernels::cpu::dnnl_matmul::calls();
        Tensor widened = f();
        CHECK(kernels::cpu::dnnl_matmul::calls() == widened_before);
        dc::set_native_bf16(true);
        // Both sum f32 products (exact for bf16 pairs) in f32 and round once to bf16: they differ by
        // the f32 sums' order, so by at most an ulp of bf16 where a sum lands near a rounding tie.
        const double scale = max(abs(widened.to(DType::F32))).item();
        CHECK(native.dtype() == DType::BF16);
        CHECK(max(abs(native.to(DType::F32) - widened.to(DType::F32))).item() <= 2 * eps * scale);
      };
      both([&] { return mm(a, b); });
      both([&] { return addmm(bias, a, b, 0.5, 2.0); });
      both([&] { return bmm(a.unsqueeze(0).expand({2, m, k}), b.unsqueeze(0).expand({2, k, n})); });
    }
  }
  // NaN and inf propagate as in f32; subnormal bf16 inputs count as zero (vdpbf16ps), where the
  // widened path keeps them: the documented difference.
  std::vector<float> ones(64 * 64, 1.0f);
  ones[0] = std::numeric_limits<float>::quiet_NaN();   // row 0
  ones[64] = std::numeric_limits<float>::infinity();  // row 1
  Tensor a = from_vector(ones, {64, 64}).to(DType::BF16), b = full({64, 64}, 1.0, DType::BF16);
  const Vec c = mm(a, b).to_vector<double>();
  CHECK(std::isnan(c[0 * 64 + 5]));
  CHECK(std::isinf(c[1 * 64 + 5]));
  CHECK(c[2 * 64 + 5] == 64);
  Tensor tiny = full({64, 64}, 1e-39, DType::BF16);  // subnormal in bf16 (min normal 1.18e-38)
  CHECK(tiny.to_vector<double>()[0] > 0);
  CHECK(max(abs(mm(tiny, b).to(DType::F32))).item() == 0);
}

TEST_CASE("casts to low precision and back are differentiable: gradients come back in the source dtype", "[low_precision][autograd]") {
  for (DType dt : kLow) {
    Tensor w = from_vector<float>({0.1f, 0.2f, 0.3f}).requires_grad_();
    Tensor y = mul(cast(w, dt), 3.0);
    CHECK(y.dtype() == dt);
    y.sum().backward();
    CHECK(w.grad().dtype() == DType::F32);
    CHECK(w.grad().to_vector<float>() == std::vector<float>{3, 3, 3});
  }
}
