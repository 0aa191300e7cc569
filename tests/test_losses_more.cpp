// smooth_l1_loss, huber_loss, kl_div and logsumexp (ops/pointwise_loss.cpp, ops/reduce.cpp) and the
// SmoothL1Loss, HuberLoss and KLDivLoss modules: values and gradients against torch 1.13's (the
// literals below come from torch.nn.functional and torch.logsumexp in f64; where 2.x differs the
// test says so), edge values (kinks, inf, NaN, zero target probabilities, empty slices),
// broadcasting and its warning, errors, f32 results under autocast (the policy rows are checked
// with the others in tests/test_amp_parity.cpp), f64 gradient checks of first and second order,
// every other (device, dtype) target against the f64 CPU, and CUDA against the CPU.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cuda_checks.h"
#include "gradcheck.h"

using namespace minidl;
using minidl::testing::GradCase;
using minidl::testing::Target;

namespace {
using TL = std::vector<Tensor>;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kEps64 = traits(DType::F64).eps;

Tensor f64(const std::vector<double>& v, const Shape& s) { return from_vector(v, s); }
Tensor f64(const std::vector<double>& v) { return from_vector(v); }

// got == want element-wise within a few f64 roundings (relative to max(1, |want|)); NaN matches
// NaN and an infinity the same infinity.
void check_values(const Tensor& got, const std::vector<double>& want, double ulps = 8) {
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", want " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(g[i]));
    } else if (std::isinf(want[i])) {
      CHECK(g[i] == want[i]);
    } else {
      CHECK(std::fabs(g[i] - want[i]) <= ulps * kEps64 * std::max(1.0, std::fabs(want[i])));
    }
  }
}
void check_value(const Tensor& got, double want, double ulps = 8) {
  CHECK(got.dim() == 0);
  check_values(got, {want}, ulps);
}

// Collects the library's warnings while alive, then restores the previous handler.
struct WarningCapture {
  std::vector<std::string> seen;
  WarningHandler previous;
  WarningCapture() : previous(set_warning_handler([this](const std::string& m) { seen.push_back(m); })) {}
  ~WarningCapture() { set_warning_handler(previous); }
};
}  // namespace

// ------------------------------------------------------------------ smooth_l1_loss, huber_loss

namespace {
const std::vector<double> kX = {0.0, 0.3, -0.7, 2.5, -1.0, 1.0};
const std::vector<double> kY = {0.1, -0.4, 0.2, 0.0, 0.0, 0.0};

struct RegressionRef {
  double param;
  std::vector<double> none;
  double sum, mean;
};
}  // namespace

TEST_CASE("smooth_l1_loss matches torch for every reduction and beta, beta = 0 being l1", "[loss][smooth_l1]") {
  const std::vector<RegressionRef> refs = {
      {1.0, {0.005000000000000001, 0.24499999999999997, 0.4049999999999999, 2.0, 0.5, 0.5}, 3.655, 0.6091666666666666},
      {0.5, {0.010000000000000002, 0.44999999999999996, 0.6499999999999999, 2.25, 0.75, 0.75}, 4.859999999999999,
       0.8099999999999999},
      {0.0, {0.1, 0.7, 0.8999999999999999, 2.5, 1.0, 1.0}, 6.199999999999999, 1.0333333333333332},
      {2.0, {0.0025000000000000005, 0.12249999999999998, 0.20249999999999996, 1.5, 0.25, 0.25}, 2.3274999999999997,
       0.38791666666666663},
  };
  const Tensor x = f64(kX), y = f64(kY);
  for (const RegressionRef& r : refs) {
    INFO("beta " << r.param);
    check_values(smooth_l1_loss(x, y, Reduction::None, r.param), r.none);
    check_value(smooth_l1_loss(x, y, Reduction::Sum, r.param), r.sum);
    check_value(smooth_l1_loss(x, y, Reduction::Mean, r.param), r.mean);
  }
  check_value(smooth_l1_loss(x, y), 0.6091666666666666);  // defaults: mean, beta 1
  // beta = 0 is l1_loss exactly.
  CHECK(testing::max_abs_diff(smooth_l1_loss(x, y, Reduction::None, 0.0), l1_loss(x, y, Reduction::None)) == 0.0);
}

TEST_CASE("huber_loss matches torch for every reduction and delta, and is delta * smooth_l1", "[loss][huber]") {
  const std::vector<RegressionRef> refs = {
      {1.0, {0.005000000000000001, 0.24499999999999997, 0.4049999999999999, 2.0, 0.5, 0.5}, 3.655, 0.6091666666666666},
      {0.5, {0.005000000000000001, 0.22499999999999998, 0.32499999999999996, 1.125, 0.375, 0.375}, 2.4299999999999997,
       0.40499999999999997},
      {2.0, {0.005000000000000001, 0.24499999999999997, 0.4049999999999999, 3.0, 0.5, 0.5}, 4.654999999999999,
       0.7758333333333333},
  };
  const Tensor x = f64(kX), y = f64(kY);
  for (const RegressionRef& r : refs) {
    INFO("delta " << r.param);
    check_values(huber_loss(x, y, Reduction::None, r.param), r.none);
    check_value(huber_loss(x, y, Reduction::Sum, r.param), r.sum);
    check_value(huber_loss(x, y, Reduction::Mean, r.param), r.mean);
    check_values(huber_loss(x, y, Reduction::None, r.param),
                 mul(smooth_l1_loss(x, y, Reduction::None, r.param), r.param).to_vector<double>());
  }
  // Huber's two branches are PyTorch's expressions rounded the same way: exact in f32 too.
  const Tensor xf = from_vector<float>({0.3f, -1.7f, 2.2f, 0.05f}), yf = from_vector<float>({0.1f, 0.2f, -0.3f, 1.5f});
  const std::vector<float> got = huber_loss(xf, yf, Reduction::None, 0.5).to_vector<float>();
  const std::vector<float> xv = xf.to_vector<float>(), yv = yf.to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) {
    const float z = std::fabs(xv[i] - yv[i]), delta = 0.5f;
    CHECK(got[i] == (z < delta ? 0.5f * z * z : delta * (z - 0.5f * delta)));
  }
  // The result has the input's dtype (torch: huber_loss(f32, f64) is f32, smooth_l1_loss's f64),
  // computed in the promoted type and rounded once; the f64 target still gets its f64 gradient.
  const Tensor yd = cast(yf, DType::F64).requires_grad_();
  const Tensor each = cast(huber_loss(cast(xf, DType::F64), yd, Reduction::None, 0.5), DType::F32);
  CHECK(huber_loss(xf, yd, Reduction::None, 0.5).to_vector<float>() == each.to_vector<float>());
  CHECK(huber_loss(xf, yd, Reduction::Sum, 0.5).item() == sum(each).item());
  CHECK(huber_loss(xf, yd, Reduction::Mean, 0.5).dtype() == DType::F32);
  CHECK(huber_loss(cast(xf, DType::F64), yf).dtype() == DType::F64);
  CHECK(smooth_l1_loss(xf, yd).dtype() == DType::F64);
  sum(huber_loss(xf, yd, Reduction::None, 0.5)).backward();
  CHECK(yd.grad().dtype() == DType::F64);
}

