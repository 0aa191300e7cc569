// dropout1d, alpha_dropout and feature_alpha_dropout (ops/dropout_variants.cpp) and their layers:
// the mask's structure (per channel or per element), PyTorch's affine constants for the alpha
// dropouts (each output is one of the two values torch's _dropout_impl gives), the statistics they
// exist for (SELU's zero mean and unit variance kept), gradients (f64 checks with a fixed mask),
// reproducibility from the generator, eval mode and the errors.
#include <catch2/catch.hpp>

#include <cmath>

#include "gradcheck.h"
#include "minidl.h"

using namespace minidl;
using Catch::Contains;

namespace {
constexpr double kAlphaPrime = 1.7580993408473766;  // SELU's scale * alpha, as in torch's _dropout_impl

double a_of(double p) { return 1.0 / std::sqrt((kAlphaPrime * kAlphaPrime * p + 1.0) * (1.0 - p)); }

// Splits an alpha-dropout output into kept and dropped elements: kept ones are a x + alpha' a p,
// dropped ones -alpha' a + alpha' a p. Fails when an element is neither.
std::vector<bool> kept_elements(const Tensor& x, const Tensor& y, double p) {
  const std::vector<double> xs = x.to_vector<double>(), ys = y.to_vector<double>();
  const double a = a_of(p), shift = kAlphaPrime * a * p, dropped = -kAlphaPrime * a + shift;
  std::vector<bool> kept(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const bool is_kept = std::fabs(ys[i] - (a * xs[i] + shift)) < 1e-6;
    const bool is_dropped = std::fabs(ys[i] - dropped) < 1e-6;
    // (An input at -alpha' gives the same value either way: counted as kept.)
    if (!is_kept && !is_dropped) FAIL("element " << i << ": " << ys[i] << " from " << xs[i] << " is neither kept nor dropped");
    kept[i] = is_kept;
  }
  return kept;
}
}  // namespace

TEST_CASE("dropout1d drops whole channels of [N, C, L] and [C, L]", "[dropout]") {
  Generator gen(5);
  Tensor x = add(rand({400, 10, 6}, {}, &gen), 0.5);
  Tensor y = dropout1d(x, 0.3, true, &gen);
  const std::vector<double> xs = x.to_vector<double>(), ys = y.to_vector<double>();
  int64_t kept = 0;
  for (int64_t ch = 0; ch < 400 * 10; ++ch) {
    const bool first_kept = ys[ch * 6] != 0.0;
    kept += first_kept;
    for (int64_t l = 0; l < 6; ++l) {
      const size_t i = static_cast<size_t>(ch * 6 + l);
      // The kept channels' mask holds 1/(1-p) in f32, multiplied in f32.
      CHECK(ys[i] == (first_kept ? static_cast<double>(static_cast<float>(xs[i]) * static_cast<float>(1.0 / 0.7)) : 0.0));
    }
  }
  CHECK(std::fabs(static_cast<double>(kept) / 4000.0 - 0.7) < 0.04);  // 5.5 standard deviations
  Tensor unbatched = dropout1d(ones({10, 6}), 0.5, true, &gen);
  CHECK(unbatched.shape() == Shape{10, 6});
  CHECK(dropout1d(x, 0.3, false).is_same(x));
  CHECK(max(abs(dropout1d(x, 1.0, true))).item() == 0.0);
  CHECK_THROWS_WITH(dropout1d(ones({2, 3, 4, 5}), 0.5), Contains("dropout1d") && Contains("Expected 2D or 3D input, but received a 4D input"));
  CHECK_THROWS_WITH(dropout1d(x, 1.5), Contains("dropout probability has to be between 0 and 1, but got 1.5"));
}

