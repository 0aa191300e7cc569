// Pooling, batch_norm and dropout2d: values and indices against plain f64 loops (PyTorch's window,
// divisor and output-size rules written out), gradient checks (first and second order), batch_norm
// running statistics, low precision and autocast behaviour, and error messages.
#include <catch2/catch.hpp>

#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "gradcheck.h"
#include "random_values.h"

using namespace minidl;
using minidl::testing::GradCase;
using minidl::testing::max_abs_diff;
using minidl::testing::random_tensor;
using minidl::testing::random_values;
using minidl::testing::run_case;
using TL = std::vector<Tensor>;

namespace {

Tensor sq(const Tensor& t) { return mul(t, t); }

// max |a - b| of two tensors of the same shape (a shape mismatch fails the test).
double max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  return max_abs_diff(a, b);
}

struct PoolSpec {
  Size2 k, s, p, d{1, 1};
  bool ceil_mode = false;
  bool count_include_pad = true;
};

int64_t ref_out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const double span = static_cast<double>(in + 2 * p - d * (k - 1) - 1) / static_cast<double>(s);
  int64_t out = static_cast<int64_t>(ceil_mode ? std::ceil(span) : std::floor(span)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;  // the last window must start inside the input or left padding
  return out;
}

// Max pooling with PyTorch's rules: taps d apart, padding never wins, first maximum, flat index.
std::pair<Tensor, Tensor> ref_max_pool(const Tensor& xt, const PoolSpec& ps) {
  const std::vector<double> x = xt.to_vector<double>();
  const int64_t N = xt.size(0), C = xt.size(1), H = xt.size(2), W = xt.size(3);
  const int64_t OH = ref_out_size(H, ps.k[0], ps.s[0], ps.p[0], ps.d[0], ps.ceil_mode);
  const int64_t OW = ref_out_size(W, ps.k[1], ps.s[1], ps.p[1], ps.d[1], ps.ceil_mode);
  std::vector<double> y;
  std::vector<int64_t> idx;
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double best = -INFINITY;
        int64_t bi = -1;
        for (int64_t i = 0; i < ps.k[0]; ++i)
          for (int64_t j = 0; j < ps.k[1]; ++j) {
            const int64_t ih = oh * ps.s[0] - ps.p[0] + i * ps.d[0], iw = ow * ps.s[1] - ps.p[1] + j * ps.d[1];
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const double v = x[nc * H * W + ih * W + iw];
            if (bi < 0 || v > best || std::isnan(v)) {  // PyTorch's rule: a NaN replaces the maximum
              best = v;
              bi = ih * W + iw;
            }
          }
        y.push_back(best);
        idx.push_back(bi);
      }
  return {from_vector(y, {N, C, OH, OW}), from_vector(idx, {N, C, OH, OW})};
}

Tensor ref_avg_pool(const Tensor& xt, const PoolSpec& ps) {
  const std::vector<double> x = xt.to_vector<double>();
  const int64_t N = xt.size(0), C = xt.size(1), H = xt.size(2), W = xt.size(3);
  const int64_t OH = ref_out_size(H, ps.k[0], ps.s[0], ps.p[0], 1, ps.ceil_mode);
  const int64_t OW = ref_out_size(W, ps.k[1], ps.s[1], ps.p[1], 1, ps.ceil_mode);
  std::vector<double> y;
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double s = 0;
        int64_t inside = 0, padded = 0;
        for (int64_t i = 0; i < ps.k[0]; ++i)
          for (int64_t j = 0; j < ps.k[1]; ++j) {
            const int64_t ih = oh * ps.s[0] - ps.p[0] + i, iw = ow * ps.s[1] - ps.p[1] + j;
            if (ih < H + ps.p[0] && iw < W + ps.p[1]) ++padded;  // taps inside the padded input
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            s += x[nc * H * W + ih * W + iw];
            ++inside;
          }
        y.push_back(s / static_cast<double>(ps.count_include_pad ? padded : inside));
      }
  return from_vector(y, {N, C, OH, OW});
}

Tensor ref_adaptive_avg(const Tensor& xt, int64_t OH, int64_t OW) {
  const std::vector<double> x = xt.to_vector<double>();
  const int64_t N = xt.size(0), C = xt.size(1), H = xt.size(2), W = xt.size(3);
  std::vector<double> y;
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t hs = static_cast<int64_t>(std::floor(double(oh * H) / OH)), he = static_cast<int64_t>(std::ceil(double((oh + 1) * H) / OH));
        const int64_t ws = static_cast<int64_t>(std::floor(double(ow * W) / OW)), we = static_cast<int64_t>(std::ceil(double((ow + 1) * W) / OW));
        double s = 0;
        for (int64_t ih = hs; ih < he; ++ih)
          for (int64_t iw = ws; iw < we; ++iw) s += x[nc * H * W + ih * W + iw];
        y.push_back(s / double((he - hs) * (we - ws)));
      }
  return from_vector(y, {N, C, OH, OW});
}

struct RefBN {
  Tensor y;
  std::vector<double> mean, var_biased, var_unbiased;
};
// Batch norm written out in f64 for x [N, C, ...].
RefBN ref_batch_norm(const Tensor& xt, const std::vector<double>& w, const std::vector<double>& b, double eps) {
  const std::vector<double> x = xt.to_vector<double>();
  const int64_t N = xt.size(0), C = xt.size(1), S = xt.numel() / (N * C), M = N * S;
  RefBN r;
  std::vector<double> y(x.size());
  for (int64_t c = 0; c < C; ++c) {
    double s = 0, ss = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) s += x[(n * C + c) * S + i];
    const double mu = s / M;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) ss += (x[(n * C + c) * S + i] - mu) * (x[(n * C + c) * S + i] - mu);
    r.mean.push_back(mu);
    r.var_biased.push_back(ss / M);
    r.var_unbiased.push_back(ss / (M - 1));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < S; ++i) {
        const int64_t k = (n * C + c) * S + i;
        y[k] = (x[k] - mu) / std::sqrt(ss / M + eps) * (w.empty() ? 1.0 : w[c]) + (b.empty() ? 0.0 : b[c]);
      }
  }
  r.y = from_vector(y, xt.shape());
  return r;
}