TEST_CASE("smooth_l1_loss and huber_loss gradients at the kinks, at inf and NaN, as torch", "[loss][smooth_l1][huber]") {
  // d = x - y at 0, +-beta, inside, outside. torch 1.13's smooth_l1 with beta = 0 gave -1 at d = 0
  // (for both input and target); 2.x runs l1_loss there, whose gradient is 0: we follow 2.x.
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&, const Tensor&)> fn;
    std::vector<double> gx;
  };
  const std::vector<Case> cases = {
      {"smooth_l1 beta 1", [](const Tensor& a, const Tensor& b) { return smooth_l1_loss(a, b, Reduction::Sum, 1.0); },
       {0.0, 1.0, -1.0, 0.5, 1.0}},
      {"smooth_l1 beta 0", [](const Tensor& a, const Tensor& b) { return smooth_l1_loss(a, b, Reduction::Sum, 0.0); },
       {0.0, 1.0, -1.0, 1.0, 1.0}},
      {"huber delta 1", [](const Tensor& a, const Tensor& b) { return huber_loss(a, b, Reduction::Sum, 1.0); },
       {0.0, 1.0, -1.0, 0.5, 1.0}},
      {"huber delta 0.5", [](const Tensor& a, const Tensor& b) { return huber_loss(a, b, Reduction::Sum, 0.5); },
       {0.0, 0.5, -0.5, 0.5, 0.5}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Tensor x = f64({0.0, 1.0, -1.0, 0.5, 2.0}).requires_grad_(), y = zeros({5}, DType::F64).requires_grad_();
    c.fn(x, y).backward();
    check_values(x.grad(), c.gx, 0);
    check_values(y.grad(), neg(f64(c.gx)).to_vector<double>(), 0);
  }
  // Infinite differences have PyTorch's finite gradient (+-1, +-delta), NaN gives NaN; the values
  // are inf and NaN.
  const std::vector<double> xs = {kInf, -kInf, kNaN, 3.0, 1.0}, ys = {0.0, 0.0, 0.0, kInf, 1.0};
  for (bool huber : {false, true}) {
    INFO((huber ? "huber_loss" : "smooth_l1_loss") << " with beta/delta 0.5");
    Tensor x = f64(xs).requires_grad_(), y = f64(ys).requires_grad_();
    Tensor l = huber ? huber_loss(x, y, Reduction::None, 0.5) : smooth_l1_loss(x, y, Reduction::None, 0.5);
    check_values(l, {kInf, kInf, kNaN, kInf, 0.0});
    l.sum().backward();
    const double k = huber ? 0.5 : 1.0;
    check_values(x.grad(), {k, -k, kNaN, -k, 0.0}, 0);
    check_values(y.grad(), {-k, k, kNaN, k, 0.0}, 0);
  }
}

TEST_CASE("smooth_l1_loss and huber_loss second derivatives are torch's (1/beta and 1 inside, 0 outside)",
          "[loss][smooth_l1][huber]") {
  for (bool huber : {false, true}) {
    INFO((huber ? "huber_loss" : "smooth_l1_loss"));
    Tensor x = f64({0.3, -2.0, 0.9}).requires_grad_();
    Tensor l = huber ? huber_loss(x, zeros({3}, DType::F64), Reduction::Sum, 0.5)
                     : smooth_l1_loss(x, zeros({3}, DType::F64), Reduction::Sum, 0.5);
    Tensor g = autograd::grad({l}, {x}, autograd::GradOptions().create_graph(true))[0];
    check_values(g, huber ? std::vector<double>{0.3, -0.5, 0.5} : std::vector<double>{0.6, -1.0, 1.0});
    check_values(autograd::grad({g.sum()}, {x})[0], huber ? std::vector<double>{1.0, 0.0, 0.0} : std::vector<double>{2.0, 0.0, 0.0});
  }
}

