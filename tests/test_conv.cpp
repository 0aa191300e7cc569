// conv2d and conv_transpose2d: values against a plain direct convolution written in f64 loops
// (stride, padding, "same", dilation, groups, bias, 1x1, unbatched), first- and second-order
// gradient checks, f16/bf16 against f32 within dtype-derived tolerances, autocast, and errors.
#include <catch2/catch.hpp>

#include <omp.h>

#include <cmath>
#include <functional>

#include "gradcheck.h"
#include "ops/cpu/conv_dnnl.h"
#include "random_values.h"

using namespace minidl;
using minidl::testing::GradCase;
using minidl::testing::max_abs_diff;
using minidl::testing::run_case;
using TL = std::vector<Tensor>;

namespace {

// random_tensor(shape, seed) is f64 in [-1, 1); this one casts it to dt.
using minidl::testing::random_tensor;
Tensor random_tensor(const Shape& s, uint64_t seed, DType dt) { return cast(random_tensor(s, seed), dt); }

struct ConvSpec {
  Size2 stride{1, 1}, pad_lo{0, 0}, pad_hi{0, 0}, dilation{1, 1};
  int64_t groups = 1;
};

// Direct convolution: y[n, o, oh, ow] = b[o] + sum_{c, i, j} w[o, c, i, j] * x[n, g*Cg + c, ih, iw].
Tensor ref_conv2d(const Tensor& xt, const Tensor& wt, const Tensor& bt, const ConvSpec& s) {
  const std::vector<double> x = xt.to_vector<double>(), w = wt.to_vector<double>();
  const std::vector<double> b = bt.defined() ? bt.to_vector<double>() : std::vector<double>();
  const int64_t N = xt.size(0), C = xt.size(1), H = xt.size(2), W = xt.size(3);
  const int64_t O = wt.size(0), Cg = wt.size(1), kH = wt.size(2), kW = wt.size(3), Og = O / s.groups;
  const int64_t OH = (H + s.pad_lo[0] + s.pad_hi[0] - s.dilation[0] * (kH - 1) - 1) / s.stride[0] + 1;
  const int64_t OW = (W + s.pad_lo[1] + s.pad_hi[1] - s.dilation[1] * (kW - 1) - 1) / s.stride[1] + 1;
  std::vector<double> y(N * O * OH * OW, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = b.empty() ? 0.0 : b[o];
          const int64_t grp = o / Og;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t i = 0; i < kH; ++i)
              for (int64_t j = 0; j < kW; ++j) {
                const int64_t ih = oh * s.stride[0] - s.pad_lo[0] + i * s.dilation[0];
                const int64_t iw = ow * s.stride[1] - s.pad_lo[1] + j * s.dilation[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += w[((o * Cg + c) * kH + i) * kW + j] * x[((n * C + grp * Cg + c) * H + ih) * W + iw];
              }
          y[((n * O + o) * OH + oh) * OW + ow] = acc;
        }
  (void)C;
  return from_vector(y, {N, O, OH, OW});
}

// Direct transposed convolution: every input pixel scatters w[ci, co, i, j] * x into the output.
Tensor ref_conv_transpose2d(const Tensor& xt, const Tensor& wt, const Tensor& bt, Size2 stride, Size2 pad, Size2 out_pad,
                            int64_t groups, Size2 dil) {
  const std::vector<double> x = xt.to_vector<double>(), w = wt.to_vector<double>();
  const int64_t N = xt.size(0), Cin = xt.size(1), H = xt.size(2), W = xt.size(3);
  const int64_t Cog = wt.size(1), kH = wt.size(2), kW = wt.size(3), Cout = Cog * groups, Cig = Cin / groups;
  const int64_t OH = (H - 1) * stride[0] - 2 * pad[0] + dil[0] * (kH - 1) + out_pad[0] + 1;
  const int64_t OW = (W - 1) * stride[1] - 2 * pad[1] + dil[1] * (kW - 1) + out_pad[1] + 1;
  std::vector<double> y(N * Cout * OH * OW, 0.0);
  if (bt.defined()) {
    const std::vector<double> b = bt.to_vector<double>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < Cout; ++c)
        for (int64_t p = 0; p < OH * OW; ++p) y[(n * Cout + c) * OH * OW + p] = b[c];
  }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ci = 0; ci < Cin; ++ci)
      for (int64_t ih = 0; ih < H; ++ih)
        for (int64_t iw = 0; iw < W; ++iw) {
          const int64_t grp = ci / Cig;
          for (int64_t co = 0; co < Cog; ++co)
            for (int64_t i = 0; i < kH; ++i)
              for (int64_t j = 0; j < kW; ++j) {
                const int64_t oh = ih * stride[0] - pad[0] + i * dil[0], ow = iw * stride[1] - pad[1] + j * dil[1];
                if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
                y[((n * Cout + grp * Cog + co) * OH + oh) * OW + ow] +=
                    x[((n * Cin + ci) * H + ih) * W + iw] * w[((ci * Cog + co) * kH + i) * kW + j];
              }
        }
  return from_vector(y, {N, Cout, OH, OW});
}