double max_abs(const Tensor& t) { return max_abs_diff(t, zeros_like(t)); }

}  // namespace

TEST_CASE("max_pool2d values and indices match direct loops", "[pool]") {
  const std::vector<PoolSpec> specs = {
      {{2, 2}, {2, 2}, {0, 0}},
      {{3, 3}, {2, 2}, {1, 1}},
      {{3, 2}, {1, 2}, {1, 0}},
      {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true},
      {{2, 2}, {2, 2}, {0, 0}, {1, 1}, true},
      {{3, 3}, {1, 1}, {2, 2}, {2, 2}},
      {{2, 3}, {3, 1}, {1, 1}, {2, 1}, true},
  };
  Tensor x = random_tensor({2, 3, 7, 6}, 1);
  for (const PoolSpec& ps : specs) {
    INFO("k " << ps.k[0] << "x" << ps.k[1] << " s " << ps.s[0] << "," << ps.s[1] << " p " << ps.p[0] << "," << ps.p[1]
              << " d " << ps.d[0] << "," << ps.d[1] << " ceil " << ps.ceil_mode);
    auto [ry, ri] = ref_max_pool(x, ps);
    for (DType dt : {DType::F64, DType::F32}) {
      MaxPoolResult r = max_pool2d_with_indices(cast(x, dt), ps.k, ps.s, ps.p, ps.d, ps.ceil_mode);
      REQUIRE(r.values.shape() == ry.shape());
      CHECK(r.values.dtype() == dt);
      CHECK(r.indices.dtype() == DType::I64);
      CHECK(max_diff(r.values, cast(cast(ry, dt), DType::F64)) == 0.0);
      CHECK(r.indices.to_vector<int64_t>() == ri.to_vector<int64_t>());
    }
  }
  // Output sizes (PyTorch): ceil_mode adds the partial last window only if it starts inside.
  CHECK(max_pool2d(zeros({1, 1, 5, 5}), {2, 2}).shape() == Shape{1, 1, 2, 2});
  CHECK(max_pool2d(zeros({1, 1, 5, 5}), {2, 2}, {0, 0}, {0, 0}, {1, 1}, true).shape() == Shape{1, 1, 3, 3});
  CHECK(max_pool2d(zeros({1, 1, 6, 6}), {3, 3}, {2, 2}, {1, 1}, {1, 1}, true).shape() == Shape{1, 1, 4, 4});
  CHECK(max_pool2d(zeros({1, 1, 6, 6}), {3, 3}, {2, 2}, {1, 1}).shape() == Shape{1, 1, 3, 3});
  CHECK(max_pool2d(zeros({2, 4, 4}), {2, 2}).shape() == Shape{2, 2, 2});  // unbatched
}

TEST_CASE("max_pool2d: first maximum wins, NaN propagates, f16/bf16 exact", "[pool]") {
  Tensor x = from_vector(std::vector<double>{1, 3, 3, 2, /**/ 0, 0, 5, 5, /**/ 7, 1, 2, 2, /**/ 1, 7, 2, NAN}, {1, 1, 4, 4});
  MaxPoolResult r = max_pool2d_with_indices(x, {2, 2});
  std::vector<double> v = r.values.to_vector<double>();
  CHECK(v[0] == 3);
  CHECK(v[1] == 5);
  CHECK(v[2] == 7);
  CHECK(std::isnan(v[3]));
  CHECK(r.indices.to_vector<int64_t>() == std::vector<int64_t>{1, 6, 8, 15});
  // Max is a selection: exact in every dtype.
  for (DType dt : {DType::F16, DType::BF16}) {
    Tensor xl = cast(random_tensor({2, 3, 6, 6}, 2), dt);
    Tensor yl = max_pool2d(xl, {3, 3}, {2, 2}, {1, 1});
    CHECK(yl.dtype() == dt);
    CHECK(max_diff(yl, max_pool2d(cast(xl, DType::F32), {3, 3}, {2, 2}, {1, 1})) == 0.0);
  }
}

TEST_CASE("max_pool2d: a window wholly in the padding gives -inf, PyTorch's index, and no gradient", "[pool]") {
  // torch 1.13: F.max_pool2d(x [1,1,2,2], 2, stride=1, padding=1, dilation=3, return_indices=True)
  // is one window, both taps in the padding: value -inf, index 6 (past the 2x2 plane). Its backward
  // there writes the gradient at [6] and corrupts the heap; minidl's drops it.
  for (bool channels_last : {false, true}) {
    Tensor x = from_vector(std::vector<double>{1, 2, 3, 4}, {1, 1, 2, 2});
    if (channels_last) x = x.contiguous(MemoryFormat::ChannelsLast);
    x.requires_grad_(true);
    MaxPoolResult r = max_pool2d_with_indices(x, {2, 2}, {1, 1}, {1, 1}, {3, 3});
    REQUIRE(r.values.shape() == Shape{1, 1, 1, 1});
    CHECK(std::isinf(r.values.item()));
    CHECK(r.values.item() < 0);
    CHECK(r.indices.item_int() == 6);  // torch 1.13 gives 6 too
    sum(r.values * 2.0).backward();
    CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0, 0, 0});
  }
  // A larger plane: windows past the border on every side, some empty, some not; every gradient
  // lands on the element its index names (under the sanitizers: and nowhere outside the plane).
  Tensor x = random_tensor({2, 3, 5, 4}, 7).requires_grad_(true);
  MaxPoolResult r = max_pool2d_with_indices(x, {2, 2}, {1, 1}, {3, 3}, {5, 5});
  Tensor gy = random_tensor(r.values.shape(), 8);
  sum(r.values * gy).backward();
  std::vector<double> expect(static_cast<size_t>(x.numel()), 0.0), g = gy.to_vector<double>();
  std::vector<int64_t> ind = r.indices.to_vector<int64_t>();
  const int64_t P = r.values.size(2) * r.values.size(3), HW = 20;
  for (size_t o = 0; o < ind.size(); ++o)
    if (ind[o] >= 0 && ind[o] < HW) expect[(o / P) * HW + ind[o]] += g[o];
  CHECK(max_diff(x.grad(), from_vector(expect, x.shape())) < 1e-12);
}

