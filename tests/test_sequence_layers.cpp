// The sequence-model layers: layer_norm, group_norm, rms_norm, embedding, conv1d and
// scaled_dot_product_attention against plain f64 loops written here; their autocast rows as
// PyTorch's; low precision against f64 within dtype-derived bounds; the modules (LayerNorm,
// GroupNorm, RMSNorm, Embedding, Conv1d, MultiheadAttention, TransformerEncoderLayer) with
// PyTorch's parameter names and wiring; errors. Gradient checks are in the op table
// (tests/test_gradcheck.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "gradcheck.h"
#include "random_values.h"

using namespace minidl;
using minidl::testing::max_abs_diff;
using minidl::testing::random_tensor;
using Catch::Matchers::Contains;

namespace {

Tensor rnd(const Shape& s, uint64_t seed, DType dt = DType::F64) { return cast(random_tensor(s, seed), dt); }

// Rows of `d` values: (x - mean) / sqrt(var + eps) per row, then * w[j] + b[j].
std::vector<double> ref_row_norm(const std::vector<double>& x, int64_t d, double eps, const std::vector<double>& w,
                                 const std::vector<double>& b, bool rms) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / d; ++r) {
    double mean = 0, sq = 0;
    for (int64_t j = 0; j < d; ++j) mean += x[r * d + j] / d;
    if (rms) mean = 0;
    for (int64_t j = 0; j < d; ++j) sq += (x[r * d + j] - mean) * (x[r * d + j] - mean) / d;
    for (int64_t j = 0; j < d; ++j) {
      double v = (x[r * d + j] - mean) / std::sqrt(sq + eps);
      y[r * d + j] = v * (w.empty() ? 1.0 : w[j]) + (b.empty() ? 0.0 : b[j]);
    }
  }
  return y;
}

double max_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// softmax(q k^T * scale + mask) v over one [L, E] x [S, E] x [S, Ev] problem; allowed(i, j) false = masked.
std::vector<double> ref_attention(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                                  int64_t L, int64_t S, int64_t E, int64_t Ev, double scale,
                                  const std::function<bool(int64_t, int64_t)>& allowed) {
  std::vector<double> out(L * Ev, 0.0);
  for (int64_t i = 0; i < L; ++i) {
    std::vector<double> s(S);
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < S; ++j) {
      double dot = 0;
      for (int64_t e = 0; e < E; ++e) dot += q[i * E + e] * k[j * E + e];
      s[j] = allowed(i, j) ? dot * scale : -std::numeric_limits<double>::infinity();
      mx = std::max(mx, s[j]);
    }
    double z = 0;
    for (double& x : s) z += (x = std::exp(x - mx));
    for (int64_t j = 0; j < S; ++j)
      for (int64_t e = 0; e < Ev; ++e) out[i * Ev + e] += s[j] / z * v[j * Ev + e];
  }
  return out;
}

}  // namespace

TEST_CASE("layer_norm, group_norm and rms_norm match plain f64 loops", "[sequence][norm]") {
  Tensor x = rnd({3, 2, 5}, 1), w = rnd({5}, 2), b = rnd({5}, 3);
  const std::vector<double> xv = x.to_vector<double>();
  CHECK(max_diff(layer_norm(x, {5}, w, b, 1e-5).to_vector<double>(),
                 ref_row_norm(xv, 5, 1e-5, w.to_vector<double>(), b.to_vector<double>(), false)) < 1e-12);
  // Over the last two dims: rows of 10.
  CHECK(max_diff(layer_norm(x, {2, 5}, Tensor(), Tensor(), 0.1).to_vector<double>(), ref_row_norm(xv, 10, 0.1, {}, {}, false)) < 1e-12);
  CHECK(max_diff(rms_norm(x, {5}, w, 1e-3).to_vector<double>(), ref_row_norm(xv, 5, 1e-3, w.to_vector<double>(), {}, true)) < 1e-12);
  // rms_norm's default eps is the machine epsilon (f64's for f64 input).
  CHECK(max_diff(rms_norm(x, {5}).to_vector<double>(), ref_row_norm(xv, 5, traits(DType::F64).eps, {}, {}, true)) < 1e-12);

  // group_norm [N=2, C=4, 3] in 2 groups: each (n, group) is a contiguous row of 6; then per-channel affine.
  Tensor g = rnd({2, 4, 3}, 4), gw = rnd({4}, 5), gb = rnd({4}, 6);
  std::vector<double> ref = ref_row_norm(g.to_vector<double>(), 6, 1e-5, {}, {}, false);
  const std::vector<double> gwv = gw.to_vector<double>(), gbv = gb.to_vector<double>();
  for (size_t i = 0; i < ref.size(); ++i) {
    const size_t c = (i / 3) % 4;
    ref[i] = ref[i] * gwv[c] + gbv[c];
  }
  CHECK(max_diff(group_norm(g, 2, gw, gb).to_vector<double>(), ref) < 1e-12);
}