TEST_CASE("regression losses broadcast the target with torch's warning, which a same-shaped target does not give",
          "[loss][smooth_l1][huber]") {
  Tensor x = zeros({2, 3}, DType::F64).requires_grad_();
  Tensor y = f64({0.5, 2.0, -3.0}).requires_grad_();
  {
    WarningCapture w;
    huber_loss(x, y, Reduction::Mean).backward();
    REQUIRE(w.seen.size() == 1);
    CHECK(w.seen[0] ==
          "huber_loss: Using a target size ([3]) that is different to the input size ([2, 3]). This will likely lead "
          "to incorrect results due to broadcasting. Please ensure they have the same size.");
  }
  // torch: x.grad [[-1/12, -1/6, 1/6], twice], y.grad [1/6, 1/3, -1/3].
  check_values(x.grad(), {-1.0 / 12, -1.0 / 6, 1.0 / 6, -1.0 / 12, -1.0 / 6, 1.0 / 6});
  check_values(y.grad(), {1.0 / 6, 1.0 / 3, -1.0 / 3});
  WarningCapture w;
  CHECK(smooth_l1_loss(x, y, Reduction::None).shape() == Shape{2, 3});
  CHECK(mse_loss(x, y, Reduction::None).shape() == Shape{2, 3});
  CHECK(l1_loss(x, y, Reduction::None).shape() == Shape{2, 3});
  REQUIRE(w.seen.size() == 3);
  CHECK_THAT(w.seen[0], Catch::StartsWith("smooth_l1_loss: Using a target size ([3])"));
  CHECK_THAT(w.seen[1], Catch::StartsWith("mse_loss: Using a target size ([3])"));
  CHECK_THAT(w.seen[2], Catch::StartsWith("l1_loss: Using a target size ([3])"));
  smooth_l1_loss(x, zeros({2, 3}, DType::F64));
  huber_loss(x, zeros({2, 3}, DType::F64));
  kl_div(x, full({3}, 0.5, DType::F64), KLDivReduction::Sum);  // kl_div broadcasts silently, as torch
  CHECK(w.seen.size() == 3);
}

TEST_CASE("smooth_l1_loss and huber_loss: result dtypes, empty inputs and errors", "[loss][smooth_l1][huber][errors]") {
  CHECK(smooth_l1_loss(ones({2}), zeros({2}, DType::F64)).dtype() == DType::F64);
  CHECK(huber_loss(ones({2}), zeros({2}, DType::F16)).dtype() == DType::F32);
  CHECK(smooth_l1_loss(ones({2}, DType::BF16), zeros({2}, DType::BF16)).dtype() == DType::BF16);
  // Empty: mean is NaN, sum 0 (as torch).
  CHECK(std::isnan(smooth_l1_loss(zeros({0}), zeros({0})).item()));
  CHECK(huber_loss(zeros({0}), zeros({0}), Reduction::Sum).item() == 0.0);
  CHECK_THROWS_WITH(smooth_l1_loss(ones({2}), zeros({2}), Reduction::Mean, -1.0),
                    Catch::Contains("smooth_l1_loss: does not support negative values for beta"));
  CHECK_THROWS_WITH(smooth_l1_loss(ones({2}), zeros({2}), Reduction::Mean, kNaN), Catch::Contains("beta"));
  CHECK_THROWS_WITH(huber_loss(ones({2}), zeros({2}), Reduction::Mean, 0.0),
                    Catch::Contains("huber_loss: does not support non-positive values for delta"));
  CHECK_THROWS_WITH(huber_loss(ones({2}), zeros({2}), Reduction::Mean, -0.5), Catch::Contains("delta"));
  CHECK_THROWS_WITH(smooth_l1_loss(ones({2}, DType::I64), zeros({2}, DType::I64)),
                    Catch::Contains("smooth_l1_loss") && Catch::Contains("floating point"));
  CHECK_THROWS_WITH(huber_loss(ones({2}, DType::I64), zeros({2})), Catch::Contains("huber_loss") && Catch::Contains("floating point"));
  CHECK_THROWS_WITH(huber_loss(Tensor(), zeros({2})), Catch::Contains("huber_loss") && Catch::Contains("undefined"));
  // Shapes that do not broadcast: an error naming the loss, without the broadcasting warning first.
  WarningCapture quiet;
  CHECK_THROWS_WITH(smooth_l1_loss(zeros({2, 3}), zeros({4})), Catch::StartsWith("smooth_l1_loss") && Catch::Contains("cannot be broadcast"));
  CHECK_THROWS_WITH(huber_loss(zeros({2, 3}), zeros({4})), Catch::StartsWith("huber_loss") && Catch::Contains("cannot be broadcast"));
  CHECK_THROWS_WITH(mse_loss(zeros({2, 3}), zeros({2})), Catch::StartsWith("mse_loss") && Catch::Contains("cannot be broadcast"));
  CHECK_THROWS_WITH(l1_loss(zeros({2, 3}), zeros({2})), Catch::StartsWith("l1_loss") && Catch::Contains("cannot be broadcast"));
  CHECK_THROWS_WITH(kl_div(zeros({2, 3}), zeros({2})), Catch::StartsWith("kl_div") && Catch::Contains("cannot be broadcast"));
  CHECK_THROWS_WITH(kl_div(zeros({2, 3}), zeros({2}), KLDivReduction::Sum, true),
                    Catch::StartsWith("kl_div") && Catch::Contains("cannot be broadcast"));
  CHECK(quiet.seen.empty());
}

// ------------------------------------------------------------------------------------- kl_div

namespace {
const std::vector<double> kLogP = {-1.2, -0.3, -2.0, -0.5, -1.5, -0.9};
const std::vector<double> kP = {0.2, 0.0, 0.8, 0.5, 0.25, 0.25};
const std::vector<double> kLogQ = {-1.6, -2.5, -0.2, -0.7, -1.4, -1.4};
}  // namespace