TEST_CASE("max_pool2d 2x2 rows of every width up to 40: ties in every order, NaNs, exact indices", "[pool]") {
  // Values from {0, 1, 2} make ties between every pair of a window's taps; the vector row kernel
  // (16 outputs a step, masked tails) must still pick the first maximum in row-major order.
  for (int64_t W = 2; W <= 40; ++W) {
    INFO("W " << W);
    std::vector<double> v(static_cast<size_t>(2 * 3 * 4 * W));
    uint32_t state = 12345u + static_cast<uint32_t>(W);
    for (double& e : v) {
      state = state * 1664525u + 1013904223u;
      e = static_cast<double>((state >> 24) % 3);
      if ((state >> 8) % 23 == 0) e = NAN;
    }
    Tensor x = from_vector(v, {2, 3, 4, W});
    const PoolSpec ps{{2, 2}, {2, 2}, {0, 0}};
    auto [ry, ri] = ref_max_pool(x, ps);
    for (DType dt : {DType::F32, DType::F64, DType::BF16}) {
      MaxPoolResult r = max_pool2d_with_indices(cast(x, dt), ps.k, ps.s, ps.p, ps.d, ps.ceil_mode);
      REQUIRE(r.values.shape() == ry.shape());
      const std::vector<double> got = r.values.to_vector<double>(), want = ry.to_vector<double>();
      for (size_t i = 0; i < want.size(); ++i) CHECK((got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i]))));
      CHECK(r.indices.to_vector<int64_t>() == ri.to_vector<int64_t>());
    }
  }
}

TEST_CASE("adaptive_max_pool2d matches torch: overlapping windows, upsampling, NaN, gradient, channels-last", "[pool]") {
  auto values = [](const Tensor& t) { return t.to_vector<double>(); };
  // torch.nn.functional.adaptive_max_pool2d(x, (3, 2), return_indices=True) on this 4 x 5 image.
  const Tensor x0 = from_vector<double>({1, 5, 2, 0, 3, 4, -1, 6, 2, 2, 0, 7, 1, 9, -3, 2, 2, 8, 1, 4}, {1, 1, 4, 5});
  for (MemoryFormat f : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast})
    for (DType t : {DType::F32, DType::BF16}) {
      INFO(dtype_name(t) << (f == MemoryFormat::ChannelsLast ? " channels-last" : ""));
      Tensor x = cast(x0, t).contiguous(f).requires_grad_();
      MaxPoolResult r = adaptive_max_pool2d_with_indices(x, {3, 2});
      CHECK(r.values.dtype() == t);
      CHECK(values(r.values) == std::vector<double>{6, 6, 7, 9, 8, 9});
      CHECK(values(r.indices) == std::vector<double>{7, 7, 11, 13, 17, 13});
      sum(mul(r.values, cast(arange(1, 7, 1), t).reshape({1, 1, 3, 2}))).backward();
      CHECK(values(x.grad()) == std::vector<double>{0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 3, 0, 10, 0, 0, 0, 5, 0, 0});
    }
  // Larger output than input: windows of one or two pixels.
  MaxPoolResult up = adaptive_max_pool2d_with_indices(x0, {5, 7});
  CHECK(values(up.indices) == std::vector<double>{0, 1, 1, 2, 2, 4, 4, 5, 1, 7, 7, 7, 4, 4, 5, 11, 11, 7, 13, 13, 9,
                                                  15, 11, 17, 17, 13, 13, 19, 15, 15, 17, 17, 17, 19, 19});
  // An unbatched [C, H, W] input with a NaN: it wins both overlapping windows.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  MaxPoolResult n = adaptive_max_pool2d_with_indices(from_vector<double>({1, nan, 2, 3, 0, 5}, {1, 2, 3}), {1, 2});
  CHECK(n.values.shape() == Shape{1, 1, 2});
  CHECK(std::isnan(values(n.values)[0]));
  CHECK(std::isnan(values(n.values)[1]));
  CHECK(values(n.indices) == std::vector<double>{1, 1});
  CHECK(max_abs_diff(adaptive_max_pool2d(x0, {1, 1}), amax(x0, {2, 3}, true)) == 0);
  CHECK_THROWS_WITH(adaptive_max_pool2d(x0, {0, 2}), Catch::Contains("adaptive_max_pool2d: output size must be positive"));
  CHECK(nn::AdaptiveMaxPool2d({2, 2}).forward(x0).shape() == Shape{1, 1, 2, 2});
}

TEST_CASE("avg_pool2d and adaptive_avg_pool2d match direct loops", "[pool]") {
  const std::vector<PoolSpec> specs = {
      {{2, 2}, {2, 2}, {0, 0}},
      {{3, 3}, {2, 2}, {1, 1}},
      {{3, 3}, {2, 2}, {1, 1}, {1, 1}, false, false},
      {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true, true},
      {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true, false},
      {{2, 3}, {1, 2}, {1, 1}, {1, 1}, true, true},
      {{3, 2}, {3, 3}, {0, 1}, {1, 1}, true, false},
  };
  Tensor x = random_tensor({2, 3, 7, 6}, 3);
  for (const PoolSpec& ps : specs) {
    INFO("k " << ps.k[0] << "x" << ps.k[1] << " s " << ps.s[0] << "," << ps.s[1] << " p " << ps.p[0] << "," << ps.p[1]
              << " ceil " << ps.ceil_mode << " count_include_pad " << ps.count_include_pad);
    Tensor ref = ref_avg_pool(x, ps);
    Tensor y = avg_pool2d(x, ps.k, ps.s, ps.p, ps.ceil_mode, ps.count_include_pad);
    REQUIRE(y.shape() == ref.shape());
    CHECK(max_diff(y, ref) < 1e-15);
    CHECK(max_diff(avg_pool2d(cast(x, DType::F32), ps.k, ps.s, ps.p, ps.ceil_mode, ps.count_include_pad), ref) <
          4 * traits(DType::F32).eps);
  }
  for (Size2 os : {Size2{1, 1}, Size2{3, 4}, Size2{7, 6}, Size2{2, 5}, Size2{10, 9}}) {
    INFO("adaptive " << os[0] << "x" << os[1]);
    Tensor y = adaptive_avg_pool2d(x, os);
    CHECK(max_diff(y, ref_adaptive_avg(x, os[0], os[1])) < 1e-15);
  }
  // Global average pooling equals mean over H, W.
  CHECK(max_diff(adaptive_avg_pool2d(x, {1, 1}), mean(x, {2, 3}, true)) < 1e-15);
  // bf16: one rounding of the f32 result.
  Tensor xl = cast(x, DType::BF16);
  Tensor yl = avg_pool2d(xl, {3, 3}, {2, 2}, {1, 1});
  Tensor y32 = avg_pool2d(cast(xl, DType::F32), {3, 3}, {2, 2}, {1, 1});
  CHECK(yl.dtype() == DType::BF16);
  CHECK(max_diff(yl, y32) <= traits(DType::BF16).eps * max_abs(y32));
}

