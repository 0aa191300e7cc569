// Every op against a plain f64 implementation written here (loops over std::vector<double>), on
// random inputs: broadcasting (scalar, row, column, 3-D), non-contiguous inputs (transposed,
// sliced with steps, expanded), inputs above the OpenMP grain (parallel paths), reductions over
// every dim combination, matmul sizes that are not multiples of 8, integer dtypes and type
// promotion. The references never call minidl ops: they read values and strides only. The binary
// and unary tables run on the f64 and f32 targets of every available device (tests/targets.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <sstream>

#include "framework/half.h"
#include "minidl.h"
#include "ops/cpu/matmul_dnnl.h"
#include "ops/cpu_isa.h"
#include "targets.h"
#include "thread_count.h"

using namespace minidl;

namespace {

using Vec = std::vector<double>;

Vec randv(int64_t n, double lo, double hi, uint64_t seed, DType dt = DType::F64) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Vec v(n);
  for (double& x : v) {
    x = u(rng);
    if (dt == DType::F32) x = static_cast<float>(x);  // the reference sees what the tensor holds
  }
  return v;
}

Tensor make(const Vec& v, const Shape& s, DType dt = DType::F64, Device d = Device::cpu()) { return from_vector(v, s).to(dt).to(d); }

// The f64 and f32 targets of every device (tests/targets.h) that can run here, for the tables
// below that cover both.
std::vector<testing::Target> f64_f32_targets(const std::string& what) {
  std::vector<testing::Target> out;
  for (const testing::Target& t : testing::compiled_targets())
    if (t.dtype == DType::F64 || t.dtype == DType::F32) out.push_back(t);
  return testing::runnable(out, what);
}

// Calls f(index, linear position) for every element of `shape` in row-major order.
void for_each_index(const Shape& shape, const std::function<void(const Shape&, int64_t)>& f) {
  const int64_t n = numel_of(shape);
  Shape idx(shape.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    f(idx, k);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

// The logical values of `view`, a view over a contiguous base whose storage holds `base`.
Vec view_values(const Vec& base, const Tensor& view) {
  Vec out(view.numel());
  for_each_index(view.shape(), [&](const Shape& idx, int64_t k) {
    int64_t off = view.offset();
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * view.strides()[d];
    out[k] = base.at(off);
  });
  return out;
}

Shape ref_broadcast(const Shape& a, const Shape& b) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i + a.size() >= n ? a[i + a.size() - n] : 1;
    int64_t db = i + b.size() >= n ? b[i + b.size() - n] : 1;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Value of a (shape sa, row-major values) at the broadcast output index idx.
double at_broadcast(const Vec& a, const Shape& sa, const Shape& idx) {
  int64_t off = 0, stride = 1;
  for (size_t d = sa.size(); d-- > 0;) {
    const int64_t i = sa[d] == 1 ? 0 : idx[idx.size() - sa.size() + d];
    off += i * stride;
    stride *= sa[d];
  }
  return a[off];
}

Vec ref_map2(const Vec& a, const Shape& sa, const Vec& b, const Shape& sb, const std::function<double(double, double)>& f) {
  const Shape out = ref_broadcast(sa, sb);
  Vec r(numel_of(out));
  for_each_index(out, [&](const Shape& idx, int64_t k) { r[k] = f(at_broadcast(a, sa, idx), at_broadcast(b, sb, idx)); });
  return r;
}

Vec ref_map1(const Vec& a, const std::function<double(double)>& f) {
  Vec r(a.size());
  for (size_t i = 0; i < a.size(); ++i) r[i] = f(a[i]);
  return r;
}

// "" when got has `shape` and every value is within atol + rtol * |want| (NaN matches NaN).
std::string close(const Tensor& got, const Shape& shape, const Vec& want, double rtol, double atol = 0) {
  std::ostringstream os;
  if (got.shape() != shape) {
    os << "shape " << shape_str(got.shape()) << ", expected " << shape_str(shape);
    return os.str();
  }
  Vec g = got.to_vector<double>();
  for (size_t k = 0; k < want.size(); ++k) {
    const bool both_nan = std::isnan(g[k]) && std::isnan(want[k]);
    const bool same_inf = std::isinf(want[k]) && g[k] == want[k];
    if (!(both_nan || same_inf || std::abs(g[k] - want[k]) <= atol + rtol * std::abs(want[k]))) {
      os << "element " << k << ": got " << g[k] << ", expected " << want[k] << " (" << got.meta_str() << ")";
      return os.str();
    }
  }
  return "";
}

double rtol_for(DType dt) { return dt == DType::F64 ? 1e-13 : 4e-6; }

constexpr double kSqrt1_2 = 0.70710678118654752440;
double gelu_ref(double x) { return 0.5 * x * (1 + std::erf(x * kSqrt1_2)); }
double gelu_tanh_ref(double x) { return 0.5 * x * (1 + std::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x))); }

struct BinCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  double lo = -3, hi = 3;  // input range (positive for pow/div denominators)
};

const std::vector<BinCase>& binary_cases() {
  static const std::vector<BinCase> cases = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }, [](double x, double y) { return x + y; }},
      {"add alpha", [](const Tensor& a, const Tensor& b) { return add(a, b, -1.5); }, [](double x, double y) { return x - 1.5 * y; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }, [](double x, double y) { return x - y; }},
      {"sub alpha", [](const Tensor& a, const Tensor& b) { return sub(a, b, 2.0); }, [](double x, double y) { return x - 2 * y; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, [](double x, double y) { return x * y; }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }, [](double x, double y) { return x / y; }, 0.5, 3},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); }, [](double x, double y) { return std::pow(x, y); }, 0.5, 3},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, [](double x, double y) { return std::max(x, y); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, [](double x, double y) { return std::min(x, y); }},
      {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }, [](double x, double y) { return double(x == y); }},
      {"ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); }, [](double x, double y) { return double(x != y); }},
      {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }, [](double x, double y) { return double(x < y); }},
      {"le", [](const Tensor& a, const Tensor& b) { return le(a, b); }, [](double x, double y) { return double(x <= y); }},
      {"gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); }, [](double x, double y) { return double(x > y); }},
      {"ge", [](const Tensor& a, const Tensor& b) { return ge(a, b); }, [](double x, double y) { return double(x >= y); }},
  };
  return cases;
}

struct UnCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  double lo = -4, hi = 4;
};

// The inverse of std::erf by bisection (60 halvings of [-6, 6]): a reference that shares nothing
// with the kernels' Halley iteration.
double erfinv_by_bisection(double y) {
  double lo = -6, hi = 6;
  for (int i = 0; i < 60; ++i) (std::erf(0.5 * (lo + hi)) < y ? lo : hi) = 0.5 * (lo + hi);
  return 0.5 * (lo + hi);
}

