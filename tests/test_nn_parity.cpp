// nn against torch.nn on cases a PyTorch user would check: loss modules with weights,
// ignore_index and pos_weight, mean over an empty batch, activation defaults, Dropout at p = 0 and
// p = 1, BatchNorm running statistics (unbiased variance, momentum None), default init bounds of
// Conv2d with groups, and clip_grad_norm_'s coefficient; ConvTranspose2d, the padding layers,
// Softplus, Hardtanh, ReLU6 and PReLU against values PyTorch 1.13 printed. Expected values come from PyTorch's
// documented formulas, written out here in double.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <numbers>

#include "framework/generator.h"
#include "gradcheck.h"
#include "minidl.h"
#include "nn/nn.h"

using namespace minidl;
using minidl::testing::max_abs_diff;

namespace {
// log_softmax of one row, in double.
std::vector<double> log_softmax_row(const std::vector<double>& x) {
  double m = -INFINITY, s = 0;
  for (double v : x) m = std::max(m, v);
  for (double v : x) s += std::exp(v - m);
  std::vector<double> out;
  for (double v : x) out.push_back(v - m - std::log(s));
  return out;
}
}  // namespace

TEST_CASE("CrossEntropyLoss with weights and an in-range ignore_index averages over kept target weights", "[nn][parity][loss]") {
  const std::vector<std::vector<double>> rows = {{0.5, -1.0, 2.0}, {1.5, 0.25, -0.5}, {-2.0, 1.0, 0.0}, {0.0, 3.0, 1.0}};
  const std::vector<int64_t> t = {2, 1, 0, 1};  // class 1 is the ignore_index: rows 1 and 3 do not count
  const std::vector<double> w = {0.5, 2.0, 4.0};
  std::vector<double> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  Tensor x = from_vector<double>(flat, {4, 3});
  Tensor target = from_vector<int64_t>(t, {4});
  std::vector<double> none(4, 0.0);
  double num = 0, den = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (t[i] == 1) continue;
    none[i] = -w[t[i]] * log_softmax_row(rows[i])[t[i]];
    num += none[i];
    den += w[t[i]];
  }
  auto opts = nn::CrossEntropyLossOptions().weight(from_vector<double>(w)).ignore_index(1);
  CHECK(nn::CrossEntropyLoss(opts).forward(x, target).item() == Approx(num / den).epsilon(1e-14));
  CHECK(nn::CrossEntropyLoss(opts.reduction(Reduction::Sum)).forward(x, target).item() == Approx(num).epsilon(1e-14));
  std::vector<double> got = nn::CrossEntropyLoss(opts.reduction(Reduction::None)).forward(x, target).to_vector<double>();
  REQUIRE(got.size() == 4);
  CHECK(got[1] == 0.0);
  CHECK(got[3] == 0.0);
  CHECK(got[0] == Approx(none[0]).epsilon(1e-14));
  CHECK(got[2] == Approx(none[2]).epsilon(1e-14));
  // Unweighted (the fused path): the mean divides by the number of kept targets, 2, not 4.
  const double plain = (-log_softmax_row(rows[0])[2] - log_softmax_row(rows[2])[0]) / 2.0;
  CHECK(nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().ignore_index(1)).forward(x, target).item() ==
        Approx(plain).epsilon(1e-14));
  // NLLLoss on the log-probabilities: the same weighted mean.
  Tensor logp = log_softmax(x, 1);
  CHECK(nn::NLLLoss(nn::NLLLossOptions().weight(from_vector<double>(w)).ignore_index(1)).forward(logp, target).item() ==
        Approx(num / den).epsilon(1e-14));
}

TEST_CASE("mean reduction over an empty batch is NaN, sum is 0, as torch", "[nn][parity][loss]") {
  Tensor logits = zeros({0, 3});
  Tensor idx = zeros({0}, DType::I64);
  CHECK(std::isnan(nn::CrossEntropyLoss().forward(logits, idx).item()));
  CHECK(nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().reduction(Reduction::Sum)).forward(logits, idx).item() == 0.0);
  CHECK(std::isnan(nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().weight(ones({3}))).forward(logits, idx).item()));
  CHECK(std::isnan(nn::CrossEntropyLoss().forward(logits, zeros({0, 3})).item()));  // class probabilities
  CHECK(std::isnan(nn::NLLLoss().forward(logits, idx).item()));
  Tensor e = zeros({0});
  CHECK(std::isnan(nn::MSELoss().forward(e, e).item()));
  CHECK(nn::MSELoss(Reduction::Sum).forward(e, e).item() == 0.0);
  CHECK(std::isnan(nn::L1Loss().forward(e, e).item()));
  CHECK(std::isnan(nn::BCEWithLogitsLoss().forward(e, e).item()));
  CHECK(std::isnan(nn::BCELoss().forward(e, e).item()));
}

TEST_CASE("BCEWithLogitsLoss broadcasts pos_weight and weight over the class dim", "[nn][parity][loss]") {
  // x = 0: softplus(-x) = log 2 and sigmoid(x) = 1/2, so loss = w_c log2 (y ? pw_c : 1) and
  // d loss / dx = w_c (l / 2 - pw_c y) with l = 1 + (pw_c - 1) y.
  Tensor x = zeros({2, 3}, DType::F64).requires_grad_();
  Tensor y = from_vector<double>({1, 0, 1, 0, 1, 1}, {2, 3});
  Tensor pw = from_vector<double>({3, 0.5, 2});
  Tensor w = from_vector<double>({2, 1, 0.25});
  nn::BCEWithLogitsLoss loss(nn::BCELossOptions().pos_weight(pw).weight(w));
  CHECK(loss.state_dict().keys() == std::vector<std::string>{"weight", "pos_weight"});
  const double l2 = std::log(2.0);
  // Terms: row 0: 2*3, 1*1, 0.25*2; row 1: 2*1, 1*0.5, 0.25*2  (times log 2).
  const std::vector<double> want = {6 * l2, 1 * l2, 0.5 * l2, 2 * l2, 0.5 * l2, 0.5 * l2};
  std::vector<double> none = nn::BCEWithLogitsLoss(nn::BCELossOptions().pos_weight(pw).weight(w).reduction(Reduction::None))
                                 .forward(x.detach(), y)
                                 .to_vector<double>();
  for (size_t i = 0; i < want.size(); ++i) CHECK(none[i] == Approx(want[i]).epsilon(1e-15));
  Tensor mean = loss(x, y);
  CHECK(mean.item() == Approx(10.5 * l2 / 6).epsilon(1e-15));
  mean.backward();
  // w (l/2 - pw y) / 6: row 0: 2(1.5-3), 1(0.5), 0.25(1-2); row 1: 2(0.5), 1(0.25-0.5), 0.25(1-2).
  const std::vector<double> g = {-3.0 / 6, 0.5 / 6, -0.25 / 6, 1.0 / 6, -0.25 / 6, -0.25 / 6};
  std::vector<double> got = x.grad().to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) CHECK(got[i] == Approx(g[i]).epsilon(1e-15));
}