TEST_CASE("pooling gradient checks (first and second order)", "[pool][grad]") {
  const std::vector<GradCase> cases = {
      {.name = "max_pool2d 2x2", .shapes = {{2, 2, 4, 5}}, .fn = [](const TL& v) { return sq(max_pool2d(v[0], {2, 2})); }},
      {.name = "max_pool2d overlapping pad", .shapes = {{1, 2, 5, 5}},
       .fn = [](const TL& v) { return sq(max_pool2d(v[0], {3, 3}, {1, 2}, {1, 1})); }},
      {.name = "max_pool2d dilation ceil", .shapes = {{1, 2, 6, 5}},
       .fn = [](const TL& v) { return sq(max_pool2d(v[0], {2, 2}, {2, 2}, {1, 0}, {2, 1}, true)); }},
      {.name = "avg_pool2d", .shapes = {{2, 2, 5, 4}}, .fn = [](const TL& v) { return sq(avg_pool2d(v[0], {2, 2})); }},
      {.name = "avg_pool2d pad ceil no-count-pad", .shapes = {{1, 2, 5, 6}},
       .fn = [](const TL& v) { return sq(avg_pool2d(v[0], {3, 3}, {2, 2}, {1, 1}, true, false)); }},
      {.name = "adaptive_avg_pool2d", .shapes = {{2, 2, 5, 7}},
       .fn = [](const TL& v) { return sq(adaptive_avg_pool2d(v[0], {3, 4})); }},
      {.name = "adaptive_max_pool2d overlapping", .shapes = {{2, 2, 5, 7}},
       .fn = [](const TL& v) { return sq(adaptive_max_pool2d(v[0], {3, 4})); }},
      {.name = "adaptive_max_pool2d upsampling, unbatched", .shapes = {{2, 3, 2}},
       .fn = [](const TL& v) { return sq(adaptive_max_pool2d(v[0], {4, 3})); }},
  };
  for (const GradCase& c : cases) {
    INFO(c.name);
    CHECK(run_case(c) == "");
  }
}

TEST_CASE("batch_norm training matches f64 reference and updates running stats", "[norm]") {
  for (Shape shape : {Shape{5, 3}, Shape{4, 3, 5, 6}, Shape{3, 2, 7}}) {
    INFO(shape_str(shape));
    const int64_t C = shape[1];
    Tensor x = random_tensor(shape, 10, 2.0, 5.0);  // mean far from 0: no cancellation allowed
    std::vector<double> w = random_values(C, 0.5, 1.5, 11), b = random_values(C, -1, 1, 12);
    std::vector<double> rm0 = random_values(C, -1, 1, 13), rv0 = random_values(C, 0.5, 2, 14);
    RefBN ref = ref_batch_norm(x, w, b, 1e-5);
    for (DType dt : {DType::F64, DType::F32}) {
      INFO(dtype_name(dt));
      Tensor rm = cast(from_vector(rm0), dt), rv = cast(from_vector(rv0), dt);
      const uint32_t v0 = rm.version();
      Tensor y = batch_norm(cast(x, dt), rm, rv, cast(from_vector(w), dt), cast(from_vector(b), dt), true, 0.1, 1e-5);
      CHECK(y.dtype() == dt);
      CHECK(max_diff(y, ref.y) < (dt == DType::F64 ? 1e-12 : 16 * traits(DType::F32).eps));
      CHECK(rm.version() > v0);
      std::vector<double> rmv = rm.to_vector<double>(), rvv = rv.to_vector<double>();
      const double tol = dt == DType::F64 ? 1e-13 : 8 * traits(DType::F32).eps;
      for (int64_t c = 0; c < C; ++c) {
        CHECK(std::abs(rmv[c] - (0.9 * rm0[c] + 0.1 * ref.mean[c])) < tol * 5);
        CHECK(std::abs(rvv[c] - (0.9 * rv0[c] + 0.1 * ref.var_unbiased[c])) < tol * 5);
      }
    }
  }
  // No running stats (track_running_stats=False): batch statistics, nothing to update.
  Tensor x = random_tensor({4, 3, 2, 2}, 15);
  CHECK(max_diff(batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true), ref_batch_norm(x, {}, {}, 1e-5).y) < 1e-12);
}

TEST_CASE("batch_norm eval uses running stats", "[norm]") {
  Tensor x = random_tensor({3, 2, 4, 4}, 20);
  Tensor rm = from_vector(std::vector<double>{0.5, -1.0}), rv = from_vector(std::vector<double>{4.0, 0.25});
  Tensor w = from_vector(std::vector<double>{2.0, 3.0}), b = from_vector(std::vector<double>{1.0, -1.0});
  Tensor y = batch_norm(x, rm, rv, w, b, false, 0.1, 0.0 + 1e-5);
  std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>();
  const double mu[2] = {0.5, -1.0}, var[2] = {4.0, 0.25}, wv[2] = {2, 3}, bv[2] = {1, -1};
  double err = 0;
  for (size_t k = 0; k < xv.size(); ++k) {
    const int c = static_cast<int>((k / 16) % 2);
    err = std::max(err, std::abs(yv[k] - ((xv[k] - mu[c]) / std::sqrt(var[c] + 1e-5) * wv[c] + bv[c])));
  }
  CHECK(err < 1e-13);
  CHECK(rm.to_vector<double>() == std::vector<double>{0.5, -1.0});  // untouched in eval
}