const std::vector<UnCase>& unary_cases() {
  static const std::vector<UnCase> cases = {
      {"neg", [](const Tensor& x) { return neg(x); }, [](double v) { return -v; }},
      {"exp", [](const Tensor& x) { return exp(x); }, [](double v) { return std::exp(v); }},
      {"log", [](const Tensor& x) { return log(x); }, [](double v) { return std::log(v); }, 0.01, 5},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](double v) { return std::sqrt(v); }, 0, 5},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, [](double v) { return 1 / std::sqrt(v); }, 0.01, 5},
      {"abs", [](const Tensor& x) { return abs(x); }, [](double v) { return std::abs(v); }},
      {"sign", [](const Tensor& x) { return sign(x); }, [](double v) { return double((v > 0) - (v < 0)); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double v) { return std::tanh(v); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, [](double v) { return 1 / (1 + std::exp(-v)); }, -20, 20},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double v) { return v > 0 ? v : 0; }},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.1); }, [](double v) { return v > 0 ? v : 0.1 * v; }},
      {"gelu", [](const Tensor& x) { return gelu(x); }, gelu_ref},
      {"gelu tanh", [](const Tensor& x) { return gelu(x, true); }, gelu_tanh_ref},
      {"softplus", [](const Tensor& x) { return softplus(x); }, [](double v) { return std::log1p(std::exp(v)); }, -30, 19},
      {"softplus beta threshold", [](const Tensor& x) { return softplus(x, 2.0, 3.0); },
       [](double v) { return 2 * v > 3 ? v : std::log1p(std::exp(2 * v)) / 2; }},
      {"clamp", [](const Tensor& x) { return clamp(x, -1.0, 2.0); }, [](double v) { return std::min(std::max(v, -1.0), 2.0); }},
      {"clamp min", [](const Tensor& x) { return clamp(x, 0.5, std::nullopt); }, [](double v) { return std::max(v, 0.5); }},
      {"add scalar", [](const Tensor& x) { return add(x, 2.5); }, [](double v) { return v + 2.5; }},
      {"sub scalar", [](const Tensor& x) { return sub(x, 2.5); }, [](double v) { return v - 2.5; }},
      {"rsub scalar", [](const Tensor& x) { return rsub(x, 2.5); }, [](double v) { return 2.5 - v; }},
      {"mul scalar", [](const Tensor& x) { return mul(x, -0.75); }, [](double v) { return v * -0.75; }},
      {"div scalar", [](const Tensor& x) { return div(x, 4.0); }, [](double v) { return v / 4; }},
      {"pow scalar", [](const Tensor& x) { return pow(x, 3.0); }, [](double v) { return v * v * v; }},
      {"pow scalar fractional", [](const Tensor& x) { return pow(x, 1.5); }, [](double v) { return std::pow(v, 1.5); }, 0, 4},
      {"sin", [](const Tensor& x) { return sin(x); }, [](double v) { return std::sin(v); }, -6, 6},
      {"cos", [](const Tensor& x) { return cos(x); }, [](double v) { return std::cos(v); }, -1.5, 1.5},
      {"tan", [](const Tensor& x) { return tan(x); }, [](double v) { return std::tan(v); }, -1.2, 1.2},
      {"asin", [](const Tensor& x) { return asin(x); }, [](double v) { return std::asin(v); }, -1, 1},
      {"acos", [](const Tensor& x) { return acos(x); }, [](double v) { return std::acos(v); }, -1, 0.9},
      {"atan", [](const Tensor& x) { return atan(x); }, [](double v) { return std::atan(v); }, -10, 10},
      {"sinh", [](const Tensor& x) { return sinh(x); }, [](double v) { return std::sinh(v); }, -5, 5},
      {"cosh", [](const Tensor& x) { return cosh(x); }, [](double v) { return std::cosh(v); }, -5, 5},
      {"asinh", [](const Tensor& x) { return asinh(x); }, [](double v) { return std::asinh(v); }, -10, 10},
      {"acosh", [](const Tensor& x) { return acosh(x); }, [](double v) { return std::acosh(v); }, 1.1, 10},
      {"atanh", [](const Tensor& x) { return atanh(x); }, [](double v) { return std::atanh(v); }, -0.99, 0.99},
      {"log1p", [](const Tensor& x) { return log1p(x); }, [](double v) { return std::log1p(v); }, -0.9, 5},
      {"expm1", [](const Tensor& x) { return expm1(x); }, [](double v) { return std::expm1(v); }, -5, 5},
      {"log2", [](const Tensor& x) { return log2(x); }, [](double v) { return std::log2(v); }, 0.01, 5},
      {"log10", [](const Tensor& x) { return log10(x); }, [](double v) { return std::log10(v); }, 0.01, 5},
      {"exp2", [](const Tensor& x) { return exp2(x); }, [](double v) { return std::exp2(v); }, -10, 10},
      {"erf", [](const Tensor& x) { return erf(x); }, [](double v) { return std::erf(v); }, -3, 3},
      {"erfc", [](const Tensor& x) { return erfc(x); }, [](double v) { return std::erfc(v); }, -1, 3},
      {"erfinv", [](const Tensor& x) { return erfinv(x); }, erfinv_by_bisection, -0.99, 0.99},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }, [](double v) { return 1 / v; }, 0.1, 5},
      {"floor", [](const Tensor& x) { return floor(x); }, [](double v) { return std::floor(v); }, -5, 5},
      {"ceil", [](const Tensor& x) { return ceil(x); }, [](double v) { return std::ceil(v); }, -5, 5},
      {"round", [](const Tensor& x) { return round(x); }, [](double v) { return std::nearbyint(v); }, -5, 5},
      {"trunc", [](const Tensor& x) { return trunc(x); }, [](double v) { return std::trunc(v); }, -5, 5},
      {"hardswish", [](const Tensor& x) { return hardswish(x); }, [](double v) { return v * std::clamp(v + 3, 0.0, 6.0) / 6; }, -5, 5},
      {"hardsigmoid", [](const Tensor& x) { return hardsigmoid(x); }, [](double v) { return std::clamp(v + 3, 0.0, 6.0) / 6; }, -5, 5},
      {"mish", [](const Tensor& x) { return mish(x); }, [](double v) { return v * std::tanh(std::log1p(std::exp(v))); }, -8, 8},
      {"logsigmoid", [](const Tensor& x) { return logsigmoid(x); }, [](double v) { return -std::log1p(std::exp(-v)); }, -20, 20},
  };
  return cases;
}

// Reference reduction of x (row-major, `shape`) over sorted dims; result in keepdim shape.
enum class R { Sum, Mean, Var, Max, Min, ArgMax, ArgMin };
Vec ref_reduce(const Vec& x, const Shape& shape, const std::vector<int64_t>& dims, R op, int64_t correction = 1) {
  Shape ks = shape;
  for (int64_t d : dims) ks[d] = 1;
  Vec out(numel_of(ks));
  std::vector<Vec> groups(out.size());
  std::vector<std::vector<int64_t>> pos(out.size());
  for_each_index(shape, [&](const Shape& idx, int64_t k) {
    int64_t o = 0, stride = 1, p = 0, pstride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      const bool red = std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) != dims.end();
      o += (red ? 0 : idx[d]) * stride;
      stride *= ks[d];
      if (red) {
        p += idx[d] * pstride;
        pstride *= shape[d];
      }
    }
    groups[o].push_back(x[k]);
    pos[o].push_back(p);
  });
  for (size_t o = 0; o < out.size(); ++o) {
    const Vec& g = groups[o];
    double s = 0;
    for (double v : g) s += v;
    switch (op) {
      case R::Sum: out[o] = s; break;
      case R::Mean: out[o] = s / g.size(); break;
      case R::Var: {
        double m = s / g.size(), ss = 0;
        for (double v : g) ss += (v - m) * (v - m);
        out[o] = ss / (static_cast<double>(g.size()) - correction);
        break;
      }
      case R::Max: out[o] = *std::max_element(g.begin(), g.end()); break;
      case R::Min: out[o] = *std::min_element(g.begin(), g.end()); break;
      case R::ArgMax: out[o] = pos[o][std::max_element(g.begin(), g.end()) - g.begin()]; break;
      case R::ArgMin: out[o] = pos[o][std::min_element(g.begin(), g.end()) - g.begin()]; break;
    }
  }
  return out;
}

Shape drop(const Shape& s, const std::vector<int64_t>& dims) {
  Shape r;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) r.push_back(s[d]);
  return r;
}

// C = A[m,k] @ B[k,n], row-major.
Vec ref_mm(const Vec& a, const Vec& b, int64_t m, int64_t k, int64_t n) {
  Vec c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
      c[i * n + j] = s;
    }
  return c;
}

Vec transpose_ref(const Vec& a, int64_t rows, int64_t cols) {
  Vec t(a.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[j * rows + i] = a[i * cols + j];
  return t;
}

}  // namespace

// ---------------------------------------------------------------- element-wise

TEST_CASE("binary ops match the f64 reference across broadcasting shapes", "[reference][binary]") {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3}, {2, 3}}, {{2, 3}, {}},     {{}, {2, 3}},     {{}, {}},          {{3, 1}, {1, 4}},
      {{2, 3}, {3}},    {{4, 1}, {4, 5}}, {{2, 1, 4}, {3, 1}}, {{5}, {2, 3, 1}}, {{2, 3, 4}, {2, 3, 4}},
      {{0, 3}, {3}},
  };
  uint64_t seed = 1;
  for (const testing::Target& t : f64_f32_targets("binary reference table")) {
    const DType dt = t.dtype;
    for (const BinCase& c : binary_cases()) {
      for (const auto& [sa, sb] : shapes) {
        Vec a = randv(numel_of(sa), c.lo, c.hi, seed++, dt), b = randv(numel_of(sb), c.lo, c.hi, seed++, dt);
        if (numel_of(sa) > 1 && numel_of(sb) > 1) b[0] = a[0];  // a tie for comparisons and max/min
        INFO(c.name << " " << t.name() << " " << shape_str(sa) << " x " << shape_str(sb));
        Tensor out = c.op(make(a, sa, dt, t.dev()), make(b, sb, dt, t.dev()));
        CHECK(out.device() == t.dev());
        CHECK(close(out, ref_broadcast(sa, sb), ref_map2(a, sa, b, sb, c.ref), rtol_for(dt), 1e-300) == "");
      }
    }
  }
}