TEST_CASE("cross_entropy and nll_loss with every target ignored: weighted or smoothed, a NaN mean and a zero gradient", "[nn][parity][loss]") {
  // PyTorch 1.13: x = torch.tensor([[1., 2, 3], [0.5, -1, 2]], dtype=torch.float64, requires_grad=True),
  // t = torch.tensor([-100, -100]), w = torch.tensor([0.5, 2, 1], dtype=torch.float64);
  // F.cross_entropy(x, t, weight=w) (and label_smoothing=0.1, and both), F.nll_loss(x, t, weight=w):
  // the loss is nan and x.grad is all zeros. Only the unweighted, unsmoothed (fused) path got this right.
  const Tensor t = from_vector<int64_t>({-100, -100});
  const Tensor w = from_vector<double>({0.5, 2, 1});
  CrossEntropyOptions weighted, smoothed, both;
  weighted.weight = w;
  smoothed.label_smoothing = 0.1;
  both.weight = w;
  both.label_smoothing = 0.1;
  for (const CrossEntropyOptions& o : {weighted, smoothed, both}) {
    for (bool nll : {false, true}) {
      if (nll && o.label_smoothing != 0.0) continue;
      Tensor x = from_vector<double>({1, 2, 3, 0.5, -1, 2}, {2, 3}).requires_grad_();
      Tensor loss = nll ? nll_loss(x, t, o) : cross_entropy(x, t, o);
      CHECK(std::isnan(loss.item()));
      loss.backward();
      CHECK(x.grad().to_vector<double>() == std::vector<double>(6, 0.0));
    }
  }
  // A kept target of weight 0 still gives NaN in its own row (0 * inf), as PyTorch:
  // F.cross_entropy(x, torch.tensor([0, -100]), weight=torch.tensor([0., 1, 1], dtype=torch.float64))
  // -> x.grad [[nan, nan, nan], [0, 0, 0]].
  Tensor x = from_vector<double>({1, 2, 3, 0.5, -1, 2}, {2, 3}).requires_grad_();
  CrossEntropyOptions zero_w;
  zero_w.weight = from_vector<double>({0, 1, 1});
  cross_entropy(x, from_vector<int64_t>({0, -100}), zero_w).backward();
  const std::vector<double> g = x.grad().to_vector<double>();
  for (int i = 0; i < 3; ++i) CHECK(std::isnan(g[i]));
  for (int i = 3; i < 6; ++i) CHECK(g[i] == 0.0);
}

TEST_CASE("binary_cross_entropy gradients at 0 and 1: the float 1e-12 guard and the unclamped target gradient", "[nn][parity][loss]") {
  // PyTorch 1.13: p = torch.tensor([0., 1., 1e-50, 0.25], dtype=torch.float64, requires_grad=True),
  // y = torch.tensor([1., 0., 1., 0.5], dtype=torch.float64, requires_grad=True);
  // F.binary_cross_entropy(p, y, reduction='sum').backward():
  //   p.grad = [-1000000003995.8029, 1000000003995.8029, -1000000003995.8029, -1.3333333333333333]
  //   (the guard is the float 1e-12, 9.9999999600419720e-13 in double)
  //   y.grad = [inf, -inf, 115.12925464970229, 1.0986122886681096] (log(1 - p) - log(p), not clamped)
  Tensor p = from_vector<double>({0.0, 1.0, 1e-50, 0.25}).requires_grad_();
  Tensor y = from_vector<double>({1.0, 0.0, 1.0, 0.5}).requires_grad_();
  binary_cross_entropy(p, y, Reduction::Sum).backward();
  const std::vector<double> gp = p.grad().to_vector<double>(), gy = y.grad().to_vector<double>();
  CHECK(gp[0] == -1000000003995.8029);
  CHECK(gp[1] == 1000000003995.8029);
  CHECK(gp[2] == -1000000003995.8029);
  CHECK(gp[3] == Approx(-1.3333333333333333).epsilon(1e-15));
  CHECK(gy[0] == INFINITY);
  CHECK(gy[1] == -INFINITY);
  CHECK(gy[2] == Approx(115.12925464970229).epsilon(1e-15));
  CHECK(gy[3] == Approx(1.0986122886681096).epsilon(1e-15));
  // f32: p = torch.tensor([0., 1.], requires_grad=True), y = torch.tensor([1., 0.]) -> p.grad
  // [-999999995904.0, 999999995904.0].
  Tensor p32 = from_vector<float>({0.0f, 1.0f}).requires_grad_();
  binary_cross_entropy(p32, from_vector<float>({1.0f, 0.0f}), Reduction::Sum).backward();
  CHECK(p32.grad().to_vector<float>() == std::vector<float>{-999999995904.0f, 999999995904.0f});
}

TEST_CASE("LeakyReLU defaults to slope 0.01 and GELU tanh uses the tanh formula", "[nn][parity][activation]") {
  Tensor x = from_vector<float>({-2, 3});
  CHECK(nn::LeakyReLU().forward(x).to_vector<float>() == std::vector<float>{-2 * 0.01f, 3});
  CHECK(nn::functional::leaky_relu(x).to_vector<float>() == std::vector<float>{-2 * 0.01f, 3});
  CHECK(nn::LeakyReLU().describe() == "LeakyReLU(negative_slope=0.01)");
  const std::vector<double> v = {-1.5, -0.5, 1.0, 2.0};
  Tensor xd = from_vector<double>(v);
  std::vector<double> tanh_y = nn::GELU(nn::GELUOptions().approximate("tanh")).forward(xd).to_vector<double>();
  std::vector<double> exact_y = nn::GELU().forward(xd).to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) {
    const double a = v[i];
    const double want_tanh = 0.5 * a * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (a + 0.044715 * a * a * a)));
    const double want_exact = 0.5 * a * (1 + std::erf(a / std::sqrt(2.0)));
    CHECK(tanh_y[i] == Approx(want_tanh).epsilon(1e-12));
    CHECK(exact_y[i] == Approx(want_exact).epsilon(1e-12));
  }
  CHECK(std::fabs(tanh_y[2] - exact_y[2]) > 1e-4);  // the two forms really differ at x = 1
  CHECK_THROWS_WITH(nn::GELU(nn::GELUOptions().approximate("fast")), Catch::Contains("'none' or 'tanh'"));
}