TEST_CASE("norms in f16/bf16 compute their statistics in f32 and round once", "[sequence][norm][amp]") {
  for (DType dt : {DType::F16, DType::BF16}) {
    INFO(dtype_name(dt));
    Tensor x = rnd({4, 16}, 7, dt), w = rnd({16}, 8, dt), b = rnd({16}, 9, dt);
    // The reference sees the same (rounded) values in f64; the low-precision result is the f32
    // computation rounded once: within half an ulp of values |y| <= max|y| plus f32 noise.
    Tensor ref = layer_norm(cast(x, DType::F64), {16}, cast(w, DType::F64), cast(b, DType::F64));
    Tensor y = layer_norm(x, {16}, w, b);
    CHECK(y.dtype() == dt);
    const double bound = traits(dt).eps * max_abs_diff(ref, zeros_like(ref));
    CHECK(max_abs_diff(y, ref) <= bound);
    Tensor gref = group_norm(cast(x, DType::F64).reshape({4, 4, 4}), 2);
    CHECK(max_abs_diff(group_norm(x.reshape({4, 4, 4}), 2), gref) <= traits(dt).eps * max_abs_diff(gref, zeros_like(gref)));
    // rms_norm multiplies its weight after the cast back, with promotion: an f32 weight gives f32.
    CHECK(rms_norm(x, {16}).dtype() == dt);
    CHECK(rms_norm(x, {16}, cast(w, DType::F32)).dtype() == DType::F32);
  }
}

// F.group_norm's _verify_batch_size: an error exactly when [N * C / G, *spatial] multiplies to 1.
TEST_CASE("group_norm refuses one value per group as PyTorch does", "[sequence][norm][errors]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(group_norm(ones({1, 4, 1}), 4), Contains("group_norm") && Contains("more than 1 value per channel") &&
                                                         Contains("[1, 4, 1]"));
  CHECK_THROWS_WITH(group_norm(ones({1, 4}), 4), Contains("group_norm") && Contains("[1, 4]"));
  CHECK_THROWS_WITH(nn::GroupNorm(3, 3)(ones({1, 3, 1, 1})), Contains("group_norm") && Contains("[1, 3, 1, 1]"));
  // Two samples, or two channels per group, or a spatial size of 2: PyTorch runs them (zeros where a
  // group holds one value).
  const Tensor one_each = group_norm(ones({2, 4, 1}), 4);
  CHECK(max_abs_diff(one_each, zeros_like(one_each)) == 0.0);
  CHECK(group_norm(ones({1, 4, 1}), 2).shape() == Shape{1, 4, 1});
  CHECK(group_norm(ones({1, 4, 2}), 4).shape() == Shape{1, 4, 2});
  CHECK(group_norm(ones({0, 4, 1}), 4).numel() == 0);
}