TEST_CASE("binary ops on non-contiguous inputs: transposed, sliced with steps, expanded", "[reference][binary]") {
  Vec base_a = randv(6 * 8, 0.5, 3, 11), base_b = randv(8 * 6, 0.5, 3, 12);
  Tensor A = make(base_a, {6, 8}), B = make(base_b, {8, 6});
  // Each pair has the same logical shape [3, 4] (or broadcasts to it).
  const std::vector<std::pair<Tensor, Tensor>> pairs = {
      {A.slice(0, 0, 6, 2).slice(1, 1, 8, 2), B.t().slice(0, 2, 5).slice(1, 0, 8, 2)},
      {A.t().slice(0, 0, 3).slice(1, 1, 5), B.slice(0, 3, 6).slice(1, 0, 4)},
      {A.select(1, 3).slice(0, 0, 3).unsqueeze(1).expand({3, 4}), B.slice(0, 0, 4).select(1, 5).expand({3, 4})},
      {A.narrow(0, 2, 3).narrow(1, 4, 4), B.t().select(1, 7).slice(0, 0, 4)},
  };
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto& [a, b] = pairs[i];
    Vec va = view_values(base_a, a), vb = view_values(base_b, b);
    for (const BinCase& c : binary_cases()) {
      INFO("pair " << i << " " << c.name);
      CHECK(close(c.op(a, b), ref_broadcast(a.shape(), b.shape()), ref_map2(va, a.shape(), vb, b.shape(), c.ref), 1e-13) == "");
    }
  }
}

TEST_CASE("unary ops match the f64 reference, contiguous and strided", "[reference][unary]") {
  uint64_t seed = 100;
  for (const testing::Target& t : f64_f32_targets("unary reference table")) {
    const DType dt = t.dtype;
    for (const UnCase& c : unary_cases()) {
      INFO(c.name << " " << t.name());
      Vec a = randv(3 * 5 * 7, c.lo, c.hi, seed++, dt);
      a[0] = c.lo;  // the range's edges (0 for sqrt, thresholds' neighbourhood)
      Tensor x = make(a, {3, 5, 7}, dt, t.dev());
      CHECK(c.op(x).device() == t.dev());
      // Absolute slack for values that cancel (gelu's 1 + erf(x) near x = -4) in f32.
      const double rtol = rtol_for(dt) * 4, atol = dt == DType::F64 ? 1e-15 : 1e-6;
      CHECK(close(c.op(x), {3, 5, 7}, ref_map1(a, c.ref), rtol, atol) == "");
      Tensor v = x.permute({2, 0, 1}).slice(0, 1, 7, 3);  // strided, offset view
      CHECK(close(c.op(v), v.shape(), ref_map1(view_values(a, v), c.ref), rtol, atol) == "");
      CHECK(close(c.op(x.select(2, 6)), {3, 5}, ref_map1(view_values(a, x.select(2, 6)), c.ref), rtol, atol) == "");
    }
  }
}

TEST_CASE("special values: NaN propagates through max/min/clamp/relu, inf through exp/log", "[reference][unary]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  Tensor x = from_vector<double>({nan, 1.0, -inf, inf, 0.0});
  Tensor y = from_vector<double>({0.0, nan, 0.0, 0.0, -0.0});
  CHECK(close(maximum(x, y), {5}, {nan, nan, 0, inf, 0}, 0) == "");
  CHECK(close(minimum(x, y), {5}, {nan, nan, -inf, 0, 0}, 0) == "");
  CHECK(close(clamp(x, -1.0, 1.0), {5}, {nan, 1, -1, 1, 0}, 0) == "");
  CHECK(close(exp(x), {5}, {nan, std::exp(1.0), 0, inf, 1}, 1e-15) == "");
  CHECK(close(log(from_vector<double>({0.0, -1.0, inf})), {3}, {-inf, nan, inf}, 0) == "");
  CHECK(close(sigmoid(from_vector<double>({-inf, inf, -800, 800})), {4}, {0, 1, 0, 1}, 0) == "");
  CHECK(close(softplus(from_vector<double>({-800, 800})), {2}, {0, 800}, 0) == "");
  CHECK(close(div(from_vector<double>({1, -1, 0}), zeros({3}, DType::F64)), {3}, {inf, -inf, nan}, 0) == "");
  CHECK(close(sign(from_vector<double>({-0.0, 0.0, -2, 3})), {4}, {0, 0, -1, 1}, 0) == "");
  CHECK(max(from_vector<double>({1, nan, 3})).item() != max(from_vector<double>({1, nan, 3})).item());  // NaN
  auto [v, i] = max(from_vector<double>({1, nan, 3, nan}, {1, 4}), 1);
  CHECK(std::isnan(v.item()));
  CHECK(i.item<int64_t>() == 1);  // the first NaN, as PyTorch
}

TEST_CASE("NaN propagates as in PyTorch through relu, leaky_relu, maximum/minimum, comparisons, pooling and argmax, forward and backward", "[reference][unary]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<testing::Target> floating;
  for (const testing::Target& t : testing::compiled_targets())
    if (is_floating(t.dtype)) floating.push_back(t);
  for (const testing::Target& target : testing::runnable(floating, "NaN propagation")) {
    INFO(target.name());
    const DType dt = target.dtype;
    auto make_on = [&](const Vec& v, const Shape& shape, DType d) { return make(v, shape, d, target.dev()); };
    auto host_close = [](const Tensor& got, const Shape& shape, const Vec& want, double rtol) {
      return close(got.to(Device::cpu()), shape, want, rtol);
    };
    auto host = [](const Tensor& t) { return t.to(Device::cpu()); };
    // torch.relu(nan) = nan; its gradient (threshold_backward: result <= 0 ? 0 : grad) passes at NaN.
    Tensor x = make_on({nan, -1.0, 2.0, 0.0}, {4}, dt).requires_grad_();
    Tensor r = relu(x);
    CHECK(host_close(r, {4}, {nan, 0, 2, 0}, 0) == "");
    sum(r).backward();
    CHECK(host_close(x.grad(), {4}, {1, 0, 1, 0}, 0) == "");
    // leaky_relu(nan) = nan; gradient: x > 0 ? g : g * slope.
    Tensor xl = make_on({nan, -1.0, 2.0}, {3}, dt).requires_grad_();
    Tensor l = leaky_relu(xl, 0.5);
    CHECK(host_close(l, {3}, {nan, -0.5, 2}, 0) == "");
    sum(l).backward();
    CHECK(host_close(xl.grad(), {3}, {0.5, 0.5, 1}, 0) == "");
    // maximum/minimum: NaN on either side wins, and both sides receive the gradient there
    // (PyTorch: where(a == b, g / 2, g) masked to 0 only where the side strictly loses).
    for (bool is_max : {true, false}) {
      INFO((is_max ? "maximum" : "minimum"));
      Tensor a = make_on({nan, 1.0, 3.0, 2.0}, {4}, dt).requires_grad_();
      Tensor b = make_on({1.0, nan, 1.0, 2.0}, {4}, dt).requires_grad_();
      Tensor m = is_max ? maximum(a, b) : minimum(a, b);
      CHECK(host_close(m, {4}, {nan, nan, is_max ? 3.0 : 1.0, 2}, 0) == "");
      sum(m).backward();
      CHECK(host_close(a.grad(), {4}, {1, 1, is_max ? 1.0 : 0.0, 0.5}, 0) == "");
      CHECK(host_close(b.grad(), {4}, {1, 1, is_max ? 0.0 : 1.0, 0.5}, 0) == "");
    }
    // Comparisons with NaN: only ne is true.
    Tensor n = make_on({nan}, {1}, dt), one = make_on({1.0}, {1}, dt);
    CHECK(host(eq(n, n)).item<bool>() == false);
    CHECK(host(ne(n, n)).item<bool>() == true);
    CHECK((host(lt(n, one)).item<bool>() || host(le(n, one)).item<bool>() || host(gt(n, one)).item<bool>() || host(ge(n, one)).item<bool>()) == false);
    // max()/min()/argmax pick the first NaN; clamp keeps NaN.
    Tensor v = make_on({1.0, nan, 3.0, nan}, {4}, dt);
    CHECK(std::isnan(host(max(v)).item()));
    CHECK(std::isnan(host(min(v)).item()));
    CHECK(host(argmax(v)).item<int64_t>() == 1);
    CHECK(std::isnan(host(clamp(n, 0.0, 1.0)).item()));
    // max_pool2d (CPU kernels only): a NaN in the window is the result, and the gradient goes to it.
    if (target.device != DeviceType::CPU) continue;
    Tensor p = make_on({1.0, nan, 3.0, 4.0, 5.0, 6.0, 7.0, nan, 9.0}, {1, 1, 3, 3}, dt).requires_grad_();
    for (auto [k, s] : {std::pair{2, 1}, std::pair{2, 2}, std::pair{3, 1}}) {
      INFO("kernel " << k << " stride " << s);
      Tensor y = max_pool2d(p, {k, k}, {s, s});
      for (double e : y.to_vector<double>()) CHECK(std::isnan(e));
    }
    auto [y, idx] = max_pool2d_with_indices(p, {2, 2}, {1, 1});
    CHECK(idx.to_vector<int64_t>() == std::vector<int64_t>{1, 1, 7, 7});
    sum(y).backward();
    CHECK(host_close(p.grad(), {1, 1, 3, 3}, {0, 2, 0, 0, 0, 0, 0, 2, 0}, 0) == "");
  }
}