TEST_CASE("alpha_dropout gives torch's two values and keeps zero mean and unit variance", "[dropout]") {
  Generator gen(9);
  const double p = 0.2;
  Tensor x = randn({200000}, DType::F64, &gen);
  Tensor y = alpha_dropout(x, p, true, &gen);
  const std::vector<bool> kept = kept_elements(x, y, p);
  int64_t n_kept = 0;
  for (bool k : kept) n_kept += k;
  CHECK(std::fabs(static_cast<double>(n_kept) / 200000.0 - 0.8) < 0.005);
  // What alpha dropout is for: a standard normal input (as SELU keeps it) stays standard.
  CHECK(std::fabs(mean(y).item()) < 0.01);
  CHECK(std::fabs(minidl::std(y).item() - 1.0) < 0.01);
  // The same generator state gives the same mask.
  Generator g1(3), g2(3);
  CHECK(testing::max_abs_diff(alpha_dropout(x, p, true, &g1), alpha_dropout(x, p, true, &g2)) == 0.0);
  CHECK(alpha_dropout(x, p, false).is_same(x));
  CHECK(alpha_dropout(x, 0.0, true).is_same(x));
  CHECK(max(abs(alpha_dropout(x, 1.0, true))).item() == 0.0);  // PyTorch: zeros, not the saturation
  CHECK_THROWS_WITH(alpha_dropout(x, -0.1, true), Contains("alpha_dropout") && Contains("between 0 and 1"));
  CHECK_THROWS_WITH(alpha_dropout(zeros({3}, DType::I64), 0.5, true), Contains("alpha_dropout"));
}

TEST_CASE("feature_alpha_dropout drops whole channels to the saturation value", "[dropout]") {
  Generator gen(11);
  const double p = 0.4;
  Tensor x = randn({50, 8, 3, 3}, DType::F64, &gen);
  Tensor y = feature_alpha_dropout(x, p, true, &gen);
  const std::vector<bool> kept = kept_elements(x, y, p);
  for (size_t ch = 0; ch < 50 * 8; ++ch)
    for (size_t j = 1; j < 9; ++j) CHECK(kept[ch * 9 + j] == kept[ch * 9]);
  CHECK_THROWS_WITH(feature_alpha_dropout(ones({5}), 0.5, true),
                    Contains("feature_alpha_dropout") && Contains("Feature dropout requires at least 2 dimensions"));
}

TEST_CASE("the dropout variants' gradients: f64 checks with a fixed mask, and the mask times a", "[dropout][gradcheck]") {
  for (const auto& [name, op] : std::vector<std::pair<std::string, Tensor (*)(const Tensor&, double, bool, Generator*)>>{
           {"dropout1d", dropout1d}, {"alpha_dropout", alpha_dropout}, {"feature_alpha_dropout", feature_alpha_dropout}}) {
    INFO(name);
    auto fn = [op = op](const std::vector<Tensor>& in) {
      Generator gen(17);  // the same mask on every evaluation
      return op(in[0], 0.35, true, &gen);
    };
    Tensor x = randn({4, 5, 6}, DType::F64).requires_grad_();
    CHECK(testing::check_gradients(fn, {x}, 1e-6, 1e-7) == "");
    CHECK(testing::check_second_order(fn, {x}, 1e-6, 1e-6) == "");
  }
  // alpha_dropout's gradient is a where kept and 0 where dropped.
  Generator gen(21);
  Tensor x = randn({1000}, DType::F64).requires_grad_();
  Tensor y = alpha_dropout(x, 0.3, true, &gen);
  sum(y).backward();
  const std::vector<bool> kept = kept_elements(x.detach(), y.detach(), 0.3);
  const std::vector<double> g = x.grad().to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == Approx(kept[i] ? a_of(0.3) : 0.0).margin(1e-15));
}

TEST_CASE("the dropout layers: their op in training, the identity in eval, names and replicas", "[dropout][nn]") {
  Generator g1(4), g2(4);
  nn::AlphaDropout layer(nn::DropoutOptions(0.25), &g1);
  Tensor x = randn({6, 4, 5});
  CHECK(testing::max_abs_diff(layer.forward(x), alpha_dropout(x, 0.25, true, &g2)) == 0.0);
  layer.eval();
  CHECK(layer.forward(x).is_same(x));
  CHECK(layer.describe() == "AlphaDropout(p=0.25)");
  CHECK(nn::Dropout1d(0.1).describe() == "Dropout1d(p=0.1)");
  CHECK(nn::FeatureAlphaDropout().type_name() == "FeatureAlphaDropout");
  CHECK(nn::Dropout(0.3).describe() == "Dropout(p=0.3)");
  CHECK(std::dynamic_pointer_cast<nn::Dropout1d>(nn::Dropout1d(0.2).clone_structure()) != nullptr);
  CHECK_THROWS_WITH(nn::FeatureAlphaDropout(1.5), Contains("FeatureAlphaDropout") && Contains("between 0 and 1"));
}