TEST_CASE("Dropout at p = 0 and p = 1, and the 1/(1-p) scale", "[nn][parity][dropout]") {
  Generator gen(3);
  Tensor x = from_vector<float>({1, -2, 3, 4, 5, -6, 7, 8}).requires_grad_();
  nn::Dropout keep_all(0.0, &gen);
  CHECK(max_abs_diff(keep_all.forward(x), x) == 0.0);
  nn::Dropout drop_all(1.0, &gen);
  Tensor y = drop_all.forward(x);
  CHECK(y.to_vector<float>() == std::vector<float>(8, 0.0f));
  sum(y).backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>(8, 0.0f));  // connected, zero gradient
  drop_all.eval();
  CHECK(max_abs_diff(drop_all.forward(x), x) == 0.0);  // eval: the identity even at p = 1
  nn::Dropout half(0.5, &gen);
  std::vector<float> h = half.forward(x.detach()).to_vector<float>();
  std::vector<float> xs = x.detach().to_vector<float>();
  for (size_t i = 0; i < h.size(); ++i) CHECK((h[i] == 0.0f || h[i] == 2 * xs[i]));
}

TEST_CASE("BatchNorm normalizes with the biased variance and tracks the unbiased one", "[nn][parity][batchnorm]") {
  nn::BatchNorm1d bn(1);
  CHECK(bn.state_dict().keys() ==
        std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"});
  Tensor x = from_vector<float>({1, 2, 3, 6}, {4, 1});
  // mean 3, biased variance 14/4 = 3.5, unbiased 14/3; eps 1e-5.
  std::vector<float> y = bn.forward(x).to_vector<float>();
  const std::vector<double> xs = {1, 2, 3, 6};
  for (size_t i = 0; i < 4; ++i) CHECK(y[i] == Approx((xs[i] - 3) / std::sqrt(3.5 + 1e-5)).epsilon(1e-6));
  CHECK(bn.running_mean.item() == Approx(0.1 * 3).epsilon(1e-6));
  CHECK(bn.running_var.item() == Approx(0.9 + 0.1 * 14.0 / 3.0).epsilon(1e-6));
  CHECK(bn.num_batches_tracked.item_int() == 1);
  bn.eval();
  std::vector<float> e = bn.forward(x).to_vector<float>();
  CHECK(e[3] == Approx((6 - 0.3) / std::sqrt(0.9 + 0.1 * 14.0 / 3.0 + 1e-5)).epsilon(1e-6));
  CHECK(bn.num_batches_tracked.item_int() == 1);  // eval does not count
}

TEST_CASE("BatchNorm with momentum None keeps the cumulative average of the batch statistics", "[nn][parity][batchnorm]") {
  nn::BatchNorm1d bn(1, 1e-5, std::nullopt);
  CHECK(bn.describe() == "BatchNorm1d(1, eps 1e-05, momentum None, affine)");
  // Batch 1: mean 3, unbiased var 14/3 (factor 1: the statistics themselves).
  bn.forward(from_vector<float>({1, 2, 3, 6}, {4, 1}));
  CHECK(bn.running_mean.item() == Approx(3.0).epsilon(1e-6));
  CHECK(bn.running_var.item() == Approx(14.0 / 3.0).epsilon(1e-6));
  // Batch 2: mean 1, unbiased var (1 + 1 + 1 + 9) / 3 = 4 (factor 1/2).
  bn.forward(from_vector<float>({0, 0, 0, 4}, {4, 1}));
  CHECK(bn.running_mean.item() == Approx(2.0).epsilon(1e-6));
  CHECK(bn.running_var.item() == Approx((14.0 / 3.0 + 4.0) / 2.0).epsilon(1e-6));
  // Batch 3: mean 5, unbiased var 0 (factor 1/3).
  bn.forward(from_vector<float>({5, 5, 5, 5}, {4, 1}));
  CHECK(bn.running_mean.item() == Approx(3.0).epsilon(1e-6));
  CHECK(bn.running_var.item() == Approx((14.0 / 3.0 + 4.0) / 3.0).epsilon(1e-6));
  CHECK(bn.num_batches_tracked.item_int() == 3);
  nn::BatchNorm2d bn2(2, 1e-5, std::nullopt);
  bn2.forward(from_vector<float>({0, 2, 4, 6, 1, 1, 1, 1}, {1, 2, 2, 2}));
  CHECK(bn2.running_mean.to_vector<float>() == std::vector<float>{3, 1});
}

TEST_CASE("Conv2d's default init bounds use fan_in = in/groups * kh * kw", "[nn][parity][init]") {
  Generator gen(21);
  // in 8, groups 4: weight [64, 2, 3, 3], fan_in 18; bound 1/sqrt(18) for the weight and the bias.
  nn::Conv2d conv(nn::Conv2dOptions(8, 64, 3).groups(4), &gen);
  REQUIRE(conv.weight.shape() == Shape{64, 2, 3, 3});
  const double bound = 1.0 / std::sqrt(18.0);
  std::vector<float> w = conv.weight.to_vector<float>();
  float lo = 1, hi = -1;
  for (float v : w) lo = std::min(lo, v), hi = std::max(hi, v);
  CHECK(hi <= bound);
  CHECK(lo >= -bound);
  CHECK(hi > 0.95 * bound);  // 1152 draws: the range is used (not the groups-1 bound 1/sqrt(72))
  CHECK(lo < -0.95 * bound);
  std::vector<float> b = conv.bias.to_vector<float>();
  float bmax = 0;
  for (float v : b) bmax = std::max(bmax, std::fabs(v));
  CHECK(bmax <= bound);
  CHECK(bmax > 0.5 * bound);
}

TEST_CASE("kaiming_normal_ fan_out with leaky_relu slope a and xavier with the tanh gain", "[nn][parity][init]") {
  Generator gen(8);
  Tensor w = empty({64, 32, 5, 5});  // fan_in 800, fan_out 1600; 51200 draws
  auto sd_of = [](const Tensor& t) {
    std::vector<double> v = t.to_vector<double>();
    double s = 0, s2 = 0;
    for (double x : v) s += x, s2 += x * x;
    const double m = s / v.size();
    return std::sqrt(s2 / v.size() - m * m);
  };
  nn::init::kaiming_normal_(w, 0.2, nn::init::FanMode::FanOut, nn::init::Nonlinearity::LeakyReLU, &gen);
  CHECK(sd_of(w) == Approx(std::sqrt(2.0 / 1.04) / std::sqrt(1600.0)).epsilon(0.02));
  nn::init::kaiming_normal_(w, 0.0, nn::init::FanMode::FanIn, nn::init::Nonlinearity::ReLU, &gen);
  CHECK(sd_of(w) == Approx(std::sqrt(2.0 / 800.0)).epsilon(0.02));
  nn::init::xavier_uniform_(w, nn::init::calculate_gain(nn::init::Nonlinearity::Tanh), &gen);
  CHECK(sd_of(w) == Approx(5.0 / 3.0 * std::sqrt(2.0 / 2400.0)).epsilon(0.02));
}

TEST_CASE("clip_grad_norm_ scales by max_norm / (total + 1e-6) even when max_norm equals the norm", "[nn][parity][clip]") {
  Tensor a = zeros({2}, DType::F64).requires_grad_();
  a.set_grad(from_vector<double>({-5, 12}));
  // total 13, coef 13 / (13 + 1e-6) < 1: PyTorch scales (it clamps only at 1).
  CHECK(nn::utils::clip_grad_norm_({a}, 13.0).item() == 13.0);
  CHECK(a.grad().to_vector<double>()[1] == 12 * (13.0 / (13.0 + 1e-6)));
  CHECK(a.grad().to_vector<double>()[1] != 12.0);
  // The infinity norm is the largest magnitude, negative entries included.
  a.set_grad(from_vector<double>({-5, 3}));
  CHECK(nn::utils::clip_grad_norm_({a}, 1.0, nn::utils::kInfNorm).item() == 5.0);
  CHECK(a.grad().to_vector<double>()[0] == -5 * (1.0 / (5.0 + 1e-6)));
  // A NaN gradient: error_if_nonfinite throws, otherwise the NaN norm is returned.
  a.set_grad(from_vector<double>({NAN, 1}));
  CHECK_THROWS_WITH(nn::utils::clip_grad_norm_({a}, 1.0, 2.0, true), Catch::Contains("non-finite"));
  CHECK(std::isnan(nn::utils::clip_grad_norm_({a}, 1.0).item()));
  // clip_grad_value_ keeps NaN (torch.clamp does).
  a.set_grad(from_vector<double>({NAN, -7}));
  nn::utils::clip_grad_value_({a}, 2.0);
  CHECK(std::isnan(a.grad().to_vector<double>()[0]));
  CHECK(a.grad().to_vector<double>()[1] == -2.0);
}

TEST_CASE("MaxPool2d and AvgPool2d modules take PyTorch's dilation, ceil_mode and count_include_pad", "[parity][nn][pool]") {
  // PyTorch 1.13, x = torch.arange(36., dtype=torch.float64).reshape(1, 1, 6, 6):
  //   nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False)(x).flatten() and nn.AvgPool2d(3, 2, 1)(x)
  //   nn.MaxPool2d(3, 2, 1, dilation=2, ceil_mode=True)(x): shape [1, 1, 3, 3].
  Tensor x = arange(0, 36, 1, DType::F64).reshape({1, 1, 6, 6});
  const std::vector<double> avg_ceil = {3.5, 5.0, 7.0, 8.0, 12.5, 14.0, 16.0, 17.0, 24.5, 26.0, 28.0, 29.0, 30.5, 32.0, 34.0, 35.0};
  const std::vector<double> avg_plain = {1.5555555555555556, 3.3333333333333335, 4.666666666666667, 8.333333333333334, 14.0,
                                         16.0, 16.333333333333332, 26.0, 28.0};
  const std::vector<double> max_dilated = {21, 23, 23, 33, 35, 35, 33, 35, 35};
  auto close = [](const Tensor& t, const std::vector<double>& want) {
    const std::vector<double> got = t.to_vector<double>();
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-15));
  };
  nn::AvgPool2d avg(3, 2, 1, /*ceil_mode=*/true, /*count_include_pad=*/false);
  close(avg.forward(x), avg_ceil);
  close(nn::AvgPool2d(3, 2, 1).forward(x), avg_plain);
  nn::MaxPool2d mp(3, 2, 1, /*dilation=*/2, /*ceil_mode=*/true);
  CHECK(mp.forward(x).shape() == Shape{1, 1, 3, 3});
  close(mp.forward(x), max_dilated);
  // The options survive clone_structure and show in describe().
  close(std::dynamic_pointer_cast<nn::AvgPool2d>(avg.clone_structure())->forward(x), avg_ceil);
  close(std::dynamic_pointer_cast<nn::MaxPool2d>(mp.clone_structure())->forward(x), max_dilated);
  CHECK(avg.describe() == "AvgPool2d(3x3, stride 2, padding 1, ceil_mode, count_include_pad false)");
  CHECK(mp.describe() == "MaxPool2d(3x3, stride 2, padding 1, dilation 2, ceil_mode)");
}