TEST_CASE("special values in f32, bf16 and f16: the vectorized exp, log, tanh, sigmoid, gelu, softplus", "[reference][unary]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  // 20 values, so that both a full AVX-512 packet and the masked tail see special values.
  const Vec v{nan, -inf, inf, 0.0, -0.0, 1.0, -1.0, 30.0, -30.0, 80.0, -80.0, 3.0, 0.5, -0.5, 10.0, -10.0, nan, inf, -inf, 2.0};
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    INFO(dtype_name(dt));
    const Tensor x = make(v, {20}, dt);
    const Tensor stored = x.to(DType::F64).contiguous();  // the inputs as the dtype holds them
    // The result is computed in f32 and rounded once: one ulp of the dtype plus f32's slack.
    const double rtol = traits(dt).eps + rtol_for(DType::F32);
    auto check = [&](const char* name, const Tensor& got, double (*f)(double)) {
      INFO(name);
      Vec want;
      for (int64_t k = 0; k < 20; ++k) want.push_back(f(stored.data_ptr<double>()[k]));
      CHECK(close(got, {20}, make(want, {20}, dt).to_vector<double>(), rtol, 1e-6) == "");
    };
    check("exp", exp(x), [](double t) { return std::exp(t); });
    check("log", log(x), [](double t) { return std::log(t); });
    check("tanh", tanh(x), [](double t) { return std::tanh(t); });
    check("sigmoid", sigmoid(x), [](double t) { return 1 / (1 + std::exp(-t)); });
    check("gelu", gelu(x), [](double t) { return 0.5 * t * (1 + std::erf(t * kSqrt1_2)); });
    check("softplus", softplus(x), [](double t) { return t > 20 ? t : std::log1p(std::exp(t)); });
  }
}

TEST_CASE("f32 GELU keeps its relative accuracy in the negative tail", "[reference][unary]") {
  // x * Phi(x) for x in [-12, -1]: 1 + erf(x / sqrt 2) would cancel to nothing here in f32. The
  // error left is exp's argument (-x^2 / 2) rounded in f32: ulp(72) / 2 ~ 4e-6 relative at x = -12.
  Vec a = randv(2000, -12, -1, 77);
  Tensor x = make(a, {2000}, DType::F32);
  const Vec stored = x.to_vector<double>();
  // The reference through erfc: f64's 1 + erf cancels too, from x = -8 on.
  CHECK(close(gelu(x), {2000}, ref_map1(stored, [](double v) { return 0.5 * v * std::erfc(-v * kSqrt1_2); }), rtol_for(DType::F32) * 4) == "");
}

TEST_CASE("f32 exp, log and sigmoid keep ulp accuracy at the ends of the f32 range", "[reference][unary]") {
  // exp near overflow (finite up to 88.72) and into the subnormals, log of subnormals, and sigmoid
  // for large negative inputs (a tiny result that must keep its relative accuracy).
  const Vec xe{88.5, 88.7, -88.0, -95.0, -100.0, -103.0, 88.8, -104.0};
  const Vec xl{1e-40, 1e-45, 3e-39, 1.2e-38};
  const Vec xs{-9.5, -12.0, -20.0, -30.0, -40.0, -50.0, -60.0, -80.0};
  auto check = [](const char* name, const Tensor& got, const Vec& want, double rtol) {
    INFO(name);
    CHECK(close(got, got.shape(), want, rtol, 0) == "");
  };
  const Tensor e = make(xe, {8}, DType::F32), l = make(xl, {4}, DType::F32), s = make(xs, {8}, DType::F32);
  auto ref = [](const Tensor& t, double (*f)(double)) {
    Vec out;
    for (double v : t.to_vector<double>()) out.push_back(static_cast<float>(f(v)));  // rounded to f32
    return out;
  };
  // Subnormal results carry fewer digits: compare them in units of the smallest subnormal.
  const Tensor got_exp = exp(e);
  const Vec want_exp = ref(e, [](double v) { return std::exp(v); });
  for (int k = 0; k < 8; ++k) {
    INFO("exp(" << xe[k] << ")");
    const double g = got_exp.to_vector<double>()[k], w = want_exp[k];
    if (std::isinf(w)) CHECK(std::isinf(g));
    else CHECK(std::abs(g - w) <= 8 * std::numeric_limits<float>::epsilon() * std::abs(w) + 2 * std::numeric_limits<float>::denorm_min());
  }
  check("log", log(l), ref(l, [](double v) { return std::log(v); }), 4 * std::numeric_limits<float>::epsilon());
  check("sigmoid", sigmoid(s), ref(s, [](double v) { return 1 / (1 + std::exp(-v)); }), 8 * std::numeric_limits<float>::epsilon());
}

TEST_CASE("where matches the reference with broadcasting and promotion", "[reference][where]") {
  Vec c = randv(12, -1, 1, 21), a = randv(4, -5, 5, 22), b = randv(3, -5, 5, 23);
  Tensor cond = gt(make(c, {3, 4}), 0.0);
  Tensor out = where(cond, make(a, {4}), make(b, {3, 1}, DType::F32));
  CHECK(out.dtype() == DType::F64);
  Vec want(12);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) want[i * 4 + j] = c[i * 4 + j] > 0 ? a[j] : static_cast<float>(b[i]);
  CHECK(close(out, {3, 4}, want, 0) == "");
  // Strided condition and branches.
  Tensor cond_t = cond.t();
  Tensor o2 = where(cond_t, make(a, {4, 1}), make(c, {3, 4}).t());
  Vec want2(12);
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 3; ++i) want2[j * 3 + i] = c[i * 4 + j] > 0 ? a[j] : c[i * 4 + j];
  CHECK(close(o2, {4, 3}, want2, 0) == "");
}

// ---------------------------------------------------------------- large (parallel paths)

TEST_CASE("element-wise ops above the parallel grain match the reference", "[reference][parallel]") {
  const int64_t rows = 250, cols = 401;  // 100,250 elements, odd inner size
  Vec a = randv(rows * cols, -3, 3, 31), b = randv(cols, 0.5, 2, 32), c = randv(rows, -1, 1, 33);
  for (DType dt : {DType::F64, DType::F32}) {
    INFO(dtype_name(dt));
    Vec ar = a, br = b, cr = c;
    if (dt == DType::F32)
      for (Vec* v : {&ar, &br, &cr})
        for (double& x : *v) x = static_cast<float>(x);
    Tensor A = make(ar, {rows, cols}, dt), B = make(br, {cols}, dt), C = make(cr, {rows, 1}, dt);
    const double tol = rtol_for(dt) * 4;
    CHECK(close(add(A, B), {rows, cols}, ref_map2(ar, {rows, cols}, br, {cols}, [](double x, double y) { return x + y; }), tol) == "");
    CHECK(close(mul(A, C), {rows, cols}, ref_map2(ar, {rows, cols}, cr, {rows, 1}, [](double x, double y) { return x * y; }), tol) == "");
    CHECK(close(div(A, B), {rows, cols}, ref_map2(ar, {rows, cols}, br, {cols}, [](double x, double y) { return x / y; }), tol) == "");
    CHECK(close(exp(A), {rows, cols}, ref_map1(ar, [](double x) { return std::exp(x); }), tol) == "");
    CHECK(close(gelu(A), {rows, cols}, ref_map1(ar, gelu_ref), tol, 1e-300) == "");
    CHECK(close(gt(A, C), {rows, cols}, ref_map2(ar, {rows, cols}, cr, {rows, 1}, [](double x, double y) { return double(x > y); }), 0) == "");
    // Non-contiguous, large: a transposed operand and a strided output-sized read.
    Tensor At = A.t();
    CHECK(close(add(At, 1.0), {cols, rows}, ref_map1(transpose_ref(ar, rows, cols), [](double x) { return x + 1; }), tol) == "");
    CHECK(close(At.contiguous(), {cols, rows}, transpose_ref(ar, rows, cols), 0) == "");
    Tensor s = A.slice(1, 0, cols, 2);
    CHECK(close(relu(s), s.shape(), ref_map1(view_values(ar, s), [](double x) { return x > 0 ? x : 0; }), 0) == "");
    Tensor w = where(gt(A, 0.0), A, B.expand({rows, cols}));
    CHECK(close(w, {rows, cols}, ref_map2(ar, {rows, cols}, br, {cols}, [](double x, double y) { return x > 0 ? x : y; }), 0) == "");
    // The sum of 100k elements: f64 exact to rounding, f32 accumulates in f32 with partial sums.
    double total = 0, total_abs = 0;
    for (double x : ar) total += x, total_abs += std::abs(x);
    CHECK(std::abs(sum(A).item() - total) <= (dt == DType::F64 ? 1e-12 : 1e-5) * total_abs);
  }
  // Casts of a large tensor (vector conversion paths plus tails).
  Tensor big = make(a, {rows * cols}, DType::F32);
  Vec back = big.to(DType::BF16).to(DType::F64).to_vector<double>();
  bool ok = true;
  for (size_t i = 0; i < a.size(); ++i) ok = ok && back[i] == static_cast<double>(static_cast<float>(bfloat16(static_cast<float>(a[i]))));
  CHECK(ok);
}