TEST_CASE("kl_div matches torch for every reduction, with a zero target probability", "[loss][kl_div]") {
  const Tensor x = f64(kLogP, {2, 3}), t = f64(kP, {2, 3});
  // 0 * log 0 counts as 0 (torch's xlogy), so the zero target's element is exactly 0.
  check_values(kl_div(x, t, KLDivReduction::None),
               {-0.0818875824868201, 0.0, 1.4214851589486324, -0.09657359027997264, 0.028426409720027357,
                -0.12157359027997264});
  check_value(kl_div(x, t, KLDivReduction::Sum), 1.1498768056218942);
  check_value(kl_div(x, t, KLDivReduction::BatchMean), 0.5749384028109471);  // sum / 2 rows
  {
    WarningCapture w;
    check_value(kl_div(x, t, KLDivReduction::Mean), 0.1916461342703157);  // sum / 6 elements
    check_value(kl_div(x, t), 0.1916461342703157);                         // the default is Mean, as torch
    REQUIRE(w.seen.size() == 2);  // torch warns that Mean is not the KL divergence
    CHECK_THAT(w.seen[0], Catch::StartsWith("kl_div: reduction Mean divides the total loss by both the batch size"));
    kl_div(x, t, KLDivReduction::BatchMean);
    kl_div(x, t, KLDivReduction::Sum);
    kl_div(x, t, KLDivReduction::None);
    CHECK(w.seen.size() == 2);
  }
  // Gradients (batchmean): input -t / N; target (log t + 1 - x) / N, NaN at the zero probability
  // (xlogy's gradient there is 0/0 in torch too).
  Tensor xg = x.clone().requires_grad_(), tg = t.clone().requires_grad_();
  kl_div(xg, tg, KLDivReduction::BatchMean).backward();
  check_values(xg.grad(), {-0.1, -0.0, -0.4, -0.25, -0.125, -0.125});
  check_values(tg.grad(), {0.29528104378294984, kNaN, 1.3884282243428951, 0.40342640972002736, 0.5568528194400547,
                           0.2568528194400547});
  // A target that does not require grad leaves the input's gradient finite at the zero target.
  Tensor xs = f64({-1.0, -2.0}).requires_grad_(), ts = f64({0.0, 0.5}).requires_grad_();
  kl_div(xs, ts, KLDivReduction::Sum).backward();
  check_values(xs.grad(), {-0.0, -0.5}, 0);
  check_values(ts.grad(), {kNaN, 2.3068528194400546});
}

TEST_CASE("kl_div with log_target matches torch, and a -inf log target gives NaN as torch", "[loss][kl_div]") {
  const Tensor x = f64(kLogP, {2, 3}), lt = f64(kLogQ, {2, 3});
  check_values(kl_div(x, lt, KLDivReduction::None, true),
               {-0.08075860719786218, -0.18058699697257738, 1.4737153555403673, -0.09931706075828188,
                0.02465969639416067, -0.12329848197080322});
  check_value(kl_div(x, lt, KLDivReduction::Sum, true), 1.0144139050350034);
  check_value(kl_div(x, lt, KLDivReduction::BatchMean, true), 0.5072069525175017);
  {
    WarningCapture quiet;
    check_value(kl_div(x, lt, KLDivReduction::Mean, true), 0.16906898417250057);
  }
  Tensor xg = x.clone().requires_grad_(), tg = lt.clone().requires_grad_();
  kl_div(xg, tg, KLDivReduction::BatchMean, true).backward();
  check_values(xg.grad(), {-0.10094825899732769, -0.0410424993119494, -0.4093653765389909, -0.24829265189570476,
                           -0.12329848197080324, -0.12329848197080324});
  check_values(tg.grad(), {0.0605689553983966, -0.04925099917433929, 1.1462230543091745, 0.19863412151656382,
                           0.1356283301678836, 0.061649240985401636});
  // exp(-inf) * (-inf - x) = 0 * -inf: torch gives NaN (it does not special-case log_target).
  check_values(kl_div(f64({-kInf, -1.0}), f64({-kInf, -kInf}), KLDivReduction::None, true), {kNaN, kNaN});
  // The log-space and probability forms agree where both are finite.
  check_values(kl_div(x, lt, KLDivReduction::None, true), kl_div(x, exp(lt), KLDivReduction::None).to_vector<double>());
}

TEST_CASE("kl_div edge values, batchmean's divisor, broadcasting, dtypes and errors", "[loss][kl_div][errors]") {
  // Negative and NaN targets and a NaN input give NaN; a -inf input with a zero target gives NaN
  // (0 * -inf), as torch.
  check_values(kl_div(f64({-1.0, -1.0, -1.0, kNaN}), f64({-0.5, 0.0, kNaN, 0.0}), KLDivReduction::None),
               {kNaN, 0.0, kNaN, kNaN});
  check_values(kl_div(f64({-kInf, -1.0}), f64({0.0, 0.0}), KLDivReduction::None), {kNaN, 0.0});
  // batchmean divides by the input's first dim: a 0-dim input is the sum; a 1-D one divides by
  // its length; a broadcast target does not change the divisor; an empty batch is NaN.
  check_value(kl_div(scalar_tensor(-1.0, DType::F64), scalar_tensor(0.5, DType::F64), KLDivReduction::BatchMean),
              0.5 * (std::log(0.5) + 1.0));
  const Tensor x1 = f64({-1.0, -2.0, -3.0}), t1 = f64({0.2, 0.3, 0.5});
  check_value(kl_div(x1, t1, KLDivReduction::BatchMean), kl_div(x1, t1, KLDivReduction::Sum).item() / 3.0);
  check_value(kl_div(zeros({3}, DType::F64), full({2, 3}, 0.5, DType::F64), KLDivReduction::BatchMean), -std::log(2.0));
  CHECK(std::isnan(kl_div(zeros({0, 3}), zeros({0, 3}), KLDivReduction::BatchMean).item()));
  CHECK(kl_div(zeros({2, 3}), full({3}, 0.5), KLDivReduction::None).shape() == Shape{2, 3});
  // Promotion as torch: f32 with f64 is f64, f32 with f16 is f32.
  CHECK(kl_div(zeros({2}), zeros({2}, DType::F64), KLDivReduction::Sum).dtype() == DType::F64);
  CHECK(kl_div(zeros({2}), zeros({2}, DType::F16), KLDivReduction::Sum).dtype() == DType::F32);
  CHECK_THROWS_WITH(kl_div(zeros({2}, DType::I64), zeros({2})), Catch::Contains("kl_div: Integral inputs not supported"));
  CHECK_THROWS_WITH(kl_div(zeros({2}), from_vector<int64_t>({1, 0})), Catch::Contains("kl_div: Integral inputs not supported"));
  CHECK_THROWS_WITH(kl_div(zeros({2}), ones({2}, DType::Bool)), Catch::Contains("kl_div: Integral inputs not supported"));
  CHECK_THROWS_WITH(kl_div(zeros({2, 3}), zeros({4}), KLDivReduction::Sum), Catch::Contains("cannot be broadcast"));
  CHECK_THROWS_WITH(kl_div(Tensor(), zeros({2})), Catch::Contains("kl_div") && Catch::Contains("undefined"));
}