// Weight gradient written out: gw[o, c, i, j] = sum over n, oh, ow of gy[n, o, oh, ow] * x[n, g*Cg + c, ih, iw].
Tensor ref_conv2d_weight_grad(const Tensor& xt, const Tensor& gyt, const Shape& wshape, const ConvSpec& s) {
  const std::vector<double> x = xt.to_vector<double>(), gy = gyt.to_vector<double>();
  const int64_t N = xt.size(0), C = xt.size(1), H = xt.size(2), W = xt.size(3);
  const int64_t O = wshape[0], Cg = wshape[1], kH = wshape[2], kW = wshape[3], Og = O / s.groups;
  const int64_t OH = gyt.size(2), OW = gyt.size(3);
  std::vector<double> gw(numel_of(wshape), 0.0);
  for (int64_t o = 0; o < O; ++o)
    for (int64_t c = 0; c < Cg; ++c)
      for (int64_t i = 0; i < kH; ++i)
        for (int64_t j = 0; j < kW; ++j) {
          double acc = 0;
          for (int64_t n = 0; n < N; ++n)
            for (int64_t oh = 0; oh < OH; ++oh)
              for (int64_t ow = 0; ow < OW; ++ow) {
                const int64_t ih = oh * s.stride[0] - s.pad_lo[0] + i * s.dilation[0];
                const int64_t iw = ow * s.stride[1] - s.pad_lo[1] + j * s.dilation[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += gy[((n * O + o) * OH + oh) * OW + ow] * x[((n * C + (o / Og) * Cg + c) * H + ih) * W + iw];
              }
          gw[((o * Cg + c) * kH + i) * kW + j] = acc;
        }
  return from_vector(gw, wshape);
}

Tensor sq(const Tensor& t) { return mul(t, t); }

// max |a - b| of two tensors of the same shape (a shape mismatch fails the test).
double max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  return max_abs_diff(a, b);
}

}  // namespace

namespace {
// The geometries the value tests cover (stride, padding, dilation, groups, 1x1, kernel = input,
// a batch larger than the thread count).
struct ConvCase {
  const char* name;
  Shape x, w;
  bool bias;
  ConvSpec spec;
};
const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {"3x3 bias", {2, 3, 6, 5}, {4, 3, 3, 3}, true, {}},
      {"stride 2 pad 1", {2, 3, 7, 6}, {4, 3, 3, 2}, true, {{2, 2}, {1, 1}, {1, 1}}},
      {"stride (1, 3) pad (2, 0)", {1, 2, 5, 9}, {3, 2, 3, 3}, false, {{1, 3}, {2, 0}, {2, 0}}},
      {"dilation 2 pad 2", {1, 2, 7, 7}, {3, 2, 3, 3}, true, {{1, 1}, {2, 2}, {2, 2}, {2, 2}}},
      {"groups 2", {2, 4, 5, 5}, {6, 2, 3, 3}, true, {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 2}},
      {"depthwise", {2, 3, 5, 5}, {3, 1, 3, 3}, false, {{1, 1}, {1, 1}, {1, 1}, {1, 1}, 3}},
      {"1x1", {2, 3, 4, 4}, {5, 3, 1, 1}, true, {}},
      {"1x1 stride 2", {2, 3, 5, 5}, {5, 3, 1, 1}, true, {{2, 2}}},
      {"1x1 stride 2, even input (implied bottom padding -1)", {2, 3, 6, 6}, {5, 3, 1, 1}, true, {{2, 2}}},
      {"kernel = input", {3, 2, 4, 4}, {2, 2, 4, 4}, true, {}},
      {"batch 9 (parallel images)", {9, 3, 8, 8}, {4, 3, 3, 3}, true, {{1, 1}, {1, 1}, {1, 1}}},
  };
  return cases;
}
// Whether this build has oneDNN; without it a oneDNN test says so and has nothing to check.
bool have_dnnl() {
  if (kernels::cpu::dnnl_conv::compiled()) return true;
  WARN("built without oneDNN: only the im2col path exists");
  return false;
}

// Puts back oneDNN's switches (on) and the OpenMP thread count when a test that changes them ends.
struct RestoreConvSettings {
  int threads = omp_get_max_threads();
  ~RestoreConvSettings() {
    kernels::cpu::dnnl_conv::set_enabled(true);
    kernels::cpu::dnnl_conv::set_native_bf16(true);
    omp_set_num_threads(threads);
  }
};

// Convolutions for the f16/bf16 routes through oneDNN's layouts: plain layouts (3 input channels,
// grouped), whole channel blocks (16 channels: nChw8c or nChw16c), a zero-padded last block (20
// and 12 channels), more pixels than one conversion run (9 x 9 > 64), planes of no multiple of 8
// pixels (9 x 9, 9 x 10, 5 x 5), and weights through an f32 copy.
struct LowCase {
  Shape x, w;
  int64_t stride, pad, groups;
  // y, x.grad, w.grad, b.grad of the convolution in `dt` with a fixed output gradient.
  std::vector<Tensor> run(DType dt) const {
    Tensor xt = random_tensor(x, 60, dt).requires_grad_(), wt = random_tensor(w, 61, dt).requires_grad_();
    Tensor b = random_tensor({w[0]}, 62, dt).requires_grad_();
    Tensor y = conv2d(xt, wt, b, {stride, stride}, {pad, pad}, {1, 1}, groups);
    y.backward(random_tensor(y.shape(), 63, dt));
    return {y.detach(), xt.grad(), wt.grad(), b.grad()};
  }
};
const std::vector<LowCase>& low_precision_cases() {
  static const std::vector<LowCase> cases = {{{2, 4, 9, 8}, {6, 2, 3, 3}, 2, 1, 2},
                                             {{2, 3, 9, 9}, {16, 3, 3, 3}, 1, 1, 1},
                                             {{2, 16, 9, 9}, {16, 16, 3, 3}, 1, 1, 1},
                                             {{2, 20, 9, 10}, {12, 20, 3, 3}, 2, 1, 1},
                                             {{3, 16, 8, 8}, {32, 16, 1, 1}, 2, 0, 1}};
  return cases;
}

}  // namespace