// ---------------------------------------------------------------- reductions

TEST_CASE("reductions over every dim combination of a 3-D tensor, keepdim both ways", "[reference][reduce]") {
  const Shape shape{3, 4, 5};
  const std::vector<std::vector<int64_t>> combos = {{}, {0}, {1}, {2}, {0, 1}, {0, 2}, {1, 2}, {0, 1, 2}};
  uint64_t seed = 200;
  for (DType dt : {DType::F64, DType::F32}) {
    Vec x = randv(60, -2, 2, seed++, dt);
    // Contiguous, and the same logical values behind a permuted (non-contiguous) view.
    Vec base_p = Vec(60);
    for_each_index({5, 3, 4}, [&](const Shape& i, int64_t k) { base_p[k] = x[i[1] * 20 + i[2] * 5 + i[0]]; });
    for (bool permuted : {false, true}) {
      Tensor t = permuted ? make(base_p, {5, 3, 4}, dt).permute({1, 2, 0}) : make(x, shape, dt);
      REQUIRE(t.shape() == shape);
      for (const auto& dims : combos) {
        std::vector<int64_t> all = dims.empty() ? std::vector<int64_t>{0, 1, 2} : dims;
        for (bool keepdim : {false, true}) {
          INFO(dtype_name(dt) << (permuted ? " permuted" : "") << " dims " << shape_str(dims) << " keepdim " << keepdim);
          Shape ks = shape;
          for (int64_t d : all) ks[d] = 1;
          Shape os = keepdim ? ks : drop(shape, all);
          const double tol = rtol_for(dt) * 8, atol = dt == DType::F64 ? 1e-13 : 1e-5;
          CHECK(close(sum(t, dims, keepdim), os, ref_reduce(x, shape, all, R::Sum), tol, atol) == "");
          CHECK(close(mean(t, dims, keepdim), os, ref_reduce(x, shape, all, R::Mean), tol, atol) == "");
          CHECK(close(var(t, dims, 1, keepdim), os, ref_reduce(x, shape, all, R::Var, 1), tol, atol) == "");
          CHECK(close(var(t, dims, 0, keepdim), os, ref_reduce(x, shape, all, R::Var, 0), tol, atol) == "");
        }
      }
      // Negative and unordered dims mean the same.
      CHECK(close(sum(t, {-1, 0}), {4}, ref_reduce(x, shape, {0, 2}, R::Sum), rtol_for(dt) * 8, 1e-5) == "");
      // max/min/argmax along each dim.
      for (int64_t d = 0; d < 3; ++d) {
        for (bool keepdim : {false, true}) {
          INFO(dtype_name(dt) << (permuted ? " permuted" : "") << " max/min dim " << d << " keepdim " << keepdim);
          Shape ks = shape;
          ks[d] = 1;
          Shape os = keepdim ? ks : drop(shape, {d});
          auto mx = max(t, d, keepdim);
          auto mn = min(t, d, keepdim);
          CHECK(close(mx.values, os, ref_reduce(x, shape, {d}, R::Max), 0) == "");
          CHECK(close(mx.indices, os, ref_reduce(x, shape, {d}, R::ArgMax), 0) == "");
          CHECK(mx.indices.dtype() == DType::I64);
          CHECK(close(mn.values, os, ref_reduce(x, shape, {d}, R::Min), 0) == "");
          CHECK(close(mn.indices, os, ref_reduce(x, shape, {d}, R::ArgMin), 0) == "");
          CHECK(close(argmax(t, d, keepdim), os, ref_reduce(x, shape, {d}, R::ArgMax), 0) == "");
        }
      }
      CHECK(max(t).item() == *std::max_element(x.begin(), x.end()));
      CHECK(min(t).item() == *std::min_element(x.begin(), x.end()));
      CHECK(argmax(t).item<int64_t>() == std::max_element(x.begin(), x.end()) - x.begin());
      CHECK(max(t).dim() == 0);
    }
  }
}