// ---------------------------------------------------------------------------------- logsumexp

TEST_CASE("logsumexp matches torch over dims, keepdim and all dims", "[logsumexp]") {
  const Tensor x = f64({1.0, 2.0, 3.0, -1.0, 0.5, 100.0}, {2, 3});
  check_values(logsumexp(x, {1}), {3.4076059644443806, 100.0});
  check_values(logsumexp(x, {-1}), {3.4076059644443806, 100.0});
  check_values(logsumexp(x, {0}), {1.1269280110429727, 2.2014132779827524, 100.0});
  check_value(logsumexp(x, {0, 1}), 100.0);
  check_value(logsumexp(x, {}), 100.0);  // empty dims: all (minidl's reduction convention)
  CHECK(logsumexp(x, {1}, true).shape() == Shape{2, 1});
  CHECK(logsumexp(x, {0, 1}, true).shape() == Shape{1, 1});
  // No overflow where exp would: log(2 e^1000) and bf16 values near its max.
  check_values(logsumexp(f64({1000.0, 1000.0}), {0}).reshape({1}), {1000.6931471805599});
  const Tensor big = full({2}, 3.0e38, DType::BF16);
  CHECK(logsumexp(big, {0}).item() == big.to_vector<double>()[0]);  // + log 2 is below bf16's spacing there
  // A 0-dim input reduces over dim 0 to itself.
  Tensor s = logsumexp(scalar_tensor(2.5, DType::F64), {0});
  CHECK(s.dim() == 0);
  CHECK(s.item() == 2.5);
}

TEST_CASE("logsumexp of -inf, +inf and NaN slices, and their gradients, as torch", "[logsumexp]") {
  Tensor y = f64({-kInf, -kInf, kInf, 1.0, kInf, -kInf, kNaN, 1.0, kNaN, kInf, kInf, kInf, -kInf, 2.0, 1000.0, 1000.0},
                 {8, 2})
                 .requires_grad_();
  Tensor r = logsumexp(y, {1});
  check_values(r, {-kInf, kInf, kInf, kNaN, kNaN, kInf, 2.0, 1000.6931471805599});
  r.sum().backward();
  // torch's exp(x - result): NaN wherever x - result is inf - inf or -inf - (-inf).
  check_values(y.grad(), {kNaN, kNaN, kNaN, 0.0, kNaN, 0.0, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, 0.0, 1.0,
                          0.5000000000000275, 0.5000000000000275});
  // An empty slice gives -inf; an empty result stays empty.
  check_values(logsumexp(zeros({2, 0}), {1}), {-kInf, -kInf});
  CHECK(logsumexp(zeros({0, 3}), {1}).shape() == Shape{0});
}

TEST_CASE("logsumexp of integer and bool inputs is f32, low precision rounds once, errors", "[logsumexp][dtype]") {
  for (DType t : {DType::I64, DType::I32, DType::U8}) {
    INFO(dtype_name(t));
    Tensor r = logsumexp(cast(from_vector<int64_t>({1, 2, 3, 4}, {2, 2}), t), {1});
    CHECK(r.dtype() == DType::F32);  // torch: torch.float32 [2.3132617473602295, 4.31326150894165]
    CHECK(r.to_vector<float>() == std::vector<float>{2.3132617473602295f, 4.31326150894165f});
  }
  Tensor b = logsumexp(ones({2, 2}, DType::Bool), {1});
  CHECK(b.dtype() == DType::F32);
  CHECK(b.to_vector<float>() == std::vector<float>{1.6931471824645996f, 1.6931471824645996f});
  // bf16/f16: the f32 result rounded once (torch's CPU bf16 kernel rounds every step: 0.20703125
  // for the second row, where the exact value 0.21258 rounds to 0.212890625).
  const Tensor xb = from_vector<float>({-1.25f, -0.30078125f, -2.0f, -0.5f, -1.5f, -0.8984375f}, {2, 3});
  for (DType t : {DType::BF16, DType::F16}) {
    INFO(dtype_name(t));
    Tensor r = logsumexp(cast(xb, t), {1});
    CHECK(r.dtype() == t);
    CHECK(testing::max_abs_diff(r, cast(logsumexp(xb, {1}), t)) == 0.0);
  }
  CHECK(logsumexp(cast(xb, DType::BF16), {1}).to_vector<double>()[1] == 0.212890625);
  CHECK_THROWS_WITH(logsumexp(zeros({2, 3}), {2}), Catch::Contains("logsumexp") && Catch::Contains("out of range"));
  CHECK_THROWS_WITH(logsumexp(zeros({2, 3}), {1, 1}), Catch::Contains("logsumexp") && Catch::Contains("multiple times"));
  CHECK_THROWS_WITH(logsumexp(Tensor(), {0}), Catch::Contains("logsumexp") && Catch::Contains("undefined"));
}