TEST_CASE("BCE weights and pos_weight must broadcast to the input's shape, not beyond it", "[nn][parity][loss]") {
  // PyTorch 1.13: nn.BCELoss(weight=torch.tensor([[1., 2], [3, 4]]))(torch.tensor([.6, .4]),
  // torch.tensor([1., 0])) raises "output with shape [2] doesn't match the broadcast shape [2, 2]";
  // so do BCEWithLogitsLoss with that weight and binary_cross_entropy_with_logits with that pos_weight.
  using Catch::Contains;
  Tensor x = from_vector(std::vector<float>{0.6f, 0.4f}), t = from_vector(std::vector<float>{1, 0});
  Tensor w22 = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  CHECK_THROWS_WITH(nn::BCELoss(nn::BCELossOptions().weight(w22))(x, t), Contains("BCELoss") && Contains("[2, 2]"));
  CHECK_THROWS_WITH(nn::BCEWithLogitsLoss(nn::BCELossOptions().weight(w22))(x, t),
                    Contains("BCEWithLogitsLoss") && Contains("[2, 2]"));
  CHECK_THROWS_WITH(nn::functional::binary_cross_entropy_with_logits(x, t, Reduction::Mean, w22),
                    Contains("binary_cross_entropy_with_logits") && Contains("pos_weight"));
  // Integer and bool targets are refused, as PyTorch's ("Found dtype Long but expected Float").
  Tensor it = from_vector(std::vector<int64_t>{1, 0});
  CHECK_THROWS_WITH(nn::functional::binary_cross_entropy(x, it), Contains("binary_cross_entropy") && Contains("i64"));
  CHECK_THROWS_WITH(nn::functional::binary_cross_entropy_with_logits(x, cast(it, DType::Bool)),
                    Contains("binary_cross_entropy_with_logits") && Contains("bool"));
  // A weight that broadcasts up to the input stays accepted: torch gives 0.5108256 * 2 / 2 +
  // 0.5108256 * 3 / 2 for weight [2, 3] here (-log(0.6) = -log(1 - 0.4) = 0.5108256).
  Tensor w2 = from_vector(std::vector<float>{2, 3});
  CHECK(nn::BCELoss(nn::BCELossOptions().weight(w2))(x, t).item() == Approx(0.5108256 * 2.5).epsilon(1e-5));
}