TEST_CASE("conv2d matches a direct f64 convolution", "[conv]") {
  for (const ConvCase& c : conv_cases()) {
    INFO(c.name);
    Tensor x = random_tensor(c.x, 1), w = random_tensor(c.w, 2), b = c.bias ? random_tensor({c.w[0]}, 3) : Tensor();
    Tensor ref = ref_conv2d(x, w, b, c.spec);
    Tensor y = conv2d(x, w, b, c.spec.stride, c.spec.pad_lo, c.spec.dilation, c.spec.groups);
    REQUIRE(y.shape() == ref.shape());
    CHECK(max_diff(y, ref) < 1e-12);
    // f32 accumulates in f32: error ~ eps * sqrt(K) * |terms|.
    Tensor y32 = conv2d(cast(x, DType::F32), cast(w, DType::F32), b.defined() ? cast(b, DType::F32) : Tensor(),
                        c.spec.stride, c.spec.pad_lo, c.spec.dilation, c.spec.groups);
    CHECK(y32.dtype() == DType::F32);
    CHECK(max_diff(y32, ref) < 64 * traits(DType::F32).eps);
  }
}

TEST_CASE("conv2d padding same and valid", "[conv]") {
  Tensor x = random_tensor({2, 2, 5, 6}, 4);
  SECTION("odd kernel: symmetric") {
    Tensor w = random_tensor({3, 2, 3, 5}, 5);
    Tensor y = conv2d(x, w, Tensor(), {1, 1}, ConvPadding::Same);
    CHECK(y.shape() == Shape{2, 3, 5, 6});
    CHECK(max_diff(y, ref_conv2d(x, w, Tensor(), {{1, 1}, {1, 2}, {1, 2}})) < 1e-12);
  }
  SECTION("even kernel: the extra row/column goes bottom/right (PyTorch)") {
    Tensor w = random_tensor({3, 2, 4, 2}, 6);
    Tensor y = conv2d(x, w, Tensor(), {1, 1}, ConvPadding::Same);
    CHECK(y.shape() == Shape{2, 3, 5, 6});
    CHECK(max_diff(y, ref_conv2d(x, w, Tensor(), {{1, 1}, {1, 0}, {2, 1}})) < 1e-12);
  }
  SECTION("dilated same") {
    Tensor w = random_tensor({3, 2, 2, 3}, 7);
    Tensor y = conv2d(x, w, Tensor(), {1, 1}, ConvPadding::Same, {3, 2});
    CHECK(y.shape() == Shape{2, 3, 5, 6});
    CHECK(max_diff(y, ref_conv2d(x, w, Tensor(), {{1, 1}, {1, 2}, {2, 2}, {3, 2}})) < 1e-12);
  }
  SECTION("valid = no padding") {
    Tensor w = random_tensor({3, 2, 3, 3}, 8);
    CHECK(max_diff(conv2d(x, w, Tensor(), {1, 1}, ConvPadding::Valid), conv2d(x, w)) == 0.0);
  }
}

TEST_CASE("conv2d unbatched input", "[conv]") {
  Tensor x = random_tensor({3, 5, 5}, 9), w = random_tensor({4, 3, 3, 3}, 10), b = random_tensor({4}, 11);
  Tensor y = conv2d(x, w, b, {1, 1}, {1, 1});
  CHECK(y.shape() == Shape{4, 5, 5});
  CHECK(max_diff(y, conv2d(x.unsqueeze(0), w, b, {1, 1}, {1, 1}).squeeze(0)) == 0.0);
}

TEST_CASE("conv2d on a large image (several column chunks) matches direct loops in all three passes", "[conv]") {
  // K = 64*3*3 = 576 rows of 40 columns: the column matrix is processed in chunks of output rows.
  // Width stride 2 (strided copies) and width stride 1 with dilation (the vector row copies).
  const std::vector<ConvSpec> specs = {{{1, 2}, {1, 1}, {1, 1}, {1, 1}, 2}, {{2, 1}, {2, 1}, {2, 1}, {1, 2}, 2}};
  for (const ConvSpec& spec : specs)
  for (DType dt : {DType::F64, DType::F32}) {
    INFO(dtype_name(dt) << " stride " << spec.stride[0] << "," << spec.stride[1]);
    Tensor x = random_tensor({2, 64, 41, 80}, 40), w = random_tensor({4, 32, 3, 3}, 41), b = random_tensor({4}, 42);
    Tensor xd = cast(x, dt).requires_grad_(), wd = cast(w, dt).requires_grad_(), bd = cast(b, dt).requires_grad_();
    Tensor y = conv2d(xd, wd, bd, spec.stride, spec.pad_lo, spec.dilation, spec.groups);
    Tensor ref = ref_conv2d(x, w, b, spec);
    REQUIRE(y.shape() == ref.shape());
    const double tol = dt == DType::F64 ? 1e-11 : 1e-4;
    CHECK(max_diff(y, ref) < tol);
    Tensor gy = random_tensor(y.shape(), 43);
    y.backward(cast(gy, dt));
    // The transposed convolution that restores the input size needs this output_padding.
    Size2 out_pad;
    for (int d = 0; d < 2; ++d)
      out_pad[d] = x.size(2 + d) - ((y.size(2 + d) - 1) * spec.stride[d] - 2 * spec.pad_lo[d] + spec.dilation[d] * 2 + 1);
    Tensor gx_ref = ref_conv_transpose2d(gy, w, Tensor(), spec.stride, spec.pad_lo, out_pad, spec.groups, spec.dilation);
    REQUIRE(gx_ref.shape() == x.shape());
    CHECK(max_diff(xd.grad(), gx_ref) < tol);
    CHECK(max_diff(wd.grad(), ref_conv2d_weight_grad(x, gy, w.shape(), spec)) < tol * 100);
    CHECK(max_diff(bd.grad(), sum(gy, {0, 2, 3})) < tol * 100);
  }
}