TEST_CASE("logsumexp's gradient is the softmax, and its second derivative matches", "[logsumexp]") {
  Tensor x = f64({1.0, 2.0, 3.0, -1.0, 0.5, 100.0}, {2, 3}).requires_grad_();
  Tensor g = autograd::grad({logsumexp(x, {1}).sum()}, {x}, autograd::GradOptions().create_graph(true))[0];
  // torch: [[0.0900305731703804346, 0.244728471054797586, 0.665240955774821674],
  //         [1.36853947117385291e-44, 6.13336839028609247e-44, 1]]
  check_values(g, {0.0900305731703804346, 0.244728471054797586, 0.665240955774821674, 1.36853947117385291e-44,
                   6.13336839028609247e-44, 1.0});
  CHECK(testing::max_abs_diff(g, softmax(x.detach(), 1)) < 4 * kEps64);
}

// ------------------------------------------------------------------- gradient and target tables

namespace {
// Silences the broadcast warnings of the table's broadcasting cases (called many times).
struct QuietWarnings {
  WarningHandler previous = set_warning_handler([](const std::string&) {});
  ~QuietWarnings() { set_warning_handler(previous); }
};

const std::vector<GradCase>& cases() {
  static const std::vector<GradCase> c = [] {
    std::vector<GradCase> v = {
        {"smooth_l1_loss mean", {{3, 4}, {3, 4}}, [](const TL& in) { return smooth_l1_loss(in[0], in[1]); }},
        {"smooth_l1_loss beta 0.5 sum", {{3, 4}, {3, 4}},
         [](const TL& in) { return smooth_l1_loss(in[0], in[1], Reduction::Sum, 0.5); }},
        {"smooth_l1_loss beta 0 none", {{3, 4}, {3, 4}},
         [](const TL& in) { return smooth_l1_loss(in[0], in[1], Reduction::None, 0.0); }},
        {"smooth_l1_loss broadcast target", {{3, 4}, {4}},
         [](const TL& in) { return smooth_l1_loss(in[0], in[1], Reduction::None, 1.5); }},
        {"huber_loss mean", {{3, 4}, {3, 4}}, [](const TL& in) { return huber_loss(in[0], in[1]); }},
        {"huber_loss delta 0.3 none", {{3, 4}, {3, 4}},
         [](const TL& in) { return huber_loss(in[0], in[1], Reduction::None, 0.3); }},
        {"huber_loss broadcast sum", {{2, 3}, {2, 1}},
         [](const TL& in) { return huber_loss(in[0], in[1], Reduction::Sum, 1.5); }},
        {"logsumexp dim 1", {{3, 4}}, [](const TL& in) { return logsumexp(in[0], {1}); }},
        {"logsumexp dims 0 2 keepdim", {{2, 3, 2}}, [](const TL& in) { return logsumexp(in[0], {0, 2}, true); }},
        {"logsumexp all dims", {{3, 4}}, [](const TL& in) { return logsumexp(in[0], {}); }},
        {"logsumexp 0-dim", {{}}, [](const TL& in) { return logsumexp(in[0], {0}); }},
        {"logsumexp of scaled inputs", {{2, 5}}, [](const TL& in) { return logsumexp(mul(in[0], 30.0), {1}); }},
    };
    // kl_div: targets in [0.1, 2] (the log of the target is differentiated).
    auto kl = [](std::string name, std::vector<Shape> shapes, testing::TensorFn fn) {
      GradCase g{std::move(name), std::move(shapes), std::move(fn)};
      g.lo = 0.1;
      g.hi = 2.0;
      return g;
    };
    v.push_back(kl("kl_div batchmean", {{3, 4}, {3, 4}},
                   [](const TL& in) { return kl_div(in[0], in[1], KLDivReduction::BatchMean); }));
    v.push_back(kl("kl_div sum of distributions", {{3, 4}, {3, 4}}, [](const TL& in) {
      return kl_div(log_softmax(in[0], 1), softmax(in[1], 1), KLDivReduction::Sum);
    }));
    v.push_back(kl("kl_div log_target none", {{3, 4}, {3, 4}},
                   [](const TL& in) { return kl_div(in[0], neg(in[1]), KLDivReduction::None, true); }));
    v.push_back(kl("kl_div broadcast batchmean", {{4}, {2, 4}},
                   [](const TL& in) { return kl_div(in[0], in[1], KLDivReduction::BatchMean); }));
    return v;
  }();
  return c;
}
}  // namespace

TEST_CASE("new losses and logsumexp: f64 gradient checks, first and second order, on every device", "[gradcheck][loss]") {
  QuietWarnings quiet;
  for (const Target& t : testing::gradcheck_targets())
    for (const GradCase& c : cases()) {
      INFO("case: " << c.name << " on " << t.name());
      CHECK(testing::run_on(t, c.name, [&] { return testing::run_case(c, t.dev()); }) == "");
    }
}

// f32/f16/bf16 on the CPU, and every CUDA target, against the f64 CPU: outputs and gradients
// within the dtype-derived tolerance (the CUDA targets are skipped without a GPU).
TEST_CASE("new losses and logsumexp: every (device, dtype) target agrees with the f64 CPU result", "[gradcheck][loss][cuda]") {
  QuietWarnings quiet;
  for (const Target& t : testing::reference_targets())
    for (const GradCase& c : cases()) {
      INFO("case: " << c.name << " on " << t.name());
      CHECK(testing::run_on(t, c.name, [&] { return testing::check_against_reference(c, t); }) == "");
    }
}