TEST_CASE("batch_norm and batch_norm_relu gradient checks (first and second order)", "[norm][grad]") {
  using Op = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool, double, double);
  for (Op bn : {Op{batch_norm}, Op{batch_norm_relu}}) {
    INFO((bn == Op{batch_norm} ? "batch_norm" : "batch_norm_relu"));
    const std::vector<GradCase> cases = {
        {.name = "train 4-D x, w, b", .shapes = {{3, 2, 3, 2}, {2}, {2}},
         .fn = [bn](const TL& v) { return bn(v[0], zeros({2}, DType::F64), ones({2}, DType::F64), v[1], v[2], true, 0.1, 1e-5); }},
        {.name = "train 4-D squared", .shapes = {{2, 3, 2, 2}, {3}, {3}},
         .fn = [bn](const TL& v) { return sq(bn(v[0], Tensor(), Tensor(), v[1], v[2], true, 0.1, 1e-5)); }},
        {.name = "train 2-D", .shapes = {{5, 3}, {3}, {3}},
         .fn = [bn](const TL& v) { return bn(v[0], Tensor(), Tensor(), v[1], v[2], true, 0.1, 1e-5); }},
        {.name = "train no affine", .shapes = {{4, 2, 3}},
         .fn = [bn](const TL& v) { return sq(bn(v[0], Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5)); }},
        {.name = "train weight/bias only", .shapes = {{3, 2, 2, 2}, {2}, {2}},
         .fn = [bn](const TL& v) { return sq(bn(v[0], Tensor(), Tensor(), v[1], v[2], true, 0.1, 1e-5)); },
         .differentiable = {false, true, true}},
        {.name = "eval", .shapes = {{2, 3, 2, 2}, {3}, {3}, {3}, {3}},
         .fn = [bn](const TL& v) {
           return sq(bn(v[0], v[1], add(mul(v[2], v[2]), 0.5), v[3], v[4], false, 0.1, 1e-5));
         },
         .differentiable = {true, false, false, true, true}},
    };
    for (const GradCase& c : cases) {
      INFO(c.name);
      CHECK(run_case(c) == "");
    }
  }
}

TEST_CASE("batch_norm with low-precision input and f32 parameters", "[norm][amp]") {
  for (DType dt : {DType::BF16, DType::F16}) {
    INFO(dtype_name(dt));
    Tensor x32 = cast(cast(random_tensor({4, 3, 5, 5}, 30, -2, 3), dt), DType::F32);
    Tensor w = cast(from_vector(random_values(3, 0.5, 1.5, 31)), DType::F32).requires_grad_();
    Tensor b = cast(from_vector(random_values(3, -1, 1, 32)), DType::F32).requires_grad_();
    Tensor rm = zeros({3}), rv = ones({3}), rm32 = zeros({3}), rv32 = ones({3});
    Tensor xl = cast(x32, dt).requires_grad_();
    Tensor y = batch_norm(xl, rm, rv, w, b, true);
    CHECK(y.dtype() == dt);
    CHECK(rm.dtype() == DType::F32);
    CHECK(rv.dtype() == DType::F32);
    Tensor y32 = batch_norm(x32, rm32, rv32, w.detach(), b.detach(), true);
    // Statistics in f32 from the same values: only the output rounding differs.
    CHECK(max_diff(y, y32) <= traits(dt).eps * max_abs(y32));
    CHECK(max_diff(rm, rm32) < 1e-6);
    CHECK(max_diff(rv, rv32) < 1e-6);
    sum(mul(cast(y, DType::F32), y32.detach())).backward();
    CHECK(xl.grad().dtype() == dt);
    CHECK(w.grad().dtype() == DType::F32);
    CHECK(b.grad().dtype() == DType::F32);
  }
}

namespace {
// Same dtype, shape and values bit for bit, a NaN matching any NaN (its sign and payload depend on
// the order the hardware combined operands in, which neither side promises).
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  const size_t width = element_size(a.dtype());
  const std::vector<double> va = ca.to_vector<double>(), vb = cb.to_vector<double>();
  const char* pa = static_cast<const char*>(ca.raw_data());
  const char* pb = static_cast<const char*>(cb.raw_data());
  for (size_t i = 0; i < va.size(); ++i) {
    if (std::isnan(va[i]) && std::isnan(vb[i])) continue;
    if (std::memcmp(pa + i * width, pb + i * width, width) != 0) return false;
  }
  return true;
}
Tensor nan_to_zero(const Tensor& t) { return where(isnan(t), zeros_like(t), t); }
}  // namespace