TEST_CASE("norm autocast rows are PyTorch's: FP32 on CUDA, None on CPU", "[sequence][norm][amp]") {
  for (const char* op : {"layer_norm", "group_norm"}) {
    CHECK(amp::policy_for(op, DeviceType::CUDA) == amp::CastPolicy::FP32);
    CHECK(amp::policy_for(op, DeviceType::CPU) == amp::CastPolicy::None);
  }
  CHECK(amp::policy_for("conv1d", DeviceType::CPU) == amp::CastPolicy::LowerPrecision);
  CHECK(amp::policy_for("scaled_dot_product_attention", DeviceType::CPU) == amp::CastPolicy::LowerPrecision);
  CHECK(amp::policy_for("scaled_dot_product_attention", DeviceType::CUDA) == amp::CastPolicy::LowerPrecision);
  // Under CPU autocast the op runs in what it receives: f32 stays f32, bf16 with f32 parameters
  // computes in f32 and returns bf16; the parameters get f32 gradients.
  Tensor w = ones({6}).requires_grad_(), b = zeros({6}).requires_grad_();
  amp::autocast scope(DeviceType::CPU);
  CHECK(layer_norm(rnd({2, 6}, 10, DType::F32), {6}, w, b).dtype() == DType::F32);
  Tensor y = layer_norm(rnd({2, 6}, 10, DType::BF16), {6}, w, b);
  CHECK(y.dtype() == DType::BF16);
  sum(cast(y, DType::F32)).backward();
  CHECK(w.grad().dtype() == DType::F32);
  CHECK(b.grad().dtype() == DType::F32);
}

TEST_CASE("embedding gathers rows; repeated indices accumulate; the padding row gets no gradient", "[sequence][embedding]") {
  Tensor w = rnd({5, 3}, 11).requires_grad_();
  Tensor idx = from_vector<int64_t>({4, 2, 4, 0}, {2, 2});
  Tensor y = embedding(idx, w, 2);
  REQUIRE(y.shape() == Shape{2, 2, 3});
  const std::vector<double> wv = w.to_vector<double>(), yv = y.to_vector<double>();
  const int64_t rows[] = {4, 2, 4, 0};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) CHECK(yv[i * 3 + j] == wv[rows[i] * 3 + j]);  // the padding row's value too
  sum(y).backward();
  const std::vector<double> g = w.grad().to_vector<double>();
  const double expected[] = {1, 0, 0, 0, 2};  // row 2 is padding: no gradient; row 4 twice
  for (int r = 0; r < 5; ++r)
    for (int j = 0; j < 3; ++j) CHECK(g[r * 3 + j] == expected[r]);
  // A negative padding_idx counts from the end; i32 indices work.
  Tensor w2 = rnd({5, 3}, 12).requires_grad_();
  sum(embedding(from_vector<int32_t>({4, 1}), w2, -1)).backward();
  CHECK(w2.grad().select(0, 4).to_vector<double>() == std::vector<double>{0, 0, 0});
  CHECK(w2.grad().select(0, 1).to_vector<double>() == std::vector<double>{1, 1, 1});
  CHECK_THROWS_WITH(embedding(from_vector<int64_t>({5}), w), Contains("embedding") && Contains("index 5"));
  CHECK_THROWS_WITH(embedding(from_vector<int64_t>({-1}), w), Contains("embedding") && Contains("-1"));
  CHECK_THROWS_WITH(embedding(from_vector<double>({1.0}), w), Contains("embedding") && Contains("i64 or i32"));
  CHECK_THROWS_WITH(embedding(idx, w, 7), Contains("padding_idx 7"));
}