// ---------------------------------------------------------------------------------- autocast

TEST_CASE("under CPU bf16 autocast the losses return f32 computed from the bf16 values; logsumexp stays bf16",
          "[amp][loss]") {
  const Tensor xb = cast(from_vector<float>({0.3f, -1.7f, 2.2f, 0.05f, 0.9f, -0.4f}, {2, 3}), DType::BF16);
  const Tensor yb = cast(from_vector<float>({0.1f, 0.2f, -0.3f, 1.5f, 0.0f, 0.25f}, {2, 3}), DType::BF16);
  const Tensor lp = cast(from_vector<float>({-1.25f, -0.3f, -2.0f, -0.5f, -1.5f, -0.9f}, {2, 3}), DType::BF16);
  const Tensor p = cast(from_vector<float>({0.2f, 0.0f, 0.8f, 0.5f, 0.25f, 0.25f}, {2, 3}), DType::BF16);
  const Tensor x32 = cast(xb, DType::F32), y32 = cast(yb, DType::F32), lp32 = cast(lp, DType::F32), p32 = cast(p, DType::F32);
  Tensor sl1, hub, kl, lse;
  {
    amp::autocast scope(DeviceType::CPU);
    sl1 = smooth_l1_loss(xb, yb);
    hub = huber_loss(xb, yb, Reduction::Mean, 0.5);
    kl = kl_div(lp, p, KLDivReduction::BatchMean);
    lse = logsumexp(lp, {1});
  }
  CHECK(sl1.dtype() == DType::F32);
  CHECK(hub.dtype() == DType::F32);
  CHECK(kl.dtype() == DType::F32);
  CHECK(lse.dtype() == DType::BF16);
  // torch 1.13 under autocast: 0.832068920135498, 0.5163566470146179, 0.5808905363082886 (each
  // equal to the f32 op on the bf16 values, as here).
  CHECK(sl1.item() == smooth_l1_loss(x32, y32).item());
  CHECK(hub.item() == huber_loss(x32, y32, Reduction::Mean, 0.5).item());
  CHECK(kl.item() == kl_div(lp32, p32, KLDivReduction::BatchMean).item());
  CHECK(sl1.item() == Approx(0.832068920135498).epsilon(4 * traits(DType::F32).eps));
  CHECK(hub.item() == Approx(0.5163566470146179).epsilon(4 * traits(DType::F32).eps));
  CHECK(kl.item() == Approx(0.5808905363082886).epsilon(4 * traits(DType::F32).eps));
  // Gradients come back in the inputs' dtype.
  Tensor xg = xb.clone().requires_grad_();
  {
    amp::autocast scope(DeviceType::CPU);
    sl1 = huber_loss(xg, yb);
  }
  sl1.backward();
  CHECK(xg.grad().dtype() == DType::BF16);
  // f16 under CPU autocast with an f16 dtype: f32 results too.
  {
    amp::autocast scope(DeviceType::CPU, DType::F16);
    CHECK(smooth_l1_loss(cast(x32, DType::F16), cast(y32, DType::F16)).dtype() == DType::F32);
    CHECK(kl_div(cast(lp32, DType::F16), cast(p32, DType::F16), KLDivReduction::Sum).dtype() == DType::F32);
  }
}

// ------------------------------------------------------------------------------------- modules

TEST_CASE("SmoothL1Loss, HuberLoss and KLDivLoss modules: options, forward and describe", "[nn][loss]") {
  const Tensor x = f64(kX), y = f64(kY);
  nn::SmoothL1Loss sl1;
  CHECK(sl1.describe() == "SmoothL1Loss(reduction=mean)");
  check_value(sl1(x, y), 0.6091666666666666);
  nn::SmoothL1Loss sl1b(nn::SmoothL1LossOptions().beta(0.5).reduction(Reduction::Sum));
  CHECK(sl1b.describe() == "SmoothL1Loss(reduction=sum, beta=0.5)");
  check_value(sl1b(x, y), 4.859999999999999);
  nn::HuberLoss hub(nn::HuberLossOptions().delta(2.0));
  CHECK(hub.describe() == "HuberLoss(reduction=mean, delta=2)");
  check_value(hub(x, y), 0.7758333333333333);
  CHECK(nn::HuberLoss().describe() == "HuberLoss(reduction=mean)");
  nn::KLDivLoss kl(nn::KLDivLossOptions().reduction(KLDivReduction::BatchMean).log_target(true));
  CHECK(kl.describe() == "KLDivLoss(reduction=batchmean, log_target=true)");
  check_value(kl(f64(kLogP, {2, 3}), f64(kLogQ, {2, 3})), 0.5072069525175017);
  CHECK(nn::KLDivLoss().describe() == "KLDivLoss(reduction=mean)");
  CHECK(nn::KLDivLoss().options.reduction_ == KLDivReduction::Mean);  // torch's default
  CHECK(nn::reduction_name(KLDivReduction::BatchMean) == std::string("batchmean"));
  // Clones keep their options; none of the three has parameters or buffers.
  CHECK(hub.clone_structure()->describe() == "HuberLoss(reduction=mean, delta=2)");
  CHECK(kl.clone_structure()->describe() == kl.describe());
  CHECK(kl.parameters().empty());
  CHECK(nn::functional::kl_div(f64(kLogP, {2, 3}), f64(kLogQ, {2, 3}), KLDivReduction::Sum, true).item() ==
        kl_div(f64(kLogP, {2, 3}), f64(kLogQ, {2, 3}), KLDivReduction::Sum, true).item());
  CHECK(nn::functional::huber_loss(x, y, Reduction::Sum, 0.5).item() == huber_loss(x, y, Reduction::Sum, 0.5).item());
  CHECK(nn::functional::smooth_l1_loss(x, y).item() == smooth_l1_loss(x, y).item());
  CHECK_THROWS_WITH(nn::SmoothL1Loss(nn::SmoothL1LossOptions().beta(-1)), Catch::Contains("SmoothL1Loss: beta"));
  CHECK_THROWS_WITH(nn::HuberLoss(nn::HuberLossOptions().delta(0)), Catch::Contains("HuberLoss: delta"));
}

