// nn against torch.nn on cases a PyTorch user would check: loss modules with weights,
// ignore_index and pos_weight, mean over an empty batch, activation defaults, Dropout at p = 0 and
// p = 1, BatchNorm running statistics (unbiased variance, momentum None), default init bounds of
// Conv2d with groups, and clip_grad_norm_'s coefficient. Expected values come from PyTorch's
// documented formulas, written out here in double.
#include <catch2/catch.hpp>
#include <cmath>
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