TEST_CASE("batch_norm_relu equals relu(batch_norm): its output and running stats bit for bit, its gradients to the last bits", "[norm][fused]") {
  // The fused kernels clamp before rounding and mask gy as they read it; the composite rounds,
  // clamps, and masks gy in its own pass. Every floating dtype, 2-D / 3-D / 4-D (the row and plane
  // loops, planes longer than one conversion block), training and eval, with and without affine
  // parameters, one and two threads, and a NaN in one channel (NaN passes the ReLU both ways).
  const int outer = omp_get_max_threads();
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    for (Shape shape : {Shape{6, 5}, Shape{3, 4, 7}, Shape{2, 3, 17, 19}})
      for (DType dt : {DType::F32, DType::F64, DType::BF16, DType::F16})
        for (bool training : {true, false})
          for (bool affine : {true, false}) {
            INFO("threads " << threads << " " << shape_str(shape) << " " << dtype_name(dt) << (training ? " train" : " eval")
                            << (affine ? " affine" : ""));
            const int64_t C = shape[1];
            Tensor x0 = cast(random_tensor(shape, 70, -2, 2), dt);
            {  // one NaN in channel 1 of the first sample
              std::vector<double> v = x0.to_vector<double>();
              const int64_t S = x0.numel() / (shape[0] * C);
              v[static_cast<size_t>(S)] = std::numeric_limits<double>::quiet_NaN();
              x0 = cast(from_vector(v).reshape(shape), dt);
            }
            const DType pt = dt == DType::F64 ? DType::F64 : DType::F32;
            Tensor gy = cast(random_tensor(shape, 71, -1, 1), dt);
            auto run = [&](bool fused) {
              Tensor x = x0.detach().clone().requires_grad_();
              Tensor w = affine ? cast(from_vector(random_values(C, 0.5, 1.5, 72)), pt).requires_grad_() : Tensor();
              Tensor b = affine ? cast(from_vector(random_values(C, -1, 1, 73)), pt).requires_grad_() : Tensor();
              Tensor rm = cast(from_vector(random_values(C, -0.5, 0.5, 74)), pt), rv = cast(from_vector(random_values(C, 0.5, 2, 75)), pt);
              Tensor y = fused ? batch_norm_relu(x, rm, rv, w, b, training, 0.1, 1e-5)
                               : relu(batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5));
              CHECK(y.grad_fn()->name() == (fused ? "BatchNormReluBackward" : "ReluBackward"));
              y.backward(gy);
              TL out{y.detach(), x.grad(), rm, rv};
              if (affine) {
                out.push_back(w.grad());
                out.push_back(b.grad());
              }
              return out;
            };
            const TL fused = run(true), plain = run(false);
            const char* what[] = {"y", "x grad", "running mean", "running var", "w grad", "b grad"};
            for (size_t i = 0; i < fused.size(); ++i) {
              INFO(what[i]);
              const bool gradient = i == 1 || i >= 4;
              if (!gradient || is_low_precision(dt)) {
                CHECK(same_bits(fused[i], plain[i]));
              } else {
                // f32/f64 gradients: the same sums, but the compiler may fuse a multiply-add
                // differently in the masked loop (1 ulp of f64 seen): a few ulps of the compute type.
                CHECK(max_diff(nan_to_zero(fused[i]), nan_to_zero(plain[i])) <= 16 * traits(dt).eps * (1 + max_abs(nan_to_zero(plain[i]))));
                CHECK(same_bits(isnan(fused[i]), isnan(plain[i])));
              }
            }
          }
  }
  omp_set_num_threads(outer);
}

TEST_CASE("batch_norm_add_relu equals relu(batch_norm + residual): f32/f64 bit for bit, f16/bf16 one rounding", "[norm][fused]") {
  // The fused apply adds the residual before it rounds; its backward masks gy once (the residual's
  // gradient) and runs batch norm's backward on that, as the composite's ReluBackward, AddBackward
  // and NativeBatchNormBackward do. 2-D, NCHW and channels-last 4-D (the row and plane kernels), one
  // and two threads, training and eval, a NaN in the residual (NaN passes the ReLU both ways).
  const int outer = omp_get_max_threads();
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    for (int layout = 0; layout < 3; ++layout)
      for (DType dt : {DType::F32, DType::F64, DType::BF16, DType::F16})
        for (bool training : {true, false}) {
          const Shape shape = layout == 0 ? Shape{6, 5} : Shape{2, 16, 5, 7};
          const MemoryFormat fmt = layout == 2 ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
          INFO("threads " << threads << " " << shape_str(shape) << (layout == 2 ? " channels-last " : " ") << dtype_name(dt)
                          << (training ? " train" : " eval"));
          const int64_t C = shape[1];
          const Tensor x0 = cast(random_tensor(shape, 90, -2, 2), dt).contiguous(fmt);
          Tensor r0 = cast(random_tensor(shape, 91, -1, 1), dt);
          {  // one NaN in the residual
            std::vector<double> v = r0.to_vector<double>();
            v[3] = std::numeric_limits<double>::quiet_NaN();
            r0 = cast(from_vector(v).reshape(shape), dt).contiguous(fmt);
          }
          const Tensor gy = cast(random_tensor(shape, 92, -1, 1), dt).contiguous(fmt);
          const DType pt = dt == DType::F64 ? DType::F64 : DType::F32;
          const Tensor w0 = cast(from_vector(random_values(C, 0.5, 1.5, 93)), pt), b0 = cast(from_vector(random_values(C, -1, 1, 94)), pt);
          const Tensor rm0 = cast(from_vector(random_values(C, -0.5, 0.5, 95)), pt), rv0 = cast(from_vector(random_values(C, 0.5, 2, 96)), pt);
          // mode 0: fused; 1: the composite; 2: batch norm alone given gy masked by the fused output
          // (the residual's gradient is then that masked gy itself).
          Tensor fused_out;
          auto run = [&](int mode) {
            // clone() gives NCHW: the channels-last copies are made here.
            Tensor x = x0.detach().clone().contiguous(fmt).requires_grad_(), r = r0.detach().clone().contiguous(fmt).requires_grad_();
            Tensor w = w0.detach().clone().requires_grad_(), b = b0.detach().clone().requires_grad_();
            Tensor rm = rm0.clone(), rv = rv0.clone();
            Tensor y;
            if (mode == 0) {
              y = batch_norm_add_relu(x, r, rm, rv, w, b, training, 0.1, 1e-5);
              CHECK(y.grad_fn()->name() == "BatchNormAddReluBackward");
              if (x0.dim() == 4) CHECK(y.suggest_memory_format() == fmt);
              y.backward(gy);
              fused_out = y.detach();
            } else if (mode == 1) {
              y = relu(add(batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5), r));
              y.backward(gy);
            } else {
              const Tensor masked = where(le(fused_out, 0.0), zeros_like(gy), gy);
              y = batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5);
              y.backward(masked);
              r.set_grad(masked);
            }
            return TL{y.detach(), rm, rv, x.grad(), r.grad(), w.grad(), b.grad()};
          };
          const TL fused = run(0), plain = run(1), masked_by_fused = run(2);
          const char* what[] = {"y", "running mean", "running var", "x grad", "residual grad", "w grad", "b grad"};
          for (size_t i = 0; i < fused.size(); ++i) {
            INFO(what[i]);
            if (i >= 3) CHECK(same_bits(fused[i], masked_by_fused[i]));
            if (!is_low_precision(dt) || i == 1 || i == 2) {
              CHECK(same_bits(fused[i], plain[i]));
            } else if (i == 0) {
              // One rounding of the exact sum against two (batch norm's output, then the add's).
              CHECK(max_diff(nan_to_zero(fused[i]), nan_to_zero(plain[i])) <= 2 * traits(dt).eps * (1 + max_abs(nan_to_zero(plain[i]))));
              CHECK(same_bits(isnan(fused[i]), isnan(plain[i])));
            }
          }
        }
  }
  omp_set_num_threads(outer);
}