TEST_CASE("conv_transpose2d matches a direct f64 transposed convolution", "[conv]") {
  struct Case {
    const char* name;
    Shape x, w;
    bool bias;
    Size2 stride, pad, out_pad;
    int64_t groups;
    Size2 dil;
  };
  const std::vector<Case> cases = {
      {"plain", {2, 3, 4, 4}, {3, 2, 3, 3}, true, {1, 1}, {0, 0}, {0, 0}, 1, {1, 1}},
      {"stride 2 pad 1 output_padding 1", {2, 4, 3, 3}, {4, 3, 3, 3}, true, {2, 2}, {1, 1}, {1, 1}, 1, {1, 1}},
      {"groups 2 stride 2", {1, 4, 4, 3}, {4, 2, 2, 2}, false, {2, 2}, {0, 0}, {0, 0}, 2, {1, 1}},
      {"dilation 2, stride (2, 1)", {2, 2, 3, 4}, {2, 3, 2, 3}, true, {2, 1}, {1, 0}, {0, 0}, 1, {2, 2}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Tensor x = random_tensor(c.x, 12), w = random_tensor(c.w, 13), b = c.bias ? random_tensor({c.w[1] * c.groups}, 14) : Tensor();
    Tensor ref = ref_conv_transpose2d(x, w, b, c.stride, c.pad, c.out_pad, c.groups, c.dil);
    Tensor y = conv_transpose2d(x, w, b, c.stride, c.pad, c.out_pad, c.groups, c.dil);
    REQUIRE(y.shape() == ref.shape());
    CHECK(max_diff(y, ref) < 1e-12);
  }
}

TEST_CASE("conv2d input gradient is conv_transpose2d", "[conv]") {
  Tensor x = random_tensor({2, 4, 7, 7}, 15).requires_grad_(), w = random_tensor({6, 2, 3, 3}, 16);
  Tensor y = conv2d(x, w, Tensor(), {2, 2}, {1, 1}, {1, 1}, 2);
  Tensor gy = random_tensor(y.shape(), 17);
  y.backward(gy);
  Tensor gx = conv_transpose2d(gy, w, Tensor(), {2, 2}, {1, 1}, {0, 0}, 2);
  REQUIRE(gx.shape() == x.shape());
  CHECK(max_diff(x.grad(), gx) < 1e-12);
}

TEST_CASE("conv gradient checks (first and second order)", "[conv][grad]") {
  const std::vector<GradCase> cases = {
      {.name = "conv2d bias", .shapes = {{2, 3, 5, 4}, {4, 3, 3, 3}, {4}},
       .fn = [](const TL& v) { return conv2d(v[0], v[1], v[2]); }},
      {.name = "conv2d squared (gy depends on x, w)", .shapes = {{1, 2, 4, 4}, {3, 2, 2, 3}, {3}},
       .fn = [](const TL& v) { return sq(conv2d(v[0], v[1], v[2], {1, 1}, {1, 0})); }},
      {.name = "conv2d no bias", .shapes = {{2, 2, 5, 5}, {3, 2, 2, 2}}, .fn = [](const TL& v) { return conv2d(v[0], v[1]); }},
      {.name = "conv2d stride 2 pad 1", .shapes = {{2, 2, 6, 5}, {3, 2, 3, 3}, {3}},
       .fn = [](const TL& v) { return sq(conv2d(v[0], v[1], v[2], {2, 2}, {1, 1})); }},
      {.name = "conv2d dilation 2", .shapes = {{1, 2, 6, 6}, {2, 2, 2, 3}, {2}},
       .fn = [](const TL& v) { return conv2d(v[0], v[1], v[2], {1, 1}, {1, 2}, {2, 2}); }},
      {.name = "conv2d groups 2", .shapes = {{2, 4, 4, 4}, {6, 2, 3, 3}, {6}},
       .fn = [](const TL& v) { return sq(conv2d(v[0], v[1], v[2], {1, 1}, {1, 1}, {1, 1}, 2)); }},
      {.name = "conv2d same (even kernel)", .shapes = {{1, 2, 5, 4}, {2, 2, 2, 4}},
       .fn = [](const TL& v) { return sq(conv2d(v[0], v[1], Tensor(), {1, 1}, ConvPadding::Same)); }},
      {.name = "conv2d 1x1", .shapes = {{2, 3, 3, 3}, {4, 3, 1, 1}, {4}},
       .fn = [](const TL& v) { return sq(conv2d(v[0], v[1], v[2])); }},
      {.name = "conv2d weight only", .shapes = {{2, 2, 4, 4}, {3, 2, 3, 3}, {3}},
       .fn = [](const TL& v) { return sq(conv2d(v[0], v[1], v[2])); }, .differentiable = {false, true, true}},
      {.name = "conv2d bias only", .shapes = {{2, 2, 4, 4}, {3, 2, 3, 3}, {3}},
       .fn = [](const TL& v) { return sq(conv2d(v[0], v[1], v[2])); }, .differentiable = {false, false, true}},
      {.name = "conv2d input only", .shapes = {{2, 2, 4, 4}, {3, 2, 3, 3}, {3}},
       .fn = [](const TL& v) { return sq(conv2d(v[0], v[1], v[2])); }, .differentiable = {true, false, false}},
      {.name = "conv_transpose2d", .shapes = {{2, 3, 3, 3}, {3, 2, 3, 3}, {2}},
       .fn = [](const TL& v) { return sq(conv_transpose2d(v[0], v[1], v[2], {2, 2}, {1, 1}, {1, 1})); }},
      {.name = "conv_transpose2d groups", .shapes = {{1, 4, 3, 2}, {4, 1, 2, 2}},
       .fn = [](const TL& v) { return conv_transpose2d(v[0], v[1], Tensor(), {1, 2}, {0, 0}, {0, 0}, 2); }},
      {.name = "conv2d then conv2d", .shapes = {{1, 2, 5, 5}, {3, 2, 3, 3}, {2, 3, 2, 2}},
       .fn = [](const TL& v) { return conv2d(tanh(conv2d(v[0], v[1])), v[2]); }},
  };
  for (const GradCase& c : cases) {
    INFO(c.name);
    CHECK(run_case(c) == "");
  }
}

TEST_CASE("conv2d in f16/bf16 matches f32 on the same inputs", "[conv][amp]") {
  for (DType dt : {DType::F16, DType::BF16}) {
    INFO(dtype_name(dt));
    const double eps = traits(dt).eps;
    // Inputs representable in dt, so the only differences are output rounding (and f32 sums).
    Tensor x = cast(random_tensor({3, 4, 9, 8}, 20, dt), DType::F32), w = cast(random_tensor({6, 2, 3, 3}, 21, dt), DType::F32);
    Tensor b = cast(random_tensor({6}, 22, dt), DType::F32);
    x.requires_grad_();
    w.requires_grad_();
    b.requires_grad_();
    Tensor y = conv2d(x, w, b, {2, 1}, {1, 1}, {1, 1}, 2);
    Tensor xl = cast(x.detach(), dt).requires_grad_(), wl = cast(w.detach(), dt).requires_grad_(),
           bl = cast(b.detach(), dt).requires_grad_();
    Tensor yl = conv2d(xl, wl, bl, {2, 1}, {1, 1}, {1, 1}, 2);
    CHECK(yl.dtype() == dt);
    const double ymax = max_diff(y, zeros_like(y));
    CHECK(max_diff(yl, y) <= eps * ymax);  // one rounding of values <= ymax: half an ulp
    Tensor gy = cast(random_tensor(y.shape(), 23, dt), DType::F32);
    y.backward(gy);
    yl.backward(cast(gy, dt));
    for (auto [lp, ref] : {std::pair{xl, x}, std::pair{wl, w}, std::pair{bl, b}}) {
      REQUIRE(lp.grad().dtype() == dt);
      CHECK(max_diff(lp.grad(), ref.grad()) <= eps * max_diff(ref.grad(), zeros_like(ref.grad())));
    }
  }
}

TEST_CASE("conv2d under CPU autocast runs in bf16, parameters get f32 gradients", "[conv][amp]") {
  Tensor x = random_tensor({2, 3, 6, 6}, 30, DType::F32);
  Tensor w = random_tensor({4, 3, 3, 3}, 31, DType::F32).requires_grad_();
  Tensor b = random_tensor({4}, 32, DType::F32).requires_grad_();
  Tensor y;
  {
    amp::autocast scope(DeviceType::CPU);
    y = conv2d(x, w, b, {1, 1}, {1, 1});
    CHECK(y.dtype() == DType::BF16);
    Tensor t = conv_transpose2d(y, random_tensor({4, 2, 2, 2}, 33, DType::F32));
    CHECK(t.dtype() == DType::BF16);
  }
  REQUIRE(y.grad_fn());
  CHECK(y.grad_fn()->amp.policy == "lower_precision");
  CHECK(y.grad_fn()->amp.compute_dtype == DType::BF16);
  sum(cast(y, DType::F32)).backward();
  REQUIRE(w.grad().defined());
  CHECK(w.grad().dtype() == DType::F32);
  CHECK(b.grad().dtype() == DType::F32);
  // The bias gradient of a sum is the number of output pixels per channel, exact in bf16.
  for (double v : b.grad().to_vector<double>()) CHECK(v == 72.0);
  // Outside the scope the op runs in its inputs' dtype again.
  CHECK(conv2d(x, w.detach(), b.detach()).dtype() == DType::F32);
}

// With oneDNN in the build (MINIDL_HAS_DNNL), f32 convolutions run on it: every geometry above, in
// all three passes and in conv_transpose2d, must agree with the im2col + GEMM path (which the tests
// above hold to the f64 loops), on 2 threads (one oneDNN call per image run) and on 1 (whole batch).
TEST_CASE("conv2d on oneDNN matches the im2col path in all three passes", "[conv][dnnl]") {
  namespace dc = kernels::cpu::dnnl_conv;
  if (!have_dnnl()) return;
  const RestoreConvSettings restore;
  // y, x.grad, w.grad, b.grad of one f32 conv (or transposed conv) and a fixed output gradient.
  auto passes = [](bool dnnl, const std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>& f, const Shape& xs,
                   const Shape& ws, int64_t bias) {
    dc::set_enabled(dnnl);
    Tensor x = random_tensor(xs, 50, DType::F32).requires_grad_(), w = random_tensor(ws, 51, DType::F32).requires_grad_();
    Tensor b = bias ? random_tensor({bias}, 52, DType::F32).requires_grad_() : Tensor();
    Tensor y = f(x, w, b);
    y.backward(random_tensor(y.shape(), 53, DType::F32));
    std::vector<Tensor> out = {y.detach(), x.grad(), w.grad()};
    if (bias) out.push_back(b.grad());
    return out;
  };
  // calls: the oneDNN calls of a forward and backward that took it throughout (conv2d: the
  // forward, then both gradients in one joint call; conv_transpose2d: three).
  auto agree = [&](const char* name, const std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>& f,
                   const Shape& xs, const Shape& ws, int64_t bias, int64_t calls = 2) {
    const int64_t before = dc::calls();
    const auto on = passes(true, f, xs, ws, bias);
    INFO(name);
    CHECK(dc::calls() - before == calls);
    const auto off = passes(false, f, xs, ws, bias);
    const char* what[] = {"y", "x grad", "w grad", "b grad"};
    for (size_t i = 0; i < on.size(); ++i) {
      INFO(what[i]);
      // Both sum the same K (or N * P) products in f32 in different orders.
      CHECK(max_diff(on[i], off[i]) < 256 * traits(DType::F32).eps * (1 + max_abs_diff(off[i], zeros_like(off[i]))));
    }
  };
  for (int threads : {2, 1}) {
    omp_set_num_threads(threads);
    INFO("threads " << threads);
    for (const ConvCase& c : conv_cases()) {
      if (threads > 1 && c.x[0] < threads) continue;  // a batch below the thread count stays on im2col
      const ConvSpec s = c.spec;
      agree(c.name, [&](const Tensor& x, const Tensor& w, const Tensor& b) {
        return conv2d(x, w, b, s.stride, s.pad_lo, s.dilation, s.groups);
      }, c.x, c.w, c.bias ? c.w[0] : 0);
    }
    agree("same padding, even kernel (bottom/right extra)", [](const Tensor& x, const Tensor& w, const Tensor& b) {
      return conv2d(x, w, b, {1, 1}, ConvPadding::Same, {1, 1});
    }, {2, 2, 5, 6}, {3, 2, 4, 2}, 0);
    agree("same padding, dilated", [](const Tensor& x, const Tensor& w, const Tensor& b) {
      return conv2d(x, w, b, {1, 1}, ConvPadding::Same, {3, 2});
    }, {2, 2, 5, 6}, {3, 2, 2, 3}, 3);
    agree("large image, stride (2, 1), dilation (1, 2), groups 2", [](const Tensor& x, const Tensor& w, const Tensor& b) {
      return conv2d(x, w, b, {2, 1}, {2, 1}, {1, 2}, 2);
    }, {2, 64, 41, 80}, {4, 32, 3, 3}, 4);
    {  // f16/bf16 are widened for oneDNN's f32 primitives (or bf16 runs on its bf16 ones, where the
      // CPU has them) and narrowed once: the im2col path does the same. f32 images take the same
      // channel-block copies.
      for (const LowCase& lc : low_precision_cases())
        for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
          INFO(dtype_name(dt) << " x " << shape_str(lc.x) << " w " << shape_str(lc.w));
          auto run = [&](bool dnnl) {
            dc::set_enabled(dnnl);
            return lc.run(dt);
          };
          if (threads > 1 && lc.x[0] < threads) continue;
          const int64_t before = dc::calls();
          const auto on = run(true);
          CHECK(dc::calls() - before == 2);  // the forward, then both gradients in one call
          const auto off = run(false);
          for (size_t i = 0; i < on.size(); ++i) {
            CHECK(on[i].dtype() == dt);
            const double scale = max_abs_diff(off[i], zeros_like(off[i]));
            if (dt == DType::F32)  // the same f32 sums in two orders (as agree above)
              CHECK(max_diff(on[i], off[i]) < 256 * traits(dt).eps * (1 + scale));
            else  // each side rounds an f32 result once: at most one ulp apart, plus the f32 sums' order
              CHECK(max_diff(on[i], off[i]) <= 2 * traits(dt).eps * scale);
          }
        }
    }
    // conv_transpose2d is the input-gradient kernel (with a bias) forward, the conv forward backward.
    agree("conv_transpose2d stride 2 pad 1 output_padding 1", [](const Tensor& x, const Tensor& w, const Tensor& b) {
      return conv_transpose2d(x, w, b, {2, 2}, {1, 1}, {1, 1});
    }, {2, 4, 3, 3}, {4, 3, 3, 3}, 3, 3);
    agree("conv_transpose2d groups 2, dilation 2", [](const Tensor& x, const Tensor& w, const Tensor& b) {
      return conv_transpose2d(x, w, b, {2, 1}, {1, 0}, {0, 0}, 2, {2, 2});
    }, {2, 4, 3, 4}, {4, 3, 2, 3}, 6, 3);
  }
}