TEST_CASE("conv1d matches a direct f64 convolution (stride, padding, dilation, groups, unbatched)", "[sequence][conv]") {
  struct Spec { int64_t stride, pad, dil, groups; };
  for (Spec s : {Spec{1, 0, 1, 1}, Spec{2, 1, 1, 1}, Spec{1, 2, 2, 2}, Spec{3, 0, 1, 4}}) {
    INFO("stride " << s.stride << " pad " << s.pad << " dilation " << s.dil << " groups " << s.groups);
    const int64_t N = 2, C = 4, Lin = 9, O = 4, K = 3, Cg = C / s.groups, Og = O / s.groups;
    Tensor x = rnd({N, C, Lin}, 20), w = rnd({O, Cg, K}, 21), b = rnd({O}, 22);
    Tensor y = conv1d(x, w, b, s.stride, s.pad, s.dil, s.groups);
    const int64_t OL = (Lin + 2 * s.pad - s.dil * (K - 1) - 1) / s.stride + 1;
    REQUIRE(y.shape() == Shape{N, O, OL});
    const std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>(), bv = b.to_vector<double>();
    std::vector<double> ref(N * O * OL);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < O; ++o)
        for (int64_t t = 0; t < OL; ++t) {
          double acc = bv[o];
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t k = 0; k < K; ++k) {
              const int64_t at = t * s.stride - s.pad + k * s.dil;
              if (at >= 0 && at < Lin) acc += wv[(o * Cg + c) * K + k] * xv[(n * C + (o / Og) * Cg + c) * Lin + at];
            }
          ref[(n * O + o) * OL + t] = acc;
        }
    CHECK(max_diff(y.to_vector<double>(), ref) < 1e-12);
    // Unbatched [C, L] gives the first sample's rows.
    CHECK(max_abs_diff(conv1d(x.select(0, 0), w, b, s.stride, s.pad, s.dil, s.groups), y.select(0, 0)) == 0.0);
  }
  CHECK_THROWS_WITH(conv1d(rnd({2, 4, 4, 4}, 1), rnd({4, 4, 3}, 2)), Contains("conv1d") && Contains("[2, 4, 4, 4]"));
  CHECK_THROWS_WITH(conv1d(rnd({2, 4, 9}, 1), rnd({4, 4, 3, 3}, 2)), Contains("conv1d") && Contains("3-D weight"));
  CHECK_THROWS_WITH(conv1d(rnd({1, 4, 3}, 1, DType::I64), rnd({4, 4, 3}, 2)),
                    Contains("conv1d") && Contains("floating") && Contains("i64[1, 4, 3]"));
  // padding='same': PyTorch 1.13's values (the extra column of an odd total padding at the end).
  const Tensor line = arange(0, 7, 1, DType::F64).reshape({1, 1, 7}), taps = from_vector<double>({1, 2, 3, 4}, {1, 1, 4});
  CHECK(conv1d(line, taps, Tensor(), 1, ConvPadding::Same).to_vector<double>() ==
        std::vector<double>{11, 20, 30, 40, 50, 32, 17});
  CHECK(conv1d(line, taps, Tensor(), 1, ConvPadding::Same, 2).to_vector<double>() ==
        std::vector<double>{15, 22, 31, 40, 22, 28, 13});
  CHECK(conv1d(line, taps, Tensor(), 1, ConvPadding::Valid).shape() == Shape{1, 1, 4});
  CHECK_THROWS_WITH(conv1d(line, taps, Tensor(), 2, ConvPadding::Same),
                    Contains("conv1d") && Contains("padding='same' is not supported for strided convolutions"));
  // The layer: same length out for every kernel, dilation and groups; gradients as the padded form.
  for (auto [k, dil, groups] : {std::tuple{3, 1, 1}, std::tuple{4, 1, 2}, std::tuple{4, 3, 4}, std::tuple{5, 2, 1}}) {
    nn::Conv1d same(nn::Conv1dOptions(4, 8, k).padding_same().dilation(dil).groups(groups));
    const Tensor x = rnd({2, 4, 9}, 30, DType::F64).requires_grad_();
    same.to(DType::F64);
    const Tensor y = same.forward(x);
    CHECK(y.shape() == Shape{2, 8, 9});
    const int64_t total = dil * (k - 1);
    const Tensor xp = x.detach().requires_grad_();
    const Tensor ref = conv1d(pad(xp, {total / 2, total - total / 2}), same.weight, same.bias, 1, 0, dil, groups);
    CHECK(max_abs_diff(y, ref) < 1e-12);
    sum(mul(y, y)).backward();
    sum(mul(ref, ref)).backward();
    CHECK(max_abs_diff(x.grad(), xp.grad()) < 1e-12);
  }
  CHECK(nn::Conv1d(nn::Conv1dOptions(1, 1, 4).padding_same()).describe() == "Conv1d(1 -> 1, k4, same, bias)");
  // As PyTorch, a strided "same" layer is refused when it is built, not at its first forward; and
  // the padding set last wins ("same" then a number pads by the number).
  CHECK_THROWS_WITH(nn::Conv1d(nn::Conv1dOptions(2, 2, 3).padding_same().stride(2)),
                    Contains("Conv1d") && Contains("padding='same' is not supported for strided convolutions"));
  CHECK_THROWS_WITH(nn::Conv2d(nn::Conv2dOptions(2, 2, 3).padding_same().stride(2)),
                    Contains("Conv2d") && Contains("padding='same' is not supported for strided convolutions"));
  CHECK(nn::Conv2d(nn::Conv2dOptions(1, 1, 3).padding_same().padding(0)).forward(zeros({1, 1, 5, 5})).shape() ==
        Shape{1, 1, 3, 3});
  CHECK(nn::Conv1d(nn::Conv1dOptions(1, 1, 3).padding_same().padding(0)).forward(zeros({1, 1, 5})).shape() == Shape{1, 1, 3});
  // Under CPU autocast it runs in bf16 and the weight gets an f32 gradient.
  nn::Conv1d layer(nn::Conv1dOptions(4, 6, 3).padding(1));
  CHECK(layer.weight.shape() == Shape{6, 4, 3});
  Tensor out;
  {
    amp::autocast scope(DeviceType::CPU);
    out = layer.forward(rnd({2, 4, 9}, 3, DType::F32));
  }
  CHECK(out.dtype() == DType::BF16);
  CHECK(out.shape() == Shape{2, 6, 9});
  sum(cast(out, DType::F32)).backward();
  CHECK(layer.weight.grad().dtype() == DType::F32);
}