TEST_CASE("batch_norm_add_relu gradient checks (first and second order) and its errors", "[norm][grad][fused]") {
  const std::vector<GradCase> cases = {
      {.name = "train 4-D x, residual, w, b", .shapes = {{3, 2, 3, 2}, {3, 2, 3, 2}, {2}, {2}},
       .fn = [](const TL& v) { return batch_norm_add_relu(v[0], v[1], zeros({2}, DType::F64), ones({2}, DType::F64), v[2], v[3], true, 0.1, 1e-5); }},
      {.name = "train 2-D squared", .shapes = {{5, 3}, {5, 3}, {3}, {3}},
       .fn = [](const TL& v) { return sq(batch_norm_add_relu(v[0], v[1], Tensor(), Tensor(), v[2], v[3], true, 0.1, 1e-5)); }},
      {.name = "train channels-last", .shapes = {{2, 3, 2, 2}, {2, 3, 2, 2}},
       .fn = [](const TL& v) {
         return sq(batch_norm_add_relu(v[0].contiguous(MemoryFormat::ChannelsLast), v[1], Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5));
       }},
      {.name = "eval", .shapes = {{2, 3, 2, 2}, {2, 3, 2, 2}, {3}, {3}},
       .fn = [](const TL& v) {
         return sq(batch_norm_add_relu(v[0], v[1], zeros({3}, DType::F64), full({3}, 1.5, DType::F64), v[2], v[3], false, 0.1, 1e-5));
       }},
  };
  for (const GradCase& c : cases) {
    INFO(c.name);
    CHECK(run_case(c) == "");
  }
  const Tensor x = randn({2, 3, 4, 4});
  CHECK_THROWS_WITH(batch_norm_add_relu(x, randn({2, 3, 4, 5}), Tensor(), Tensor(), Tensor(), Tensor(), true),
                    Catch::Contains("batch_norm_add_relu") && Catch::Contains("residual must have the input's shape and dtype"));
  CHECK_THROWS_WITH(batch_norm_add_relu(x, cast(x, DType::BF16), Tensor(), Tensor(), Tensor(), Tensor(), true),
                    Catch::Contains("batch_norm_add_relu") && Catch::Contains("residual"));
  CHECK_THROWS_WITH(batch_norm_add_relu(x, Tensor(), Tensor(), Tensor(), Tensor(), Tensor(), true),
                    Catch::Contains("batch_norm_add_relu") && Catch::Contains("residual"));
}

TEST_CASE("Sequential runs a BatchNorm followed by a plain ReLU as batch_norm_relu, the same values", "[norm][fused][nn]") {
  auto make = [](bool relu_autocast) {
    auto seq = std::make_shared<nn::Sequential>();
    seq->push_back(nn::AnyModule(std::make_shared<nn::Conv2d>(nn::Conv2dOptions(2, 3, 3).padding(1))));
    seq->push_back(nn::AnyModule(std::make_shared<nn::BatchNorm2d>(3)));
    auto relu = std::make_shared<nn::ReLU>();
    if (relu_autocast) relu->set_autocast(std::nullopt, false);  // its own setting: not fused
    seq->push_back(nn::AnyModule(relu));
    return seq;
  };
  Tensor x = cast(random_tensor({2, 2, 5, 5}, 80), DType::F32);
  for (bool own_setting : {false, true}) {
    INFO((own_setting ? "ReLU with its own autocast setting" : "plain ReLU"));
    auto seq = make(own_setting);
    auto twin = make(false);
    twin->load_state_dict(seq->state_dict());
    Tensor y = seq->forward(x);
    CHECK(y.grad_fn()->name() == (own_setting ? "ReluBackward" : "BatchNormReluBackward"));
    // The same modules called one by one (Conv2d, BatchNorm2d, ReLU): the composite.
    Tensor h = (*twin)[0].forward(x);
    h = (*twin)[1].forward(h);
    Tensor y2 = (*twin)[2].forward(h);
    CHECK(y2.grad_fn()->name() == "ReluBackward");
    CHECK(same_bits(y, y2));
    y.backward(ones_like(y));
    y2.backward(ones_like(y2));
    const auto p1 = seq->parameters(), p2 = twin->parameters();
    REQUIRE(p1.size() == p2.size());
    for (size_t i = 0; i < p1.size(); ++i)  // to the last bits, as in the op's own test above
      CHECK(max_diff(p1[i].grad(), p2[i].grad()) <= 16 * traits(DType::F32).eps * (1 + max_abs(p2[i].grad())));
    CHECK(same_bits(seq->state_dict().at("1.running_mean"), twin->state_dict().at("1.running_mean")));
  }
}

TEST_CASE("batch_norm after conv2d under autocast: bf16 activations, f32 running stats", "[norm][amp]") {
  Tensor x = cast(random_tensor({2, 3, 6, 6}, 40), DType::F32);
  Tensor cw = cast(random_tensor({4, 3, 3, 3}, 41), DType::F32).requires_grad_();
  Tensor w = ones({4}).requires_grad_(), b = zeros({4}).requires_grad_();
  Tensor rm = zeros({4}), rv = ones({4});
  Tensor y;
  {
    amp::autocast scope(DeviceType::CPU);
    Tensor h = conv2d(x, cw, Tensor(), {1, 1}, {1, 1});
    CHECK(h.dtype() == DType::BF16);
    y = relu(batch_norm(h, rm, rv, w, b, true));
    Tensor p = max_pool2d(y, {2, 2});
    CHECK(y.dtype() == DType::BF16);
    CHECK(p.dtype() == DType::BF16);
    CHECK(adaptive_avg_pool2d(p, {1, 1}).dtype() == DType::BF16);
  }
  CHECK(rm.dtype() == DType::F32);
  CHECK(max_abs(rm) > 0);
  sum(cast(y, DType::F32)).backward();
  CHECK(w.grad().dtype() == DType::F32);
  CHECK(cw.grad().dtype() == DType::F32);
}