TEST_CASE("reductions: ties pick the first index, empty and 0-dim inputs", "[reference][reduce]") {
  Tensor t = from_vector<float>({1, 3, 3, 0, 0, -1}, {2, 3});
  CHECK(argmax(t, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  CHECK(min(t, 1).indices.to_vector<int64_t>() == std::vector<int64_t>{0, 2});
  CHECK(argmax(from_vector<float>({2, 2, 2})).item<int64_t>() == 0);
  CHECK(sum(zeros({0})).item() == 0.0);
  CHECK(sum(zeros({3, 0}), {1}).to_vector<float>() == std::vector<float>{0, 0, 0});
  CHECK(sum(zeros({0, 3}), {0}).to_vector<float>() == std::vector<float>{0, 0, 0});
  CHECK(sum(zeros({0, 3}), {1}).shape() == Shape{0});
  Tensor s = scalar_tensor(4.5);
  CHECK(sum(s).item() == 4.5);
  CHECK(sum(s).dim() == 0);
  CHECK(mean(s).item() == 4.5);
  CHECK(max(s).item() == 4.5);
  CHECK(max(s, 0).values.item() == 4.5);
  CHECK(sum(s, {0}, true).dim() == 0);
}

TEST_CASE("large reductions exercise the parallel and column-accumulation paths", "[reference][reduce][parallel]") {
  const int64_t rows = 300, cols = 411;
  for (DType dt : {DType::F64, DType::F32}) {
    INFO(dtype_name(dt));
    Vec x = randv(rows * cols, -1, 1, 301, dt);
    Tensor t = make(x, {rows, cols}, dt);
    const double tol = dt == DType::F64 ? 1e-12 : 2e-5;
    CHECK(close(sum(t, {0}), {cols}, ref_reduce(x, {rows, cols}, {0}, R::Sum), tol, tol * 20) == "");  // leading dims
    CHECK(close(sum(t, {1}), {rows}, ref_reduce(x, {rows, cols}, {1}, R::Sum), tol, tol * 20) == "");
    CHECK(close(sum(t.t(), {1}), {cols}, ref_reduce(x, {rows, cols}, {0}, R::Sum), tol, tol * 20) == "");
    CHECK(close(mean(t, {0}, true), {1, cols}, ref_reduce(x, {rows, cols}, {0}, R::Mean), tol, tol) == "");
    CHECK(close(max(t, 0).values, {cols}, ref_reduce(x, {rows, cols}, {0}, R::Max), 0) == "");
    CHECK(close(max(t, 0).indices, {cols}, ref_reduce(x, {rows, cols}, {0}, R::ArgMax), 0) == "");
    CHECK(close(min(t, 1).indices, {rows}, ref_reduce(x, {rows, cols}, {1}, R::ArgMin), 0) == "");
    Tensor t3 = make(x, {10, 30, cols}, dt);
    CHECK(close(sum(t3, {0, 1}), {cols}, ref_reduce(x, {10, 30, cols}, {0, 1}, R::Sum), tol, tol * 20) == "");
    CHECK(close(sum(t3, {0, 2}), {30}, ref_reduce(x, {10, 30, cols}, {0, 2}, R::Sum), tol, tol * 20) == "");
    CHECK(close(var(t3, {1}), {10, cols}, ref_reduce(x, {10, 30, cols}, {1}, R::Var), tol * 10, tol) == "");
  }
}

TEST_CASE("sum_to reduces broadcast dims back", "[reference][reduce]") {
  Vec x = randv(24, -1, 1, 400);
  Tensor t = make(x, {2, 3, 4});
  CHECK(close(sum_to(t, {3, 1}), {3, 1}, ref_reduce(x, {2, 3, 4}, {0, 2}, R::Sum), 1e-14) == "");
  CHECK(close(sum_to(t, {1, 4}), {1, 4}, ref_reduce(x, {2, 3, 4}, {0, 1}, R::Sum), 1e-14) == "");
  CHECK(close(sum_to(t, {}), {}, ref_reduce(x, {2, 3, 4}, {0, 1, 2}, R::Sum), 1e-14) == "");
  CHECK(sum_to(t, {2, 3, 4}).is_same(t));
}

// ---------------------------------------------------------------- linear algebra

TEST_CASE("mm matches the reference for sizes that are not multiples of 8", "[reference][linear]") {
  const std::vector<std::array<int64_t, 3>> sizes = {{1, 1, 1}, {1, 7, 1}, {7, 13, 5}, {17, 33, 9}, {3, 1, 4}, {65, 31, 47}, {2, 0, 3}, {130, 70, 90}};
  uint64_t seed = 500;
  for (DType dt : {DType::F64, DType::F32}) {
    for (auto [m, k, n] : sizes) {
      INFO(dtype_name(dt) << " " << m << "x" << k << " @ " << k << "x" << n);
      Vec a = randv(m * k, -1, 1, seed++, dt), b = randv(k * n, -1, 1, seed++, dt);
      Vec want = ref_mm(a, b, m, k, n);
      const double atol = (dt == DType::F64 ? 1e-14 : 2e-6) * std::max<int64_t>(k, 1);
      CHECK(close(mm(make(a, {m, k}, dt), make(b, {k, n}, dt)), {m, n}, want, 0, atol) == "");
      // Transposed operands (column-major views), and copies forced by strided slices.
      Tensor at = make(transpose_ref(a, m, k), {k, m}, dt).t();
      Tensor bt = make(transpose_ref(b, k, n), {n, k}, dt).t();
      CHECK(close(mm(at, bt), {m, n}, want, 0, atol) == "");
      Vec a2(m * k * 2);
      for (int64_t i = 0; i < m * k; ++i) a2[2 * i] = a[i], a2[2 * i + 1] = 99;
      Tensor as = make(a2, {m, 2 * k}, dt).slice(1, 0, 2 * k, 2);  // inner stride 2
      if (k > 0) CHECK(close(mm(as, bt), {m, n}, want, 0, atol) == "");
      CHECK(close(matmul(make(a, {m, k}, dt), make(b, {k, n}, dt)), {m, n}, want, 0, atol) == "");
    }
  }
}

// On AVX-512 CPUs f32 products above a size run on oneDNN's brgemm matmul (ops/cpu/matmul_dnnl.h),
// cut across threads in dense slabs: rows (a column-major a copied row-major per slab), or for a
// product wider than tall with a column-major b, columns computed in a buffer. Every such case
// against the f64 reference and against Eigen's GEMM, which the switch restores, on two threads.
TEST_CASE("f32 products on oneDNN's matmul match the reference in every layout and slab split", "[reference][linear][dnnl]") {
  namespace dm = kernels::cpu::dnnl_matmul;
  struct Restore {
    bool was = dm::set_f32(true);
    ~Restore() { dm::set_f32(was); }
  } restore;
  if (!dm::takes_f32() || kernels::active_cpu_isa() != kernels::CpuIsa::Avx512) {
    WARN("skipped: no oneDNN in this build, or no AVX-512 kernel set running (oneDNN's or minidl's)");
    return;
  }
  const minidl::testing::ThreadCount two(2);
  const double eps = std::numeric_limits<float>::epsilon();
  uint64_t seed = 900;
  // The MLP's products (fc1 forward, its weight gradient through transposed views, the 10-class
  // head), products too short for two row slabs (m < 32: a Linear's input gradient at batch 16),
  // uneven splits, a wide one.
  const std::vector<std::array<int64_t, 3>> sizes = {{128, 784, 256}, {256, 128, 784}, {128, 256, 10}, {20, 300, 200},
                                                     {16, 256, 784},  {40, 90, 80},    {300, 200, 500}, {70, 130, 1000}};
  for (const auto& size : sizes) {
    const int64_t m = size[0], k = size[1], n = size[2];
    for (int layout = 0; layout < 4; ++layout) {
      INFO(m << "x" << k << "x" << n << ", layout " << layout);
      const Vec av = randv(m * k, -1, 1, seed++, DType::F32), bv = randv(k * n, -1, 1, seed++, DType::F32);
      const Vec biasv = randv(m * n, -1, 1, seed++, DType::F32);
      Tensor a = make(av, {m, k}, DType::F32), b = make(bv, {k, n}, DType::F32), bias = make(biasv, {m, n}, DType::F32);
      if (layout & 1) a = a.t().contiguous().t();  // column-major views
      if (layout & 2) b = b.t().contiguous().t();
      Vec want = ref_mm(av, bv, m, k, n), want_addmm(m * n);
      for (int64_t i = 0; i < m * n; ++i) want_addmm[i] = 0.5 * biasv[i] + 2.0 * want[i];
      // |error| <= k * eps * sum_p |a_ip b_pj| in any summation order (first-order bound).
      Vec abs_a(av), abs_b(bv);
      for (double& x : abs_a) x = std::fabs(x);
      for (double& x : abs_b) x = std::fabs(x);
      const Vec mag = ref_mm(abs_a, abs_b, m, k, n);
      const double atol = k * eps * *std::max_element(mag.begin(), mag.end());
      // Too few rows for two row slabs and a row-major b: Eigen's column split, whose strided slabs
      // oneDNN's brgemm does not take (both threads on Eigen).
      const bool eigen_split = m < 32 && !(layout & 2);
      auto both = [&](const std::function<Tensor()>& f, const Vec& ref) {
        const int64_t before = dm::calls();
        Tensor on_dnnl = f();
        if (!eigen_split) CHECK(dm::calls() > before);
        dm::set_f32(false);
        const int64_t eigen_before = dm::calls();
        Tensor on_eigen = f();
        CHECK(dm::calls() == eigen_before);
        dm::set_f32(true);
        CHECK(close(on_dnnl.reshape({m, n}), {m, n}, ref, 0, 2 * atol) == "");
        CHECK(close(on_eigen.reshape({m, n}), {m, n}, ref, 0, 2 * atol) == "");
      };
      both([&] { return mm(a, b); }, want);
      both([&] { return addmm(bias, a, b, 0.5, 2.0); }, want_addmm);
      both([&] { return bmm(a.unsqueeze(0).expand({2, m, k}), b.unsqueeze(0).expand({2, k, n})).select(0, 1); }, want);
    }
  }
  // An expanded operand (a broadcast row, stride 0, as a sum's gradient is) stays with Eigen, whose
  // result it must equal.
  {
    const Vec rowv = randv(300, -1, 1, seed++, DType::F32), bv = randv(300 * 200, -1, 1, seed++, DType::F32);
    Tensor row = make(rowv, {1, 300}, DType::F32), b = make(bv, {300, 200}, DType::F32);
    Vec rows(128 * 300);
    for (int64_t i = 0; i < 128; ++i) std::copy(rowv.begin(), rowv.end(), rows.begin() + i * 300);
    CHECK(close(mm(row.expand({128, 300}), b), {128, 200}, ref_mm(rows, bv, 128, 300, 200), 0, 300 * 300 * 1.2e-7) == "");
    Vec columns(300 * 64);
    for (int64_t p = 0; p < 300; ++p) std::fill(columns.begin() + p * 64, columns.begin() + (p + 1) * 64, rowv[p]);
    CHECK(close(mm(b.t(), row.t().expand({300, 64})), {200, 64}, ref_mm(transpose_ref(bv, 300, 200), columns, 200, 300, 64), 0,
                300 * 300 * 1.2e-7) == "");
  }
  // NaN and inf propagate to their rows.
  std::vector<float> ones(128 * 128, 1.0f);
  ones[0] = std::numeric_limits<float>::quiet_NaN();    // row 0
  ones[128] = std::numeric_limits<float>::infinity();  // row 1
  Tensor a = from_vector(ones, {128, 128}), b = full({128, 128}, 1.0, DType::F32);
  const int64_t before = dm::calls();
  const Vec c = mm(a, b).to_vector<double>();
  CHECK(dm::calls() > before);
  CHECK(std::isnan(c[0 * 128 + 5]));
  CHECK(std::isinf(c[1 * 128 + 5]));
  CHECK(c[2 * 128 + 5] == 128);
}

TEST_CASE("bmm, matmul broadcasting, linear and addmm match the reference", "[reference][linear]") {
  const int64_t B = 3, m = 5, k = 7, n = 6;
  Vec a = randv(B * m * k, -1, 1, 600), b = randv(B * k * n, -1, 1, 601), bias = randv(n, -1, 1, 602);
  Vec want(B * m * n);
  for (int64_t i = 0; i < B; ++i) {
    Vec ai(a.begin() + i * m * k, a.begin() + (i + 1) * m * k), bi(b.begin() + i * k * n, b.begin() + (i + 1) * k * n);
    Vec ci = ref_mm(ai, bi, m, k, n);
    std::copy(ci.begin(), ci.end(), want.begin() + i * m * n);
  }
  Tensor A = make(a, {B, m, k}), Bt = make(b, {B, k, n});
  CHECK(close(bmm(A, Bt), {B, m, n}, want, 0, 1e-14) == "");
  CHECK(close(matmul(A, Bt), {B, m, n}, want, 0, 1e-14) == "");
  // Transposed batch operands.
  Vec a_t(B * k * m);
  for (int64_t i = 0; i < B; ++i)
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < k; ++c) a_t[i * k * m + c * m + r] = a[i * m * k + r * k + c];
  CHECK(close(bmm(make(a_t, {B, k, m}).transpose(1, 2), Bt), {B, m, n}, want, 0, 1e-14) == "");

  // [B, m, k] @ [k, n] (batch folded into rows) and [m, k] @ [B, k, n] (broadcast lhs).
  Vec b0(b.begin(), b.begin() + k * n);
  Vec w0 = ref_mm(a, b0, B * m, k, n);
  CHECK(close(matmul(A, make(b0, {k, n})), {B, m, n}, w0, 0, 1e-14) == "");
  Vec a0(a.begin(), a.begin() + m * k);
  Vec w1(B * m * n);
  for (int64_t i = 0; i < B; ++i) {
    Vec ci = ref_mm(a0, Vec(b.begin() + i * k * n, b.begin() + (i + 1) * k * n), m, k, n);
    std::copy(ci.begin(), ci.end(), w1.begin() + i * m * n);
  }
  CHECK(close(matmul(make(a0, {m, k}), Bt), {B, m, n}, w1, 0, 1e-14) == "");
  // [2, 1, m, k] @ [B, k, n] -> [2, B, m, n]
  Tensor A4 = make(a0, {m, k}).expand({2, 1, m, k});
  Tensor r4 = matmul(A4, Bt);
  Vec w4;
  for (int rep = 0; rep < 2; ++rep) w4.insert(w4.end(), w1.begin(), w1.end());
  CHECK(close(r4, {2, B, m, n}, w4, 0, 1e-14) == "");
  // Vectors.
  Vec v = randv(k, -1, 1, 603);
  CHECK(close(matmul(make(a0, {m, k}), make(v, {k})), {m}, ref_mm(a0, v, m, k, 1), 0, 1e-14) == "");
  CHECK(close(matmul(make(v, {k}), make(b0, {k, n})), {n}, ref_mm(v, b0, 1, k, n), 0, 1e-14) == "");
  CHECK(close(matmul(make(v, {k}), make(v, {k})), {}, ref_mm(v, v, 1, k, 1), 0, 1e-14) == "");

  // linear: x @ w^T + b, for 2-D and 3-D x; addmm with beta/alpha and broadcast bias.
  Vec w = transpose_ref(b0, k, n);  // [n, k]
  Vec lin = w0;
  for (int64_t r = 0; r < B * m; ++r)
    for (int64_t j = 0; j < n; ++j) lin[r * n + j] += bias[j];
  CHECK(close(linear(A, make(w, {n, k}), make(bias, {n})), {B, m, n}, lin, 0, 1e-14) == "");
  CHECK(close(linear(A.reshape({B * m, k}), make(w, {n, k})), {B * m, n}, w0, 0, 1e-14) == "");
  Vec am = w0;
  Vec col = randv(B * m, -1, 1, 604);
  for (int64_t r = 0; r < B * m; ++r)
    for (int64_t j = 0; j < n; ++j) am[r * n + j] = 0.5 * col[r] - 2.0 * w0[r * n + j];
  CHECK(close(addmm(make(col, {B * m, 1}), A.reshape({B * m, k}), make(b0, {k, n}), 0.5, -2.0), {B * m, n}, am, 0, 1e-14) == "");
  // beta = 0 ignores the bias entirely, even NaN (as PyTorch).
  Tensor nan_bias = full({n}, std::nan(""), DType::F64);
  CHECK(close(addmm(nan_bias, A.reshape({B * m, k}), make(b0, {k, n}), 0.0, 1.0), {B * m, n}, w0, 0, 1e-14) == "");
  // linear takes any bias that broadcasts to its output, as PyTorch: F.linear(ones(1, 2), ones(3, 2),
  // tensor(1.)) is [[3, 3, 3]]; a [m, 1] bias adds one value per row; the gradient sums back to its shape.
  CHECK(linear(ones({1, 2}), ones({3, 2}), scalar_tensor(1.0)).to_vector<float>() == std::vector<float>(3, 3.0f));
  const Tensor row_bias = from_vector<float>({10.0f, 20.0f}, {2, 1}).requires_grad_();
  const Tensor lin_out = linear(ones({2, 2}), ones({3, 2}), row_bias);
  CHECK(lin_out.to_vector<float>() == std::vector<float>{12, 12, 12, 22, 22, 22});
  sum(lin_out).backward();
  CHECK(row_bias.grad().to_vector<float>() == std::vector<float>{3, 3});
  CHECK_THROWS_WITH(linear(ones({2, 2}), ones({3, 2}), zeros({4, 1, 3})), Catch::Contains("linear") && Catch::Contains("bias"));
  // alpha = 0 skips the product, so NaN in it does not reach the result (as PyTorch's BLAS path):
  // torch.addmm(ones(2, 2), full((2, 2), nan), ones(2, 2), beta=1, alpha=0) is all ones.
  const Tensor nan_mat = full({2, 2}, std::nan(""), DType::F32);
  CHECK(addmm(ones({2, 2}), nan_mat, ones({2, 2}), 1.0, 0.0).to_vector<float>() == std::vector<float>(4, 1.0f));
  CHECK(addmm(ones({2}), nan_mat, ones({2, 2}), 3.0, 0.0).to_vector<float>() == std::vector<float>(4, 3.0f));
  CHECK(addmm(nan_mat, nan_mat, ones({2, 2}), 0.0, 0.0).to_vector<float>() == std::vector<float>(4, 0.0f));
}

// ---------------------------------------------------------------- joining

TEST_CASE("cat, stack, split and chunk move the right values", "[reference][join]") {
  Tensor a = arange(0, 6, 1, DType::F32).reshape({2, 3});
  Tensor b = arange(6, 9, 1, DType::F32).reshape({1, 3});
  CHECK(cat({a, b}).to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(cat({a, a.slice(1, 0, 1)}, 1).to_vector<float>() == std::vector<float>{0, 1, 2, 0, 3, 4, 5, 3});
  CHECK(cat({a.t(), a.t()}, 1).to_vector<float>() == std::vector<float>{0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5});
  CHECK(cat({zeros({0}), b.reshape({3})}).to_vector<float>() == std::vector<float>{6, 7, 8});  // legacy empty skip
  Tensor s = stack({a, a}, 2);
  CHECK(s.shape() == Shape{2, 3, 2});
  CHECK(s.to_vector<float>() == std::vector<float>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5});
  CHECK(stack({b.reshape({3}), b.reshape({3})}, -1).shape() == Shape{3, 2});
  // Mixed dtypes promote.
  Tensor m = cat({a.to(DType::F16), b.to(DType::BF16)});
  CHECK(m.dtype() == DType::F32);
  CHECK(m.to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8});
  CHECK(cat({a.to(DType::I64), b}).dtype() == DType::F32);

  Tensor x = arange(0, 14, 1, DType::F32).reshape({2, 7});
  auto parts = split(x, 3, 1);
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].to_vector<float>() == std::vector<float>{0, 1, 2, 7, 8, 9});
  CHECK(parts[2].shape() == Shape{2, 1});
  CHECK(parts[2].to_vector<float>() == std::vector<float>{6, 13});
  CHECK(parts[1].impl()->storage == x.impl()->storage);  // views
  auto ch = chunk(x, 4, 1);  // ceil(7/4) = 2 per chunk -> 4 chunks (2, 2, 2, 1)
  REQUIRE(ch.size() == 4);
  CHECK(ch[3].shape() == Shape{2, 1});
  auto ch2 = chunk(arange(0, 6, 1, DType::F32), 4);  // ceil(6/4) = 2 -> 3 chunks, as PyTorch
  CHECK(ch2.size() == 3);
}