TEST_CASE("scaled_dot_product_attention matches a plain f64 loop, with causal, bool and float masks", "[sequence][attention]") {
  const int64_t B = 2, L = 3, S = 4, E = 5, Ev = 2;
  Tensor q = rnd({B, L, E}, 30), k = rnd({B, S, E}, 31), v = rnd({B, S, Ev}, 32);
  auto check = [&](const Tensor& y, double scale, const std::function<bool(int64_t, int64_t)>& allowed) {
    REQUIRE(y.shape() == Shape{B, L, Ev});
    for (int64_t bi = 0; bi < B; ++bi) {
      std::vector<double> ref = ref_attention(q.select(0, bi).to_vector<double>(), k.select(0, bi).to_vector<double>(),
                                              v.select(0, bi).to_vector<double>(), L, S, E, Ev, scale, allowed);
      CHECK(max_diff(y.select(0, bi).to_vector<double>(), ref) < 1e-12);
    }
  };
  const double s = 1.0 / std::sqrt(5.0);
  check(scaled_dot_product_attention(q, k, v), s, [](int64_t, int64_t) { return true; });
  check(scaled_dot_product_attention(q, k, v, AttentionOptions().with_scale(0.3)), 0.3, [](int64_t, int64_t) { return true; });
  check(scaled_dot_product_attention(q, k, v, AttentionOptions().causal(true)), s, [](int64_t i, int64_t j) { return j <= i; });
  Tensor keep = from_vector<bool>({true, false, true, true, false, true, true, true, true, true, false, false}, {L, S});
  const std::vector<double> kv = keep.to_vector<double>();
  auto kept = [&](int64_t i, int64_t j) { return kv[i * S + j] != 0; };
  check(scaled_dot_product_attention(q, k, v, AttentionOptions().mask(keep)), s, kept);
  // The same mask as floats (0 / -inf) is added to the scores.
  Tensor additive = where(keep, zeros({L, S}, DType::F64), full({L, S}, -std::numeric_limits<double>::infinity(), DType::F64));
  check(scaled_dot_product_attention(q, k, v, AttentionOptions().mask(additive)), s, kept);
  // A row with every key masked is NaN, as PyTorch's math path.
  Tensor none = zeros({L, S}, DType::Bool);
  for (double y : scaled_dot_product_attention(q, k, v, AttentionOptions().mask(none)).to_vector<double>()) CHECK(std::isnan(y));
  // dropout_p = 1 drops every weight.
  CHECK(max_abs_diff(scaled_dot_product_attention(q, k, v, AttentionOptions().dropout(1.0)), zeros({B, L, Ev}, DType::F64)) == 0);
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, k, v, AttentionOptions().mask(keep).causal(true)),
                    Contains("scaled_dot_product_attention") && Contains("cannot both"));
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, rnd({B, S, 3}, 1), v), Contains("embedding size"));
  CHECK_THROWS_WITH(scaled_dot_product_attention(q, k, rnd({B, 3, Ev}, 1)), Contains("sequence length"));
}