TEST_CASE("dropout2d drops whole channels", "[dropout]") {
  Generator gen(7);
  Tensor x = ones({8, 16, 3, 3}).requires_grad_();
  Tensor y = dropout2d(x, 0.25, true, &gen);
  std::vector<double> v = y.to_vector<double>();
  int dropped = 0;
  for (int64_t plane = 0; plane < 8 * 16; ++plane) {
    const double first = v[plane * 9];
    CHECK((first == 0.0 || std::abs(first - 1.0 / 0.75) < 1e-6));
    for (int i = 1; i < 9; ++i) CHECK(v[plane * 9 + i] == first);
    dropped += first == 0.0;
  }
  CHECK(std::abs(dropped - 32) < 20);  // 128 planes, p = 0.25: mean 32, sd 4.9
  sum(y).backward();
  CHECK(max_diff(x.grad(), y.detach()) == 0.0);  // gradient = the scaled mask
  // Same seed, same mask; eval and p = 0 return the input.
  Generator gen2(7);
  CHECK(max_diff(dropout2d(ones({8, 16, 3, 3}), 0.25, true, &gen2), y) == 0.0);
  CHECK(dropout2d(x, 0.5, false).is_same(x));
  CHECK(dropout2d(x, 0.0, true).is_same(x));
  CHECK(max_abs(dropout2d(x, 1.0, true)) == 0.0);
}

// PyTorch (1.13 and 2.x) reads a 3-D input as (N, C, L): one draw per (n, c) row, with a warning;
// 2-D and 5-D inputs are dropped per (d0, d1) with its deprecation warning.
TEST_CASE("dropout2d on 3-D and other ranks drops per (d0, d1) slice, warning as PyTorch", "[dropout]") {
  std::vector<std::string> warnings;
  auto previous = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  Generator gen(11);
  for (const Shape& shape : {Shape{6, 5, 7}, Shape{6, 5}, Shape{6, 5, 2, 2, 3}}) {
    warnings.clear();
    Tensor y = dropout2d(ones(shape), 0.5, true, &gen);
    REQUIRE(y.shape() == shape);
    // Each warning once per process (as Python's default filter shows one per call site).
    if (shape.size() != 5) {
      REQUIRE(warnings.size() == 1);
      CHECK_THAT(warnings[0], Catch::Matchers::Contains("dropout2d") &&
                                  Catch::Matchers::Contains(std::to_string(shape.size()) + "-D input"));
    }
    dropout2d(ones(shape), 0.5, true, &gen);
    CHECK(warnings.size() <= 1);
    const std::vector<double> v = y.to_vector<double>();
    const int64_t slices = shape[0] * shape[1], inner = y.numel() / slices;
    int dropped = 0;
    for (int64_t s = 0; s < slices; ++s) {
      const double first = v[s * inner];
      CHECK((first == 0.0 || first == 2.0));
      for (int64_t i = 1; i < inner; ++i) CHECK(v[s * inner + i] == first);
      dropped += first == 0.0;
    }
    CHECK(dropped > 0);  // 30 draws at p = 0.5: each side at least once but with probability 2^-29
    CHECK(dropped < slices);
  }
  warnings.clear();
  dropout2d(ones({2, 3, 4, 4}), 0.5, true, &gen);
  CHECK(warnings.empty());
  set_warning_handler(previous);
  CHECK_THROWS_WITH(dropout2d(ones({4}), 0.5), Catch::Matchers::Contains("dropout2d") && Catch::Matchers::Contains("[4]"));
}

TEST_CASE("pooling and batch_norm errors", "[pool][norm][errors]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(max_pool2d(zeros({4, 4}), {2, 2}), Contains("max_pool2d") && Contains("[4, 4]"));
  CHECK_THROWS_WITH(max_pool2d(zeros({1, 1, 4, 4}), {2, 2}, {2, 2}, {2, 2}), Contains("max_pool2d") && Contains("half"));
  CHECK_THROWS_WITH(max_pool2d(zeros({1, 1, 2, 2}), {3, 3}), Contains("max_pool2d") && Contains("too small"));
  CHECK_THROWS_WITH(max_pool2d(zeros({1, 1, 4, 4}), {0, 2}), Contains("max_pool2d") && Contains("kernel size"));
  CHECK_THROWS_WITH(avg_pool2d(zeros({1, 1, 4, 4}), {2, 2}, {1, 1}, {2, 0}), Contains("avg_pool2d") && Contains("half"));
  CHECK_THROWS_WITH(adaptive_avg_pool2d(zeros({1, 1, 4, 4}), {0, 2}), Contains("adaptive_avg_pool2d"));
  CHECK_THROWS_WITH(adaptive_avg_pool2d(zeros({1, 1, 0, 4}), {1, 1}), Contains("adaptive_avg_pool2d") && Contains("non-zero"));
  CHECK_THROWS_WITH(batch_norm(zeros({1, 4}), zeros({4}), ones({4}), Tensor(), Tensor(), true),
                    Contains("batch_norm") && Contains("more than 1 value per channel") && Contains("[1, 4]"));
  CHECK_THROWS_WITH(batch_norm(zeros({2, 3}), zeros({4}), ones({4})), Contains("batch_norm") && Contains("running_mean") &&
                                                                          Contains("3 elements"));
  CHECK_THROWS_WITH(batch_norm(zeros({2, 3}), Tensor(), Tensor(), Tensor(), Tensor(), false),
                    Contains("batch_norm") && Contains("evaluation mode"));
  CHECK_THROWS_WITH(batch_norm(zeros({4}), Tensor(), Tensor(), Tensor(), Tensor(), true), Contains("batch_norm"));
  CHECK_THROWS_WITH(dropout2d(zeros({1, 2, 2, 2}), 1.5), Contains("dropout2d") && Contains("between 0 and 1"));
}