TEST_CASE("cross_entropy with probability targets promotes to the wider dtype", "[nn][parity][loss]") {
  // PyTorch 1.13: F.cross_entropy(f32 logits, f64 probabilities) is f64, the product promoting.
  Tensor logits = from_vector(std::vector<float>{1.0f, 2.0f, 0.5f}, {1, 3});
  Tensor probs = from_vector(std::vector<double>{0.2, 0.5, 0.3}, {1, 3});
  Tensor loss = nn::functional::cross_entropy(logits, probs);
  CHECK(loss.dtype() == DType::F64);
  // log_softmax([1, 2, 0.5]) in f32, weighted by the f64 probabilities.
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(0.5));
  CHECK(loss.item() == Approx(0.2 * (lse - 1.0) + 0.5 * (lse - 2.0) + 0.3 * (lse - 0.5)).epsilon(1e-6));
  CHECK(nn::functional::cross_entropy(logits, cast(probs, DType::F16)).dtype() == DType::F32);
}

TEST_CASE("BatchNorm trains on an empty batch as PyTorch: empty output, running statistics kept", "[nn][parity][norm]") {
  // PyTorch 1.13: nn.BatchNorm2d(2)(torch.zeros(0, 2, 2, 2)) is f32[0, 2, 2, 2]; running_mean and
  // running_var unchanged, num_batches_tracked 1, and backward gives the parameters zero gradients.
  nn::BatchNorm2d bn(2);
  bn.running_mean.fill_(0.5);
  Tensor x = zeros({0, 2, 2, 2}).requires_grad_();
  Tensor y = bn.forward(x);
  CHECK(y.shape() == Shape{0, 2, 2, 2});
  CHECK(y.dtype() == DType::F32);
  CHECK(bn.running_mean.to_vector<float>() == std::vector<float>{0.5f, 0.5f});
  CHECK(bn.running_var.to_vector<float>() == std::vector<float>{1.0f, 1.0f});
  CHECK(bn.num_batches_tracked.item_int() == 1);
  sum(y).backward();
  REQUIRE(bn.weight.grad().defined());
  CHECK(bn.weight.grad().to_vector<float>() == std::vector<float>{0, 0});
  CHECK(bn.bias.grad().to_vector<float>() == std::vector<float>{0, 0});
  CHECK(x.grad().shape() == Shape{0, 2, 2, 2});
  // The batch of one value per channel is still refused.
  CHECK_THROWS_WITH(bn.forward(zeros({1, 2, 1, 1})), Catch::Contains("more than 1 value per channel"));
}

TEST_CASE("a BatchNorm state dict without num_batches_tracked loads, the count set to 0", "[nn][parity][serialize]") {
  // PyTorch fills num_batches_tracked with 0 for state dicts saved without it (unversioned ones:
  // m.load_state_dict({k: v for k, v in m.state_dict().items() if k != 'num_batches_tracked'})).
  nn::BatchNorm2d bn(2);
  bn.num_batches_tracked.fill_(7);
  TensorDict state;
  for (const auto& [k, v] : bn.state_dict())
    if (k != "num_batches_tracked") state.insert(k, v.clone().fill_(3.0));
  nn::LoadResult r = bn.load_state_dict(state);
  CHECK(r.missing_keys.empty());
  CHECK(bn.num_batches_tracked.item_int() == 0);
  CHECK(bn.running_mean.to_vector<float>() == std::vector<float>{3, 3});
  // Any other missing key is still an error.
  TensorDict partial{{"weight", ones({2})}, {"bias", zeros({2})}};
  CHECK_THROWS_WITH(bn.load_state_dict(partial), Catch::Contains("Missing key(s)") && Catch::Contains("running_mean") &&
                                                     !Catch::Contains("num_batches_tracked"));
}

TEST_CASE("silu, elu, std and masked_fill match PyTorch, values and gradients", "[nn][parity][activation]") {
  // PyTorch 1.13, f64: x = [-3, -0.5, 0, 0.25, 2, 1000]; F.silu(x), F.elu(x, 0.5) and the gradients
  // of their sums.
  const std::vector<double> xs{-3, -0.5, 0, 0.25, 2, 1000};
  auto run = [&](auto fn) {
    Tensor x = from_vector(xs).requires_grad_();
    Tensor y = fn(x);
    sum(y).backward();
    return std::pair{y.template to_vector<double>(), x.grad().template to_vector<double>()};
  };
  auto close = [](const std::vector<double>& a, const std::vector<double>& b) {
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).epsilon(1e-12).margin(1e-15));
  };
  auto [sy, sg] = run([](const Tensor& x) { return nn::functional::silu(x); });
  close(sy, {-0.14227761953270035, -0.1887703343990727, 0.0, 0.14054412522144952, 1.7615941559557646, 1000.0});
  close(sg, {-0.08810410601516962, 0.2600388126973482, 0.5, 0.6237100215701977, 1.0907842487848955, 1.0});
  auto [ey, eg] = run([](const Tensor& x) { return nn::ELU(nn::ELUOptions().alpha(0.5)).forward(x); });
  close(ey, {-0.475106465816068, -0.1967346701436833, 0.0, 0.25, 2.0, 1000.0});
  close(eg, {0.024893534183931972, 0.3032653298563167, 0.5, 1.0, 1.0, 1.0});  // alpha at 0; no NaN from exp(1000)
  CHECK(nn::SiLU().forward(from_vector(std::vector<float>{2.0f})).dtype() == DType::F32);
  CHECK(nn::ELU().describe() == "ELU(alpha=1)");

  // torch.std(a, dim=1) of [[1, 2, 4], [3, 3, 3]] = [1.5275252316519465, 0]; its gradient is 0 on the
  // row without spread (PyTorch masks it; sqrt's own gradient would give NaN).
  Tensor a = from_vector(std::vector<double>{1, 2, 4, 3, 3, 3}, {2, 3}).requires_grad_();
  Tensor s = minidl::std(a, {1});
  close(s.to_vector<double>(), {1.5275252316519465, 0.0});
  sum(s).backward();
  close(a.grad().to_vector<double>(), {-0.43643578047198484, -0.10910894511799625, 0.5455447255899809, 0, 0, 0});
  CHECK(minidl::std(a.detach()).item() == Approx(1.0327955589886446).epsilon(1e-12));
  CHECK(minidl::std(a.detach(), {}, 0).item() == Approx(0.9428090415820635).epsilon(1e-12));
  Tensor s0 = minidl::std(a.detach(), {0}, 1, true);
  CHECK(s0.shape() == Shape{1, 3});
  close(s0.to_vector<double>(), {1.4142135623730951, 0.7071067811865476, 0.7071067811865476});
  CHECK(minidl::std(cast(a.detach(), DType::BF16), {1}).dtype() == DType::BF16);
  CHECK_THROWS_WITH(minidl::std(from_vector(std::vector<int64_t>{1, 2})), Catch::Contains("std") && Catch::Contains("i64"));

  // b.masked_fill(torch.tensor([True, False, True]), -1.5) on [[1, 2, 3], [4, 5, 6]]; gradient 0
  // where filled; an integer tensor stays integer (tensor([1, 2, 3]).masked_fill(m, 7) = [7, 2, 7]).
  Tensor b = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
  Tensor m = from_vector(std::vector<bool>{true, false, true});
  Tensor r = masked_fill(b, m, -1.5);
  CHECK(r.to_vector<float>() == std::vector<float>{-1.5f, 2, -1.5f, -1.5f, 5, -1.5f});
  sum(r).backward();
  CHECK(b.grad().to_vector<float>() == std::vector<float>{0, 1, 0, 0, 1, 0});
  Tensor mi = masked_fill(from_vector(std::vector<int64_t>{1, 2, 3}), m, 7);
  CHECK(mi.dtype() == DType::I64);
  CHECK(mi.to_vector<int64_t>() == std::vector<int64_t>{7, 2, 7});
  CHECK_THROWS_WITH(masked_fill(b, from_vector(std::vector<float>{1, 0, 1}), 0.0), Catch::Contains("masked_fill") && Catch::Contains("bool"));
  CHECK_THROWS_WITH(masked_fill(b.detach().select(0, 0), from_vector(std::vector<bool>{true, false, true, true, false, true}, {2, 3}), 0.0),
                    Catch::Contains("masked_fill") && Catch::Contains("[2, 3]"));
}