TEST_CASE("scaled_dot_product_attention under CPU autocast runs in bf16 and stays close to f32", "[sequence][attention][amp]") {
  Tensor q = rnd({2, 4, 6, 8}, 40, DType::F32), k = rnd({2, 4, 6, 8}, 41, DType::F32), v = rnd({2, 4, 6, 8}, 42, DType::F32);
  Tensor ref = scaled_dot_product_attention(cast(q, DType::F64), cast(k, DType::F64), cast(v, DType::F64),
                                            AttentionOptions().causal(true));
  Tensor y;
  {
    amp::autocast scope(DeviceType::CPU);
    y = scaled_dot_product_attention(q, k, v, AttentionOptions().causal(true));
  }
  CHECK(y.dtype() == DType::BF16);
  // Inputs rounded to bf16, the scores, the weights and the output each rounded once more: a few
  // ulps of bf16 relative to the largest output (|v| < 1 bounds every output by 1).
  CHECK(max_abs_diff(y, ref) <= 8 * traits(DType::BF16).eps);
}

TEST_CASE("LayerNorm, GroupNorm, RMSNorm and Embedding carry PyTorch's parameter names and initial values", "[sequence][nn]") {
  nn::LayerNorm ln(nn::LayerNormOptions({4}));
  CHECK(ln.state_dict().keys() == std::vector<std::string>{"weight", "bias"});
  CHECK(ln.weight.to_vector<double>() == std::vector<double>(4, 1.0));
  CHECK(ln.bias.to_vector<double>() == std::vector<double>(4, 0.0));
  CHECK(nn::LayerNorm(nn::LayerNormOptions({4}).bias(false)).state_dict().keys() == std::vector<std::string>{"weight"});
  CHECK(nn::LayerNorm(nn::LayerNormOptions({4}).elementwise_affine(false)).state_dict().keys().empty());
  nn::GroupNorm gn(2, 4);
  CHECK(gn.state_dict().keys() == std::vector<std::string>{"weight", "bias"});
  CHECK(gn.weight.shape() == Shape{4});
  nn::RMSNorm rms(nn::RMSNormOptions({4}));
  CHECK(rms.state_dict().keys() == std::vector<std::string>{"weight"});
  nn::Embedding emb(nn::EmbeddingOptions(6, 3).padding_idx(-2));
  CHECK(emb.state_dict().keys() == std::vector<std::string>{"weight"});
  CHECK(emb.weight.select(0, 4).to_vector<double>() == std::vector<double>{0, 0, 0});
  Tensor x = rnd({2, 4}, 50, DType::F32);
  CHECK(max_abs_diff(ln.forward(x), layer_norm(x, {4})) == 0);
  CHECK(emb.forward(from_vector<int64_t>({1, 4})).shape() == Shape{2, 3});
  CHECK_THROWS_WITH(nn::GroupNorm(3, 4), Contains("GroupNorm") && Contains("divisible"));
}