// ---------------------------------------------------------------- integers and promotion

TEST_CASE("integer dtypes: exact i64 arithmetic, comparisons, sums, true division", "[reference][int]") {
  const int64_t big = (int64_t{1} << 60) + 1;  // not representable in f64
  Tensor a = from_vector<int64_t>({big, -7, 5, 0});
  Tensor b = from_vector<int64_t>({1, 2, -3, 4});
  Tensor s = add(a, b);
  CHECK(s.dtype() == DType::I64);
  CHECK(s.to_vector<int64_t>() == std::vector<int64_t>{big + 1, -5, 2, 4});
  CHECK(sub(a, b, 2).to_vector<int64_t>() == std::vector<int64_t>{big - 2, -11, 11, -8});
  CHECK(mul(a, b).to_vector<int64_t>() == std::vector<int64_t>{big, -14, -15, 0});
  CHECK(add(a, 3.0).to_vector<int64_t>() == std::vector<int64_t>{big + 3, -4, 8, 3});
  CHECK(add(a, 3.0).dtype() == DType::I64);
  CHECK(maximum(a, b).to_vector<int64_t>() == std::vector<int64_t>{big, 2, 5, 4});
  CHECK(neg(b).to_vector<int64_t>() == std::vector<int64_t>{-1, -2, 3, -4});
  CHECK(gt(a, b).to_vector<bool>() == std::vector<bool>{true, false, true, false});
  CHECK(eq(a, from_vector<int64_t>({big - 1})).to_vector<bool>() == std::vector<bool>{false, false, false, false});
  CHECK(eq(a, from_vector<int64_t>({big})).to_vector<bool>() == std::vector<bool>{true, false, false, false});
  CHECK(gt(a, b).dtype() == DType::Bool);
  CHECK(lt(b, 2.5).to_vector<bool>() == std::vector<bool>{true, true, true, false});  // compared as f32
  // Sums: integers and bools sum to i64, exactly.
  Tensor sa = sum(a);
  CHECK(sa.dtype() == DType::I64);
  CHECK(sa.item<int64_t>() == big - 2);  // exact: item<int>() does not go through double
  CHECK(sa.to_vector<int64_t>()[0] == big - 2);
  CHECK(sum(from_vector<int32_t>({2000000000, 2000000000})).to_vector<int64_t>()[0] == 4000000000LL);
  Tensor flags = from_vector<bool>({true, false, true, true});
  CHECK(sum(flags).dtype() == DType::I64);
  CHECK(sum(flags).item() == 3);
  CHECK(sum(gt(arange(0, 100000, 1, DType::F32), 49999.5)).item() == 50000);  // large, parallel
  CHECK(sum(from_vector<uint8_t>({200, 100}, {2, 1}), {0}).to_vector<int64_t>() == std::vector<int64_t>{300});
  CHECK(max(from_vector<int32_t>({3, -9, 8})).to_vector<int32_t>() == std::vector<int32_t>{8});
  // True division of integers gives f32.
  Tensor q = div(from_vector<int64_t>({7, -7, 1}), from_vector<int64_t>({2, 2, 3}));
  CHECK(q.dtype() == DType::F32);
  CHECK(q.to_vector<float>() == std::vector<float>{3.5f, -3.5f, 1.0f / 3.0f});
  CHECK(div(from_vector<int32_t>({1}), 4.0).to_vector<float>() == std::vector<float>{0.25f});
  // pow of integers stays integer (by squaring, exact); a float exponent gives f32.
  Tensor pw = pow(from_vector<int64_t>({2, 3, -2, 7, 1, -1, 5}), from_vector<int64_t>({10, 0, 3, 22, -4, -3, -1}));
  CHECK(pw.dtype() == DType::I64);
  CHECK(pw.to_vector<int64_t>() == std::vector<int64_t>{1024, 1, -8, 3909821048582988049LL, 1, -1, 0});
  CHECK(pow(from_vector<int32_t>({3, -4}), 2.0).to_vector<int32_t>() == std::vector<int32_t>{9, 16});
  CHECK(pow(from_vector<uint8_t>({3}), 5.0).to_vector<uint8_t>() == std::vector<uint8_t>{243});
  CHECK(pow(from_vector<int64_t>({4}), 0.5).dtype() == DType::F32);
  CHECK(pow(from_vector<int64_t>({4}), 0.5).item() == 2.0);
  CHECK(pow(from_vector<int64_t>({2}), from_vector<float>({0.5f})).dtype() == DType::F32);
  CHECK_THROWS_WITH(pow(from_vector<int64_t>({2}), -1.0), Catch::Contains("pow") && Catch::Contains("negative integer powers"));
  // Unary math on integers computes in f32.
  CHECK(exp(from_vector<int64_t>({0, 1})).dtype() == DType::F32);
  CHECK(sqrt(from_vector<int32_t>({4, 9})).to_vector<float>() == std::vector<float>{2, 3});
}