namespace {
// f64 [shape] filled with fn(i) for the flat index i, the way the PyTorch references below were made.
Tensor filled(const Shape& shape, double (*fn)(double)) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = fn(static_cast<double>(i));
  return from_vector<double>(v, shape);
}
void check_close(const std::vector<double>& got, const std::vector<double>& want, double rel = 1e-8) {
  REQUIRE(got.size() >= want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(rel).margin(1e-8));
}
}  // namespace

TEST_CASE("ConvTranspose2d with groups, stride and output_padding matches torch.nn.ConvTranspose2d", "[nn][parity][conv]") {
  // torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2).double(),
  // weight sin(0.37 i), bias (0.1, -0.2, ..., -0.6), input cos(0.53 i) of [2, 4, 3, 2]; loss sum(y^2).
  nn::ConvTranspose2d m(nn::ConvTranspose2dOptions(4, 6, 3).stride(2).padding(1).output_padding(1).groups(2));
  m.to(DType::F64);
  REQUIRE(m.weight.shape() == Shape{4, 3, 3, 3});
  {
    NoGradGuard no_grad;
    m.weight.copy_(filled({4, 3, 3, 3}, [](double i) { return std::sin(0.37 * i); }));
    m.bias.copy_(from_vector<double>({0.1, -0.2, 0.3, -0.4, 0.5, -0.6}));
  }
  Tensor x = filled({2, 4, 3, 2}, [](double i) { return std::cos(0.53 * i); }).requires_grad_(true);
  Tensor y = m(x);
  REQUIRE(y.shape() == Shape{2, 6, 6, 4});
  CHECK(y.sum().item<double>() == Approx(-36.40980967).epsilon(1e-8));
  CHECK((y * y).sum().item<double>() == Approx(575.8279989).epsilon(1e-8));
  check_close(y.to_vector<double>(), {1.984780042, 3.335929783, 1.708934016, 1.489122704, 1.153373697, 1.625747877,
                                      0.4873835822, -0.1281239495});
  (y * y).sum().backward();
  check_close(x.grad().to_vector<double>(),
              {31.14571183,  41.48705338,  18.17082982,  -2.924587016, -27.03226679, -40.17346975, -14.49032531,
               -33.00572712, -26.19082511, -13.54870049, 23.80047105,  47.2607618,   22.4655663,   26.02125651,
               4.54278245,   -19.89767775, -45.02661064, -60.54793252, -28.5308035,  -43.60414776, -22.98841012,
               -7.235068086, 30.66397223,  56.52093298,  29.6304064,   36.58383115,  10.91042285,  -12.25632256,
               -32.00771997, -43.57319396, -15.49642615, -31.35054481, -21.0185669,  -4.294976763, 28.6912906,
               51.70630707,  24.9455546,   26.83330393,  0.2222300644, -25.08451509, -46.14352242, -58.71215762,
               -31.74698883, -45.47174657, -19.69064292, -1.219123144, 32.79464151,  56.47603576});
  CHECK(m.weight.grad().sum().item<double>() == Approx(-6.677808455).epsilon(1e-8));
  check_close(m.weight.grad().to_vector<double>(), {5.290074021, 6.394929106, 11.32635507, 20.04575819, 23.14204613,
                                                    29.80889335, 8.368032179, 7.095332901});
  check_close(m.bias.grad().to_vector<double>(),
              {-0.2489198378, -3.899647165, 8.589731099, -70.39691133, 78.33439181, -85.19826392});
  CHECK(m.describe() == "ConvTranspose2d(4 -> 6, 3x3, stride 2, pad 1, output_padding 1, groups 2, bias)");
}