// ---------------------------------------------------------------------------------------- CUDA

namespace cuda_side {
using namespace minidl::cuda_test;

// Each op on a CPU and a device copy of the same values (special values included), forward
// (unreduced) and backward with the same incoming gradient. Both sides round each part's f32 result
// into the dtype, so they differ only where the two math libraries' exp/log differ by an ulp and
// that flips a rounding; kl_div then subtracts terms up to `scale` in size (|t x| with |t|, |x| up
// to about 6), so its absolute tolerance is that of `scale`.
struct DeviceCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> fn;
  bool positive_target = false;
  double scale = 1.0;
};

const std::vector<DeviceCase>& device_cases() {
  static const std::vector<DeviceCase> c = {
      {"smooth_l1_loss", [](const Tensor& a, const Tensor& b) { return smooth_l1_loss(a, b, Reduction::None, 0.7); }},
      {"smooth_l1_loss beta 0", [](const Tensor& a, const Tensor& b) { return smooth_l1_loss(a, b, Reduction::None, 0.0); }},
      {"huber_loss", [](const Tensor& a, const Tensor& b) { return huber_loss(a, b, Reduction::None, 0.7); }},
      {"kl_div", [](const Tensor& a, const Tensor& b) { return kl_div(a, b, KLDivReduction::None); }, true, 40.0},
      {"kl_div log_target",  // log-probability targets (<= 0), so exp(target) <= 1
       [](const Tensor& a, const Tensor& b) { return kl_div(a, neg(abs(b)), KLDivReduction::None, true); }, false, 40.0},
      {"logsumexp dim 1", [](const Tensor& a, const Tensor&) { return logsumexp(a, {1}); }},
      {"logsumexp dims 0 1 keepdim", [](const Tensor& a, const Tensor&) { return logsumexp(a, {0, 1}, true); }},
  };
  return c;
}
}  // namespace cuda_side

TEST_CASE("cuda: smooth_l1, huber, kl_div and logsumexp agree with the CPU, special values included", "[cuda][loss]") {
  using namespace minidl::cuda_test;
  MINIDL_REQUIRE_GPU();
  for (DType t : kFloat64) {
    Tensor x0 = randn_cpu({9, 40}, t, 11, 2.0), y0 = randn_cpu({9, 40}, t, 12, 2.0);
    // Row 1: inf, -inf, NaN inputs; row 2 of x all -inf (logsumexp's -inf slice); zero targets.
    x0.select(0, 1).slice(0, 0, 1).fill_(kInf);
    x0.select(0, 1).slice(0, 1, 2).fill_(-kInf);
    x0.select(0, 1).slice(0, 2, 3).fill_(kNaN);
    x0.select(0, 2).fill_(-kInf);
    for (const cuda_side::DeviceCase& c : cuda_side::device_cases()) {
      std::string what = std::string(c.name) + " " + dtype_name(t);
      INFO(what);
      Tensor yv = c.positive_target ? abs(y0) : y0;
      if (c.positive_target) yv.select(0, 3).slice(0, 0, 5).fill_(0.0);
      Tensor hx = leaf_on_cpu(x0), dx = leaf_on_device(x0);
      Tensor hy = leaf_on_cpu(yv), dy = leaf_on_device(yv);
      Tensor hl = c.fn(hx, hy), dl = c.fn(dx, dy);
      REQUIRE(dl.device() == kCuda);
      const double tol = is_low_precision(t) ? 4 * eps_of(t) : 64 * eps_of(t), atol = tol * c.scale;
      check_close(dl, hl, tol, atol, what + " forward");
      Tensor g = randn_cpu(hl.shape(), t, 13);
      hl.backward(g);
      dl.backward(g.to(kCuda));
      check_close(dx.grad(), hx.grad(), 2 * tol, 2 * atol, what + " input gradient");
      if (hy.grad().defined()) check_close(dy.grad(), hy.grad(), 2 * tol, 2 * atol, what + " target gradient");
    }
  }
  // Reductions on the device, and CUDA autocast: f16 inputs give f32 results for all four.
  Tensor a = randn_cpu({6, 7}, DType::F32, 21), b = randn_cpu({6, 7}, DType::F32, 22);
  check_close(smooth_l1_loss(a.to(kCuda), b.to(kCuda)), smooth_l1_loss(a, b), 1e-5, 1e-6, "smooth_l1_loss mean");
  check_close(kl_div(a.to(kCuda), abs(b).to(kCuda), KLDivReduction::BatchMean), kl_div(a, abs(b), KLDivReduction::BatchMean),
              1e-5, 1e-6, "kl_div batchmean");
  if (kCuda.is_cuda()) {
    amp::autocast scope(DeviceType::CUDA);
    Tensor ah = cast(a, DType::F16).to(kCuda), bh = cast(b, DType::F16).to(kCuda);
    CHECK(smooth_l1_loss(ah, bh).dtype() == DType::F32);
    CHECK(huber_loss(ah, bh).dtype() == DType::F32);
    CHECK(kl_div(ah, abs(bh), KLDivReduction::Sum).dtype() == DType::F32);
    CHECK(logsumexp(ah, {1}).dtype() == DType::F32);
  }
}