// Where oneDNN finds AVX512_BF16, bf16 convolutions run on its bf16 primitives: the products of bf16
// pairs are exact in f32 on both routes and summed in f32 in another order, and each side rounds its
// result once, so they agree to one bf16 ulp of the largest value plus the sums' f32 differences.
TEST_CASE("bf16 convolutions on oneDNN's bf16 primitives match the widened f32 primitives", "[conv][dnnl]") {
  namespace dc = kernels::cpu::dnnl_conv;
  if (!dc::compiled() || !dc::native_bf16_supported()) {
    WARN("oneDNN has no native bf16 convolution on this CPU (needs AVX512_BF16): the widened route is tested above");
    return;
  }
  const RestoreConvSettings restore;
  dc::set_enabled(true);
  const double eps = traits(DType::BF16).eps;
  for (int threads : {2, 1}) {
    omp_set_num_threads(threads);
    for (const LowCase& lc : low_precision_cases()) {
      if (threads > 1 && lc.x[0] < threads) continue;
      INFO("threads " << threads << " x " << shape_str(lc.x) << " w " << shape_str(lc.w));
      dc::set_native_bf16(true);
      const int64_t before = dc::native_bf16_calls();
      const auto native = lc.run(DType::BF16);
      CHECK(dc::native_bf16_calls() - before == 2);  // the forward, then both gradients in one call
      dc::set_native_bf16(false);
      const auto widened = lc.run(DType::BF16);
      CHECK(dc::native_bf16_calls() - before == 2);
      const char* what[] = {"y", "x grad", "w grad", "b grad"};
      for (size_t i = 0; i < native.size(); ++i) {
        INFO(what[i]);
        CHECK(native[i].dtype() == DType::BF16);
        CHECK(max_diff(native[i], widened[i]) <= 2 * eps * max_abs_diff(widened[i], zeros_like(widened[i])));
      }
    }
  }
}