TEST_CASE("ConvTranspose2d's output_size picks the output padding within PyTorch's range", "[nn][parity][conv]") {
  nn::ConvTranspose2d m(nn::ConvTranspose2dOptions(4, 6, 3).stride(2).padding(1).groups(2));
  m.to(DType::F64);
  {
    NoGradGuard no_grad;
    m.weight.copy_(filled({4, 3, 3, 3}, [](double i) { return std::sin(0.37 * i); }));
    m.bias.copy_(from_vector<double>({0.1, -0.2, 0.3, -0.4, 0.5, -0.6}));
  }
  Tensor x = filled({2, 4, 3, 2}, [](double i) { return std::cos(0.53 * i); });
  // m(x, output_size=[5, 4]): smallest 5 x 3, largest 6 x 4, so output padding (0, 1).
  Tensor y = m.forward(x, {5, 4});
  REQUIRE(y.shape() == Shape{2, 6, 5, 4});
  CHECK(y.sum().item<double>() == Approx(-46.99961614).epsilon(1e-8));
  CHECK(m.forward(x, {2, 6, 6, 3}).shape() == Shape{2, 6, 6, 3});  // the whole shape is taken too
  // torch: "requested an output size of (7, 4), but valid sizes range from [5, 3] to [6, 4] (for an input of torch.Size([3, 2]))"
  CHECK_THROWS_WITH(m.forward(x, {7, 4}), Catch::Contains("ConvTranspose2d") &&
                                              Catch::Contains("valid sizes range from [5, 3] to [6, 4]"));
  CHECK_THROWS_WITH(m.forward(x, {4, 4}), Catch::Contains("requested an output size of [4, 4]"));
  CHECK_THROWS_WITH(m.forward(x, {5}), Catch::Contains("output_size must have 2 or 4 elements (got 1)"));
  // Unbatched input [C, H, W], output padding 1 from the module when no size is asked.
  nn::ConvTranspose2d u(nn::ConvTranspose2dOptions(1, 1, 3).stride(3).padding(1));
  CHECK(u.forward(ones({1, 4, 5}), {11, 14}).shape() == Shape{1, 11, 14});
}

TEST_CASE("ConvTranspose2d with dilation and no bias, unbatched, and its refusals", "[nn][parity][conv]") {
  // torch.nn.ConvTranspose2d(2, 3, 2, dilation=2, bias=False).double(), weight sin(0.71 i), input cos(0.29 i) [2, 3, 3].
  nn::ConvTranspose2d m(nn::ConvTranspose2dOptions(2, 3, 2).dilation(2).bias(false));
  m.to(DType::F64);
  CHECK_FALSE(m.bias.defined());
  CHECK(m.named_parameters().size() == 1);
  {
    NoGradGuard no_grad;
    m.weight.copy_(filled({2, 3, 2, 2}, [](double i) { return std::sin(0.71 * i); }));
  }
  Tensor y = m(filled({2, 3, 3}, [](double i) { return std::cos(0.29 * i); }));
  REQUIRE(y.shape() == Shape{3, 5, 5});
  CHECK(y.sum().item<double>() == Approx(2.801177846).epsilon(1e-8));
  check_close(y.to_vector<double>(), {-0.6777809014, -0.7634527393, -0.3003722917, 0.4366880292, 0.3519126286,
                                      -0.7416933468, -0.6360792921, -0.2395966123, 0.1037289093, -0.03895302882});
  CHECK_THROWS_WITH(nn::ConvTranspose2d(nn::ConvTranspose2dOptions(3, 4, 3).groups(2)),
                    Catch::Contains("ConvTranspose2d") && Catch::Contains("divisible by groups 2"));
  nn::ConvTranspose2d four(nn::ConvTranspose2dOptions(4, 4, 3).groups(2));
  CHECK_THROWS_WITH(four(ones({1, 3, 4, 4})), Catch::Contains("to have 4 channels, but got 3 channels instead"));
}

TEST_CASE("ConvTranspose2d's default init bounds use fan_in = out/groups * kh * kw", "[nn][parity][init]") {
  Generator gen(5);
  // weight [16, 32 / 4, 3, 3]: fan_in 8 * 9 = 72 (not in * 9 = 144), bound 1/sqrt(72) for both.
  nn::ConvTranspose2d m(nn::ConvTranspose2dOptions(16, 32, 3).groups(4), &gen);
  REQUIRE(m.weight.shape() == Shape{16, 8, 3, 3});
  const double bound = 1.0 / std::sqrt(72.0);
  float lo = 1, hi = -1;
  for (float v : m.weight.to_vector<float>()) lo = std::min(lo, v), hi = std::max(hi, v);
  CHECK(hi <= bound);
  CHECK(lo >= -bound);
  CHECK(hi > 0.95 * bound);  // 1152 draws use the range
  CHECK(lo < -0.95 * bound);
  float bmax = 0;
  for (float v : m.bias.to_vector<float>()) bmax = std::max(bmax, std::fabs(v));
  CHECK(bmax <= bound);
  CHECK(bmax > 0.5 * bound);
}

TEST_CASE("Padding layers pad as torch.nn's and print as its repr", "[nn][parity][pad]") {
  Tensor x = arange(0, 18, 1, DType::F64).reshape({2, 1, 3, 3});
  // torch.nn.ZeroPad2d((1, 0, 2, 1))(x), first image
  nn::ZeroPad2d zero({1, 0, 2, 1});
  Tensor z = zero(x);
  REQUIRE(z.shape() == Shape{2, 1, 6, 4});
  check_close(z.to_vector<double>(), {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 3, 4, 5, 0, 6, 7, 8, 0, 0, 0, 0});
  CHECK(zero.describe() == "ZeroPad2d((1, 0, 2, 1))");
  // torch.nn.ReflectionPad2d((2, 1, 0, 1))(x)
  nn::ReflectionPad2d reflect({2, 1, 0, 1});
  check_close(reflect(x).to_vector<double>(), {2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4, 8, 7, 6, 7, 8, 7, 5, 4, 3, 4, 5, 4,
                                               11, 10, 9, 10, 11, 10, 14, 13, 12, 13, 14, 13, 17, 16, 15, 16, 17, 16});
  CHECK(reflect.describe() == "ReflectionPad2d((2, 1, 0, 1))");
  // torch.nn.ReplicationPad1d((2, 1)) and ConstantPad1d(1, -2.0) on x[0, 0] ([3, 3]: unbatched 1d)
  Tensor row = x.select(0, 0).select(0, 0);
  check_close(nn::ReplicationPad1d({2, 1})(row).to_vector<double>(), {0, 0, 0, 1, 2, 2, 3, 3, 3, 4, 5, 5, 6, 6, 6, 7, 8, 8});
  nn::ConstantPad1d constant(1, -2.0);
  check_close(constant(row).to_vector<double>(), {-2, 0, 1, 2, -2, -2, 3, 4, 5, -2, -2, 6, 7, 8, -2});
  CHECK(nn::ConstantPad2d(1, 3.5).describe() == "ConstantPad2d(padding=(1, 1, 1, 1), value=3.5)");
  CHECK(nn::ReplicationPad1d(2).describe() == "ReplicationPad1d((2, 2))");
  // torch: "Padding size should be less than the corresponding input dimension, but got: padding (3, 3) at dimension 3 of input 4"
  CHECK_THROWS_WITH(nn::ReflectionPad2d(3)(x), Catch::Contains("pad"));
  CHECK_THROWS_WITH(nn::ZeroPad2d({1, 2, 3}), Catch::Contains("ZeroPad2d") && Catch::Contains("one size or 4 sizes, got 3"));
  // Gradients reach the input through the module (the op's own gradients are checked in test_pad).
  Tensor xg = x.clone().requires_grad_(true);
  nn::ReplicationPad2d(1)(xg).sum().backward();
  CHECK(xg.grad().to_vector<double>()[0] == 4.0);  // a corner is copied into 3 padded cells and itself
  auto clone = reflect.clone_structure();
  CHECK(clone->describe() == "ReflectionPad2d((2, 1, 0, 1))");
}