TEST_CASE("MultiheadAttention: PyTorch's names, the per-head computation, batch_first and key padding", "[sequence][nn][attention]") {
  const int64_t E = 8, H = 2, hd = 4, L = 3, N = 2;
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(E, H));
  mha.to(DType::F64);
  const auto sd = mha.state_dict();
  CHECK(sd.keys() == std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"});
  CHECK(mha.in_proj_weight.shape() == Shape{3 * E, E});
  CHECK(mha.in_proj_bias.shape() == Shape{3 * E});
  // PyTorch zeroes both biases at initialisation; give them values so the test sees them.
  {
    NoGradGuard ng;
    mha.in_proj_bias.copy_(rnd({3 * E}, 60));
    mha.out_proj->bias.copy_(rnd({E}, 61));
  }
  Tensor x = rnd({L, N, E}, 62);  // [L, N, E]: sequence first (batch_first = false)
  Tensor y = mha.forward(x, x, x);
  REQUIRE(y.shape() == Shape{L, N, E});
  // Reference: project, split heads, attend per head with the f64 loop, concatenate, project.
  const Tensor Wi = mha.in_proj_weight.detach(), bi = mha.in_proj_bias.detach();
  for (int64_t n = 0; n < N; ++n) {
    Tensor xn = x.select(1, n);  // [L, E]
    Tensor proj = linear(xn, Wi, bi);  // [L, 3E]
    std::vector<double> concat(L * E);
    for (int64_t h = 0; h < H; ++h) {
      auto part = [&](int64_t which) { return proj.narrow(1, which * E + h * hd, hd).contiguous().to_vector<double>(); };
      std::vector<double> o = ref_attention(part(0), part(1), part(2), L, L, hd, hd, 1.0 / std::sqrt(4.0),
                                            [](int64_t, int64_t) { return true; });
      for (int64_t i = 0; i < L; ++i)
        for (int64_t e = 0; e < hd; ++e) concat[i * E + h * hd + e] = o[i * hd + e];
    }
    Tensor ref = linear(from_vector(concat, {L, E}), mha.out_proj->weight.detach(), mha.out_proj->bias.detach());
    CHECK(max_abs_diff(y.select(1, n), ref) < 1e-12);
  }
  // batch_first takes [N, L, E] and gives the same numbers; the weights load by name.
  nn::MultiheadAttention bf(nn::MultiheadAttentionOptions(E, H).batch_first(true));
  bf.to(DType::F64);
  bf.load_state_dict(sd);
  CHECK(max_abs_diff(bf.forward(x.transpose(0, 1), x.transpose(0, 1), x.transpose(0, 1)), y.transpose(0, 1)) < 1e-12);
  // A padded key (true = ignore) has no effect: the same as attending without it.
  Tensor kv = rnd({L + 1, N, E}, 63);
  Tensor pad = from_vector<bool>({false, false, false, true, false, false, false, true}, {N, L + 1});
  nn::AttentionMasks masks;
  masks.key_padding_mask = pad;
  Tensor padded = mha.forward(x, kv, kv, masks);
  Tensor cut = kv.narrow(0, 0, L);
  CHECK(max_abs_diff(padded, mha.forward(x, cut, cut)) < 1e-12);
  // A bool attn_mask blocks where true; is_causal is the lower triangle.
  nn::AttentionMasks causal;
  causal.is_causal = true;
  nn::AttentionMasks explicit_mask;
  explicit_mask.attn_mask = from_vector<bool>({false, true, true, false, false, true, false, false, false}, {L, L});
  CHECK(max_abs_diff(mha.forward(x, x, x, causal), mha.forward(x, x, x, explicit_mask)) < 1e-12);
  CHECK_THROWS_WITH(nn::MultiheadAttention(nn::MultiheadAttentionOptions(6, 4)), Contains("divisible"));
  // As PyTorch: a key_padding_mask of another rank is refused ("expected key_padding_mask to be None
  // or 2-D"), and a float attn_mask of another dtype is converted to the module's (1.13 returns f32
  // for an f64 mask on an f32 module; here an f32 mask on the f64 module).
  nn::AttentionMasks pad3;
  pad3.key_padding_mask = pad.reshape({N, 1, L + 1});
  CHECK_THROWS_WITH(mha.forward(x, kv, kv, pad3), Contains("key_padding_mask must be [2, 4]") && Contains("[2, 1, 4]"));
  nn::AttentionMasks narrow_mask, wide_mask;
  narrow_mask.attn_mask = rnd({L, L}, 64, DType::F32);
  wide_mask.attn_mask = narrow_mask.attn_mask.to(DType::F64);
  Tensor with_narrow = mha.forward(x, x, x, narrow_mask);
  CHECK(with_narrow.dtype() == DType::F64);
  CHECK(max_abs_diff(with_narrow, mha.forward(x, x, x, wide_mask)) < 1e-12);
  // scaled_dot_product_attention itself wants the query's dtype (PyTorch 2.x's check).
  AttentionOptions sdpa_mask;
  sdpa_mask.attn_mask = narrow_mask.attn_mask;
  Tensor q4 = rnd({1, 1, L, hd}, 65);
  CHECK_THROWS_WITH(scaled_dot_product_attention(q4, q4, q4, sdpa_mask),
                    Contains("scaled_dot_product_attention") && Contains("attn_mask must have the query's dtype f64"));
}