// A backward that builds no graph computes both conv gradients in one kernel call
// (conv2d_backward: oneDNN reorders gy once for the two passes); with create_graph each gradient is
// its own differentiable call. Same primitives, same data: the gradients agree bit for bit, on
// oneDNN and on the im2col path, with and without a bias, in every floating dtype, on one and two
// threads (slot sums of the weight gradient included).
TEST_CASE("conv2d's joint backward equals its two separate gradient passes bit for bit", "[conv][dnnl]") {
  namespace dc = kernels::cpu::dnnl_conv;
  const RestoreConvSettings restore;
  for (int threads : {2, 1})
    for (bool dnnl : {true, false})
      for (DType dt : {DType::F32, DType::BF16, DType::F16, DType::F64})
        for (bool bias : {true, false}) {
          INFO("threads " << threads << (dnnl ? " oneDNN " : " im2col ") << dtype_name(dt) << (bias ? " bias" : ""));
          omp_set_num_threads(threads);
          dc::set_enabled(dnnl);
          Tensor x = random_tensor({4, 16, 9, 9}, 70, dt).requires_grad_();
          Tensor w = random_tensor({8, 16, 3, 3}, 71, dt).requires_grad_();
          Tensor b = bias ? random_tensor({8}, 72, dt).requires_grad_() : Tensor();
          Tensor y = conv2d(x, w, b, {2, 2}, {1, 1});
          const Tensor gy = random_tensor(y.shape(), 73, dt);
          TL inputs = {x, w};
          if (bias) inputs.push_back(b);
          const int64_t before = dc::calls();
          const TL separate = autograd::grad({y}, inputs, {gy}, /*retain_graph=*/true, /*create_graph=*/true);
          const int64_t separate_calls = dc::calls() - before;
          y.backward(gy);
          const int64_t joint_calls = dc::calls() - before - separate_calls;
          if (dnnl && dc::compiled() && dt != DType::F64) {
            CHECK(separate_calls == 2);  // the input and the weight gradient, each a oneDNN call
            CHECK(joint_calls == 1);     // both in one
          }
          CHECK(max_diff(x.grad(), separate[0]) == 0.0);
          CHECK(max_diff(w.grad(), separate[1]) == 0.0);
          if (bias) CHECK(max_diff(b.grad(), separate[2]) == 0.0);
        }
}