TEST_CASE("Softplus module with beta and threshold matches torch.nn.Softplus", "[nn][parity]") {
  // torch.nn.Softplus(beta=2, threshold=3)(x): above beta x > 3 it returns x.
  nn::Softplus sp(nn::SoftplusOptions().beta(2).threshold(3));
  Tensor x = from_vector<double>({-3.0, -0.5, 0.0, 1.0, 1.5, 1.6, 4.0});
  check_close(sp(x).to_vector<double>(), {0.0012378426, 0.15663084, 0.34657359, 1.063464, 1.5242937, 1.6, 4}, 1e-7);
  CHECK(sp.describe() == "Softplus(beta=2, threshold=3)");
  CHECK(nn::Softplus().describe() == "Softplus(beta=1, threshold=20)");
}

TEST_CASE("Hardtanh and ReLU6 match torch's values and pass the gradient only strictly inside", "[nn][parity]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> xs = {-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 6.0, 7.0, nan};
  auto run = [&](nn::Layer& layer, const std::vector<double>& want_y, const std::vector<double>& want_g) {
    Tensor x = from_vector<double>(xs).requires_grad_(true);
    Tensor y = layer(x);
    y.backward(ones_like(y));
    const std::vector<double> got = y.to_vector<double>();
    for (size_t i = 0; i + 1 < xs.size(); ++i) CHECK(got[i] == want_y[i]);
    CHECK(std::isnan(got.back()));  // NaN propagates, and its gradient passes (torch's hardtanh_backward)
    CHECK(x.grad().to_vector<double>() == want_g);
  };
  // torch.nn.Hardtanh()(x), Hardtanh(-0.5, 1.0)(x), ReLU6()(x); y.backward(ones)
  nn::Hardtanh unit;
  run(unit, {-1, -1, -0.5, 0, 0.5, 1, 1, 1}, {0, 0, 1, 1, 1, 0, 0, 0, 1});
  nn::Hardtanh narrow(-0.5, 1.0);
  run(narrow, {-0.5, -0.5, -0.5, 0, 0.5, 1, 1, 1}, {0, 0, 0, 1, 1, 0, 0, 0, 1});
  nn::ReLU6 six;
  run(six, {0, 0, 0, 0, 0.5, 1, 6, 6}, {0, 0, 0, 0, 1, 1, 0, 0, 1});
  CHECK(unit.describe() == "Hardtanh(min_val=-1, max_val=1)");
  CHECK(six.describe() == "ReLU6()");
  CHECK_THROWS_WITH(nn::Hardtanh(1.0, -1.0), Catch::Contains("Hardtanh") && Catch::Contains("must be greater"));
  CHECK_THROWS_WITH(hardtanh(ones({3}), 1.0, -1.0), Catch::Contains("hardtanh: min_val (1) must not be greater"));
  // bf16 keeps its dtype; the bounds are bf16 values.
  CHECK(hardtanh(from_vector<double>({-3.0, 0.3, 3.0}).to(DType::BF16)).dtype() == DType::BF16);
}

TEST_CASE("PReLU per channel and with one slope matches torch.nn.PReLU, forward and backward", "[nn][parity]") {
  // torch.nn.PReLU(3) with weight (0.25, -0.5, 2.0) on x [2, 3, 2, 1] (each channel's value repeated
  // along H); loss sum(y * arange(12)).
  nn::PReLU p(3);
  p.to(DType::F64);
  CHECK(p.weight.to_vector<double>() == std::vector<double>(3, 0.25));  // PyTorch's init 0.25
  {
    NoGradGuard no_grad;
    p.weight.copy_(from_vector<double>({0.25, -0.5, 2.0}));
  }
  Tensor x = from_vector<double>({-1, -1, 0, 0, 2, 2, 3, 3, -4, -4, 0.5, 0.5}, {2, 3, 2, 1}).requires_grad_(true);
  Tensor y = p(x);
  CHECK(y.to_vector<double>() == std::vector<double>{-0.25, -0.25, -0.0, -0.0, 2, 2, 3, 3, 2, 2, 0.5, 0.5});
  CHECK(std::signbit(y.to_vector<double>()[2]));  // -0.5 * 0 is -0, as torch's
  sum(y * arange(0, 12, 1, DType::F64).reshape({2, 3, 2, 1})).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0.25, -1, -1.5, 4, 5, 6, 7, -4, -4.5, 10, 11});
  CHECK(p.weight.grad().to_vector<double>() == std::vector<double>{-1, -68, 0});
  CHECK(p.describe() == "PReLU(num_parameters=3)");
  // torch.nn.PReLU() on [-1, 0, 2]: sum's gradient 0.25 at 0 (the slope), weight's -1.
  nn::PReLU one;
  one.to(DType::F64);
  Tensor z = from_vector<double>({-1.0, 0.0, 2.0}).requires_grad_(true);
  Tensor o = one(z);
  o.sum().backward();
  CHECK(o.to_vector<double>() == std::vector<double>{-0.25, 0, 2});
  CHECK(z.grad().to_vector<double>() == std::vector<double>{0.25, 0.25, 1});
  CHECK(one.weight.grad().to_vector<double>() == std::vector<double>{-1});
  CHECK_THROWS_WITH(p(ones({2, 4})), Catch::Contains("prelu: Mismatch of parameter numbers and input channel size. "
                                                     "Found parameter numbers = 3 and channel size = 4."));
  CHECK_THROWS_WITH(prelu(ones({2, 3}), ones({1, 3})), Catch::Contains("scalar or 1D tensor, but got ndim = 2"));
  // A bf16 input with the f32 weight gives bf16 (torch 1.13 too); under CPU autocast an f32 input
  // runs in bf16 (PyTorch 2.x's lower-precision row; 1.13 left prelu in f32 there).
  nn::PReLU f32_slopes(3);
  CHECK(f32_slopes(ones({2, 3}).to(DType::BF16)).dtype() == DType::BF16);
  amp::autocast scope(DeviceType::CPU);
  Tensor under = f32_slopes(ones({2, 3}));
  CHECK(under.dtype() == DType::BF16);
  CHECK(under.grad_fn()->amp.policy == "lower_precision");
}