TEST_CASE("MultiheadAttention: mask types as PyTorch 1.13 (uint8 attn_mask read as bool, integer masks refused)", "[sequence][nn][attention]") {
  const int64_t E = 4, H = 2, L = 3, S = 4, N = 2;
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(E, H));
  mha.to(DType::F64);
  Tensor q = rnd({L, N, E}, 70), kv = rnd({S, N, E}, 71);
  const std::vector<bool> blocked{false, true, false, false, false, false, false, true, false, false, false, false};
  const Tensor bool_mask = from_vector<bool>(blocked, {L, S});
  const Tensor byte_mask = cast(bool_mask, DType::U8);
  const Tensor padding = from_vector<bool>({false, false, true, false, false, false, false, false}, {N, S});
  std::vector<std::string> warnings;
  WarningHandler previous = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  // uint8 attn_mask: deprecated in 1.13, converted to bool (1 = blocked), alone and beside a
  // padding mask (before, beside one, its ones were added to the scores).
  for (bool with_padding : {false, true}) {
    nn::AttentionMasks as_bool, as_byte;
    as_bool.attn_mask = bool_mask;
    as_byte.attn_mask = byte_mask;
    if (with_padding) as_bool.key_padding_mask = as_byte.key_padding_mask = padding;
    CHECK(max_abs_diff(mha.forward(q, kv, kv, as_byte), mha.forward(q, kv, kv, as_bool)) == 0.0);
  }
  set_warning_handler(previous);
  // Warned once per process (no other test of this program passes a byte mask).
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Contains("Byte tensor for attn_mask is deprecated"));
  // An integer attn_mask, or an integer key_padding_mask (a slip like (tokens == pad) cast to long),
  // is refused whether or not the other mask is given (PyTorch 1.13's AssertionErrors).
  for (DType t : {DType::I32, DType::I64}) {
    for (bool with_other : {false, true}) {
      nn::AttentionMasks bad_attn;
      bad_attn.attn_mask = cast(bool_mask, t);
      if (with_other) bad_attn.key_padding_mask = padding;
      CHECK_THROWS_WITH(mha.forward(q, kv, kv, bad_attn),
                        Contains("MultiheadAttention: only float, byte, and bool types are supported for attn_mask"));
    }
  }
  for (DType t : {DType::U8, DType::I32, DType::I64}) {
    for (bool with_other : {false, true}) {
      nn::AttentionMasks bad_pad;
      bad_pad.key_padding_mask = cast(padding, t);
      if (with_other) bad_pad.attn_mask = zeros({L, S}, TensorOptions(DType::F64));
      CHECK_THROWS_WITH(mha.forward(q, kv, kv, bad_pad),
                        Contains("MultiheadAttention: only bool and floating types of key_padding_mask are supported"));
    }
  }
}

TEST_CASE("TransformerEncoderLayer: PyTorch's submodule names, post- and pre-norm wiring, autocast", "[sequence][nn][attention]") {
  auto opts = nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0).batch_first(true);
  nn::TransformerEncoderLayer layer(opts);
  CHECK(layer.state_dict().keys() ==
        std::vector<std::string>{"self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                                 "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight",
                                 "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"});
  Tensor x = rnd({2, 5, 8}, 70, DType::F32);
  auto ff = [&](const Tensor& t) { return layer.linear2->forward(relu(layer.linear1->forward(t))); };
  auto sa = [&](const Tensor& t) { return layer.self_attn->forward(t, t, t); };
  Tensor post = layer.forward(x);
  Tensor h = layer.norm1->forward(add(x, sa(x)));
  CHECK(max_abs_diff(post, layer.norm2->forward(add(h, ff(h)))) == 0);
  nn::TransformerEncoderLayer pre(opts.norm_first(true).activation(nn::Activation::GELU));
  pre.load_state_dict(layer.state_dict());
  auto ffg = [&](const Tensor& t) { return pre.linear2->forward(gelu(pre.linear1->forward(t))); };
  Tensor h2 = add(x, sa(pre.norm1->forward(x)));
  CHECK(max_abs_diff(pre.forward(x), add(h2, ffg(pre.norm2->forward(h2)))) == 0);
  // Under bf16 autocast the attention and the linears run in bf16; the residual sum with the f32
  // input promotes to f32, so the layer norms (None on CPU) and the output are f32, as PyTorch's.
  // Every parameter gets an f32 gradient.
  Tensor y;
  {
    amp::autocast scope(DeviceType::CPU);
    CHECK(sa(x).dtype() == DType::BF16);
    y = layer.forward(x);
  }
  CHECK(y.dtype() == DType::F32);
  sum(cast(y, DType::F32)).backward();
  for (const auto& [name, p] : layer.named_parameters()) {
    INFO(name);
    REQUIRE(p.grad().defined());
    CHECK(p.grad().dtype() == DType::F32);
  }
}