// f16/bf16 images widened for oneDNN's f32 primitives go in runs of a few images (dnnl_conv::run_kib)
// so each widened copy is still in cache when oneDNN reads it. Runs change nothing but where a slot
// is cut: the forward and input gradient see the same products per image (up to the primitive's
// summation order for another batch size), the weight gradient sums the runs' parts in f32, so the
// results agree with the whole slot at once within one rounding of the dtype. Batches of 7 and runs
// of 2 leave a shorter last run in every slot; channels-last (16 -> 16 channels) and NCHW (channel
// blocks, 20 -> 12 channels) images, with and without a bias.
TEST_CASE("f16/bf16 convolutions in runs of images agree with the whole slot at once", "[conv][dnnl]") {
  namespace dc = kernels::cpu::dnnl_conv;
  if (!have_dnnl()) return;
  const RestoreConvSettings restore;
  dc::set_enabled(true);
  dc::set_native_bf16(false);  // bf16 widened too, on every CPU
  const int64_t kib_before = dc::run_kib();
  struct Case {
    const char* name;
    Shape x, w;
    int64_t stride;
    bool channels_last, bias;
  };
  const Case cases[] = {{"channels-last 16 -> 16", {7, 16, 9, 9}, {16, 16, 3, 3}, 1, true, true},
                        {"NCHW 20 -> 12, stride 2", {7, 20, 9, 10}, {12, 20, 3, 3}, 2, false, false}};
  for (int threads : {2, 1})
    for (const Case& c : cases)
      for (DType dt : {DType::BF16, DType::F16}) {
        INFO("threads " << threads << " " << c.name << " " << dtype_name(dt));
        omp_set_num_threads(threads);
        auto run = [&](int64_t kib) {
          dc::set_run_kib(kib);
          Tensor x = random_tensor(c.x, 80, dt);
          if (c.channels_last) x = x.contiguous(MemoryFormat::ChannelsLast);
          x.requires_grad_();
          Tensor w = random_tensor(c.w, 81, dt).requires_grad_();
          Tensor b = c.bias ? random_tensor({c.w[0]}, 82, dt).requires_grad_() : Tensor();
          Tensor y = conv2d(x, w, b, {c.stride, c.stride}, {1, 1});
          CHECK((y.suggest_memory_format() == MemoryFormat::ChannelsLast) == c.channels_last);
          y.backward(random_tensor(y.shape(), 83, dt));
          std::vector<Tensor> out = {y.detach(), x.grad(), w.grad()};
          if (c.bias) out.push_back(b.grad());
          return out;
        };
        const int64_t runs_before = dc::runs();
        const auto whole = run(0);
        const int64_t whole_runs = dc::runs() - runs_before;
        // Runs of 2 images: the input is the larger image operand in both cases.
        const int64_t per_image_kib = 4 * c.x[1] * c.x[2] * c.x[3] / 1024 + 1;
        const auto in_runs = run(2 * per_image_kib);
        const int64_t cut_runs = dc::runs() - runs_before - whole_runs;
        CHECK(whole_runs == 2 * threads);  // the forward and the joint backward, one run per slot
        // Per pass: slots of 3 and 4 images (2 threads) take 2 runs each, a slot of 7 (1 thread) 4.
        CHECK(cut_runs == 8);
        const char* what[] = {"y", "x grad", "w grad", "b grad"};
        for (size_t i = 0; i < whole.size(); ++i) {
          INFO(what[i]);
          CHECK(in_runs[i].dtype() == dt);
          CHECK(max_diff(in_runs[i], whole[i]) <= 2 * traits(dt).eps * max_abs_diff(whole[i], zeros_like(whole[i])));
        }
      }
  dc::set_run_kib(kib_before);
}