TEST_CASE("type promotion follows PyTorch's rules", "[reference][promotion]") {
  auto rt = [](const Tensor& a, const Tensor& b) { return add(a, b).dtype(); };
  Tensor f16 = ones({2}, DType::F16), bf16 = ones({2}, DType::BF16), f32 = ones({2}), f64 = ones({2}, DType::F64);
  Tensor i64 = ones({2}, DType::I64), i32 = ones({2}, DType::I32), u8 = ones({2}, DType::U8), b = ones({2}, DType::Bool);
  CHECK(rt(f16, bf16) == DType::F32);
  CHECK(rt(f16, f32) == DType::F32);
  CHECK(rt(bf16, f64) == DType::F64);
  CHECK(rt(i64, f16) == DType::F16);
  CHECK(rt(i32, i64) == DType::I64);
  CHECK(rt(u8, i32) == DType::I32);
  CHECK(rt(b, u8) == DType::U8);
  // A 0-dim tensor only decides when its category is higher.
  CHECK(rt(f16, scalar_tensor(1.0, DType::F32)) == DType::F16);
  CHECK(rt(scalar_tensor(1.0, DType::F64), bf16) == DType::BF16);
  CHECK(rt(f32, scalar_tensor(1.0, DType::F64)) == DType::F32);
  CHECK(rt(i64, scalar_tensor(1.0, DType::F64)) == DType::F64);
  CHECK(rt(i32, scalar_tensor(1, DType::I64)) == DType::I32);
  CHECK(rt(u8, scalar_tensor(1, DType::I64)) == DType::U8);
  CHECK(rt(b, scalar_tensor(1, DType::I32)) == DType::I32);
  CHECK(rt(scalar_tensor(1, DType::F16), scalar_tensor(1, DType::F32)) == DType::F32);  // both 0-dim
  CHECK(rt(scalar_tensor(1, DType::F16), scalar_tensor(1, DType::BF16)) == DType::F32);
  // Scalars: a float scalar lifts integer/bool tensors to f32; an integral one keeps the dtype.
  CHECK(add(i64, 2.5).dtype() == DType::F32);
  CHECK(add(i64, 2.5).to_vector<float>() == std::vector<float>{3.5f, 3.5f});
  CHECK(mul(u8, 2).dtype() == DType::U8);
  CHECK(add(b, 1).dtype() == DType::I64);
  CHECK(mul(b, 0.5).dtype() == DType::F32);
  CHECK(mul(f16, 1e10).dtype() == DType::F16);  // the tensor's float type wins, value overflows
  CHECK(std::isinf(mul(f16, 1e10).to_vector<float>()[0]));
  CHECK(add(i32, std::numeric_limits<double>::infinity()).dtype() == DType::F32);
  CHECK(add(i32, std::nan("")).dtype() == DType::F32);
  CHECK(add(i32, 1e30).dtype() == DType::F32);
  // Values survive the promotion.
  CHECK(add(from_vector<int64_t>({3}), from_vector<float>({0.5f})).to_vector<float>() == std::vector<float>{3.5f});
  CHECK(mul(ones({2}, DType::F16), full({}, 3.0)).to_vector<float>() == std::vector<float>{3, 3});
  CHECK(where(from_vector<bool>({true, false}), f16, f64).dtype() == DType::F64);
  CHECK(maximum(i32, f16).dtype() == DType::F16);
  CHECK(eq(i64, scalar_tensor(1.0, DType::F64)).dtype() == DType::Bool);
}

// Long f32 sums are cascaded as PyTorch's: leaves in vector lanes, then pairwise, so the error grows
// with log(n). A running f32 sum drifted by percents here (the mean of 4M values of 0.1 came out
// 0.0961); each path of the kernel (columns of a leading-dims reduction, one row per output, the
// chunked full sum) is held to 50 f32 epsilons of the f64 sum of the same values.
TEST_CASE("f32 sums, means and variances of millions of values stay within a few epsilons", "[reference][reduce]") {
  const double eps = std::numeric_limits<float>::epsilon();
  const double tenth = static_cast<double>(0.1f);  // the f32 value each element holds
  auto rel = [](double got, double want) { return std::abs(got - want) / std::abs(want); };
  const Tensor columns = sum(full({int64_t{1} << 21, 8}, 0.1, DType::F32), {0});  // column path
  for (double v : columns.to_vector<double>()) CHECK(rel(v, tenth * (1 << 21)) < 50 * eps);
  const Tensor rows = sum(full({8, int64_t{1} << 21}, 0.1, DType::F32), {1});  // one row per output
  for (double v : rows.to_vector<double>()) CHECK(rel(v, tenth * (1 << 21)) < 50 * eps);
  const double whole = sum(full({int64_t{1} << 23}, 0.1, DType::F32)).item();  // chunked across threads
  CHECK(rel(whole, tenth * (1 << 23)) < 50 * eps);
  CHECK(rel(mean(full({int64_t{1} << 22, 8}, 0.1, DType::F32), {0}).to_vector<double>()[0], tenth) < 50 * eps);
  // Realistic data: the variance of uniform values per column against the same values in f64.
  Generator gen(5);
  const Tensor u = rand({int64_t{1} << 20, 4}, DType::F32, &gen);
  const std::vector<double> got = var(u, {0}).to_vector<double>(), want = var(cast(u, DType::F64), {0}).to_vector<double>();
  for (size_t j = 0; j < got.size(); ++j) CHECK(rel(got[j], want[j]) < 50 * eps);
}