// oneDNN's weight gradient over one input channel measured 0.46-0.51x of the im2col path
// (bench/README.md, performance log 11): that pass stays on im2col, the forward on oneDNN.
TEST_CASE("a single input channel's weight gradient runs on the im2col path, its forward on oneDNN", "[conv][dnnl]") {
  namespace dc = kernels::cpu::dnnl_conv;
  if (!have_dnnl()) return;
  const RestoreConvSettings restore;
  dc::set_enabled(true);
  const Tensor x64 = random_tensor({4, 1, 12, 12}, 80), w64 = random_tensor({6, 1, 5, 5}, 81);
  Tensor w = cast(w64, DType::F32).requires_grad_(), b = random_tensor({6}, 82, DType::F32).requires_grad_();
  int64_t before = dc::calls();
  Tensor y = conv2d(cast(x64, DType::F32), w, b);
  CHECK(dc::calls() - before == 1);
  const Tensor gy = random_tensor(y.shape(), 83);
  before = dc::calls();
  y.backward(cast(gy, DType::F32));
  CHECK(dc::calls() - before == 0);
  CHECK(max_diff(w.grad(), ref_conv2d_weight_grad(x64, gy, w.shape(), ConvSpec{})) < 1e-4);
  CHECK(max_diff(b.grad(), sum(gy, {0, 2, 3})) < 1e-4);
}

TEST_CASE("conv2d errors name the op and the shapes", "[conv][errors]") {
  Tensor x = zeros({2, 3, 8, 8}), w = zeros({6, 3, 3, 3});
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(conv2d(zeros({3, 8}), w), Contains("conv2d") && Contains("[3, 8]"));
  CHECK_THROWS_WITH(conv2d(x, zeros({6, 3, 3})), Contains("conv2d") && Contains("4-D weight"));
  CHECK_THROWS_WITH(conv2d(zeros({2, 4, 8, 8}), w),
                    Contains("conv2d") && Contains("[6, 3, 3, 3]") && Contains("[2, 4, 8, 8]") && Contains("3 channels"));
  CHECK_THROWS_WITH(conv2d(x, zeros({5, 1, 3, 3}), Tensor(), {1, 1}, {0, 0}, {1, 1}, 3),
                    Contains("conv2d") && Contains("divisible by 3"));
  CHECK_THROWS_WITH(conv2d(x, w, zeros({5})), Contains("conv2d") && Contains("bias") && Contains("6 elements"));
  CHECK_THROWS_WITH(conv2d(x, zeros({6, 3, 9, 9})), Contains("conv2d") && Contains("Kernel size can't be greater"));
  CHECK_THROWS_WITH(conv2d(x, w, Tensor(), {0, 1}), Contains("conv2d") && Contains("stride"));
  CHECK_THROWS_WITH(conv2d(x, w, Tensor(), {1, 1}, {-1, 0}), Contains("conv2d") && Contains("negative padding"));
  CHECK_THROWS_WITH(conv2d(x, w, Tensor(), {1, 1}, {0, 0}, {0, 1}), Contains("conv2d") && Contains("dilation"));
  CHECK_THROWS_WITH(conv2d(x, zeros({6, 3, 3, 3}, DType::F64)), Contains("conv2d") && Contains("f32") && Contains("f64"));
  CHECK_THROWS_WITH(conv2d(x, w, Tensor(), {2, 2}, ConvPadding::Same), Contains("conv2d") && Contains("strided"));
  CHECK_THROWS_WITH(conv_transpose2d(x, zeros({4, 2, 3, 3})), Contains("conv_transpose2d") && Contains("4 channels"));
  CHECK_THROWS_WITH(conv_transpose2d(zeros({2, 6, 4, 4}), w, Tensor(), {1, 1}, {0, 0}, {1, 1}),
                    Contains("conv_transpose2d") && Contains("output padding"));
  CHECK_THROWS_WITH(conv2d(zeros({2, 3, 8, 8}, DType::I64), zeros({6, 3, 3, 3}, DType::I64)),
                    Contains("conv2d") && Contains("floating"));
}
