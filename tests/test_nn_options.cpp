// PyTorch's layer options beyond the defaults, against torch 1.13's numbers (probed with
// /usr/bin/python3, kept here as literals): BatchNorm1d/2d with track_running_stats=False,
// affine=False and momentum=None (state dicts, save/load, clone_structure, describe()), the
// functional batch_norm with eps=0 (values, gradients, gradient checks in f64), and avg_pool2d /
// AvgPool2d with divisor_override (forward, backward, gradient checks in f64, f16/bf16 with
// dtype-derived tolerances).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gradcheck.h"
#include "minidl.h"
#include "temp_dir.h"

using namespace minidl;
using minidl::testing::GradCase;
using TL = std::vector<Tensor>;

namespace {

std::vector<double> values(const Tensor& t) { return t.detach().to(Device::cpu()).to_vector<double>(); }

// |got - want| <= rel * max(1, |want|) everywhere, NaN matching NaN and infinities matching exactly.
void check_values(const Tensor& got, const std::vector<double>& want, double rel, const std::string& what) {
  INFO(what << ": " << got.meta_str());
  const std::vector<double> g = values(got);
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", want " << want[i]);
    if (std::isnan(want[i]) || std::isinf(want[i])) {
      CHECK((std::isnan(want[i]) ? std::isnan(g[i]) : g[i] == want[i]));
      continue;
    }
    CHECK(std::abs(g[i] - want[i]) <= rel * std::max(1.0, std::abs(want[i])));
  }
}

// A few roundings of the dtype's arithmetic (f16/bf16 compute in f32 and round once).
double tol_of(DType t) { return t == DType::F64 ? 16 * traits(DType::F64).eps : 16 * traits(DType::F32).eps; }

Tensor leaf(const std::vector<double>& v, const Shape& shape, DType dt) {
  return from_vector(v, shape).to(dt).requires_grad_();
}

std::vector<std::string> keys_of(const nn::Module& m) { return m.state_dict().keys(); }

// ---- BatchNorm: one batch of 4 rows x 3 channels (channel 2 constant), weight, bias and gy.
const std::vector<double> kX = {1, 2, 0.5, 2, 0, 0.5, 3, 5, 0.5, 6, 1, 0.5};
const std::vector<double> kW = {2, 0.5, 1.5}, kB = {1, -1, 0.25};
const std::vector<double> kGy = {1, 2, 3, 3, 4, -1, 5, -6, 2, 7, 8, 0.5};

void set_affine(nn::BatchNorm& bn, DType dt) {
  NoGradGuard ng;
  bn.weight.copy_(from_vector(kW).to(dt));
  bn.bias.copy_(from_vector(kB).to(dt));
}

}  // namespace

// ======================================================================== BatchNorm options

TEST_CASE("BatchNorm without running statistics uses the batch statistics in training and evaluation, as PyTorch",
          "[nn][batchnorm][options]") {
  // torch.nn.BatchNorm1d(3, track_running_stats=False) in eval mode, x, weight, bias, gy above.
  const std::vector<double> y = {-1.1380868808917473, -0.9999999999999999, 0.25, -0.06904344044587374,
                                 -1.5345217202229366, 0.25, 0.9999999999999998, -0.19821741966559475,
                                 0.25, 4.207130321337621, -1.2672608601114683, 0.25};
  const std::vector<double> gx = {-0.7636094389495736, 0.0, 889.3905919223565, 0.15271700074814995,
                                  -0.7635987485457133, -1007.9760041786709, 1.0690434404458735, -0.19090617773877178,
                                  415.0489428970998, -0.4581510022444499, 0.9545049262844852, -296.4635306407855};
  const std::vector<double> gw = {8.552347523566988, -18.17373848757985, 0.0}, gb = {16.0, 8.0, 4.5};
  for (DType dt : {DType::F64, DType::F32}) {
    INFO(dtype_name(dt));
    nn::BatchNorm1d bn(3, 1e-5, 0.1, true, /*track_running_stats=*/false);
    bn.to(dt);
    set_affine(bn, dt);
    CHECK(bn.describe() == "BatchNorm1d(3, eps 1e-05, momentum 0.1, affine, track_running_stats false)");
    CHECK(keys_of(bn) == std::vector<std::string>{"weight", "bias"});
    CHECK(bn.buffers().empty());
    CHECK_FALSE(bn.running_mean.defined());
    CHECK_FALSE(bn.running_var.defined());
    CHECK_FALSE(bn.num_batches_tracked.defined());
    bn.eval();
    Tensor x = leaf(kX, {4, 3}, dt);
    Tensor out = bn.forward(x);
    out.backward(from_vector(kGy, {4, 3}).to(dt));
    check_values(out, y, tol_of(dt), "output");
    check_values(x.grad(), gx, tol_of(dt), "grad x");
    check_values(bn.weight.grad(), gw, tol_of(dt), "grad weight");
    check_values(bn.bias.grad(), gb, tol_of(dt), "grad bias");
    bn.train();
    CHECK(values(bn.forward(x)) == values(out));  // the same statistics either way
  }
}

TEST_CASE("BatchNorm's state dict, save/load, clone_structure and describe follow affine and track_running_stats",
          "[nn][batchnorm][options][serialize]") {
  // As PyTorch's state_dict(): running statistics only when tracked, weight and bias only when affine.
  CHECK(keys_of(nn::BatchNorm2d(2, 1e-5, 0.1, false)) ==
        std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"});
  CHECK(keys_of(nn::BatchNorm2d(2, 1e-5, 0.1, false, false)).empty());
  CHECK(nn::BatchNorm2d(2, 1e-5, 0.1, false).parameters().empty());
  CHECK(nn::BatchNorm2d(2, 1e-3, std::nullopt, false, false).describe() ==
        "BatchNorm2d(2, eps 0.001, momentum None, track_running_stats false)");
  CHECK(nn::BatchNorm2d(2, 1e-5, 0.1, false).describe() == "BatchNorm2d(2, eps 1e-05, momentum 0.1)");

  // Neither affine nor tracked: the functional batch_norm with batch statistics, in eval mode too.
  nn::BatchNorm2d plain(2, 1e-3, std::nullopt, false, false);
  plain.eval();
  Tensor x4 = randn({3, 2, 2, 2}, DType::F64);
  CHECK(values(plain.forward(x4)) == values(batch_norm(x4, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, 1e-3)));

  // Loading across the two configurations fails naming the keys, in PyTorch's words.
  nn::BatchNorm1d tracked(2), untracked(2, 1e-5, 0.1, true, false);
  CHECK_THROWS_WITH(untracked.load_state_dict(tracked.state_dict()),
                    Catch::Contains("Unexpected key(s) in state_dict: \"running_mean\", \"running_var\", \"num_batches_tracked\""));
  CHECK_THROWS_WITH(tracked.load_state_dict(untracked.state_dict()),
                    Catch::Contains("Missing key(s) in state_dict: \"running_mean\", \"running_var\", \"num_batches_tracked\""));

  // save/load round trip of a model holding an untracked BatchNorm.
  auto make = [] {
    return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 4),
                                            std::make_shared<nn::BatchNorm1d>(4, 1e-5, 0.1, true, false));
  };
  manual_seed(3);
  auto a = make();
  {
    NoGradGuard ng;
    for (const Tensor& p : a->parameters()) p.copy_(randn(p.shape()));
  }
  TempDir dir;
  nn::save(a, dir.file("bn.safetensors"));
  auto b = make();
  nn::load(b, dir.file("bn.safetensors"));
  CHECK(keys_of(*b) == std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"});
  a->eval();
  b->eval();
  Tensor x = randn({5, 3});
  CHECK(values(a->forward(x)) == values(b->forward(x)));

  // clone_structure keeps every option.
  for (const auto& bn : {std::make_shared<nn::BatchNorm1d>(4, 1e-3, std::nullopt, false, false),
                         std::make_shared<nn::BatchNorm1d>(4, 1e-5, 0.2, true, false)}) {
    nn::ModulePtr c = bn->clone_structure();
    CHECK(c->describe() == bn->describe());
    CHECK(keys_of(*c) == keys_of(*bn));
  }
}

TEST_CASE("BatchNorm2d with momentum None averages the statistics of every batch, as PyTorch", "[nn][batchnorm][options]") {
  nn::BatchNorm2d bn(2, 1e-5, std::nullopt);
  bn.to(DType::F64);
  const std::vector<std::vector<double>> batches = {{1, 2, 3, 4, 0, 0, 1, -1}, {5, -2, 0.5, 4, 2, 2, 2, 3}, {0, 0, 0, 1, -3, 1, 7, 0}};
  for (const auto& b : batches) bn.forward(from_vector(b, {1, 2, 2, 2}));
  // torch: running_mean, running_var after three batches, num_batches_tracked 3, then eval on batch 0.
  check_values(bn.running_mean, {1.5416666666666667, 1.1666666666666667}, 1e-15, "running_mean");
  check_values(bn.running_var, {4.104166666666667, 6.166666666666666}, 1e-15, "running_var");
  CHECK(bn.num_batches_tracked.item_int() == 3);
  bn.eval();
  check_values(bn.forward(from_vector(batches[0], {1, 2, 2, 2})),
               {-0.26737394694710204, 0.22623949357062478, 0.7198529340883516, 1.2134663746060785, -0.46980885772387065,
                -0.46980885772387065, -0.06711555110341011, -0.8725021643443311},
               1e-14, "eval output");
}

TEST_CASE("batch_norm takes eps = 0 as PyTorch: a constant channel normalizes to its bias with a zero gradient",
          "[norm][batchnorm][options]") {
  // torch.nn.functional.batch_norm(x, None, None, w, b, training=True, eps=0.0) on the batch above;
  // channel 2 is constant: PyTorch's invstd is 0 there (not 1/sqrt(0)).
  struct Want {
    DType dt;
    std::vector<double> y, gx, gw;
  };
  const std::vector<Want> wants = {
      {DType::F64,
       {-1.1380899352993952, -1.0, 0.25, -0.06904496764969759, -1.5345224838248488, 0.25, 1.0, -0.1982162742627268, 0.25,
        4.207134902949093, -1.2672612419124243, 0.25},
       {-0.7636035483212122, 0.0, 0.0, 0.15272070966424267, -0.7636035483212127, -0.0, 1.0690449676496976,
        -0.19090088708030295, 0.0, -0.4581621289927278, 0.9545044354015156, -0.0},
       {8.55235974119758, -18.17376445004486, 0.0}},
      {DType::F32,
       {-1.1380897760391235, -1.0, 0.25, -0.06904482841491699, -1.534522533416748, 0.25, 1.0000001192092896,
        -0.19821634888648987, 0.25, 4.207135200500488, -1.267261266708374, 0.25},
       {-0.763603687286377, 0.0, 0.0, 0.1527206301689148, -0.7636034488677979, -0.0, 1.0690449476242065,
        -0.1909010410308838, 0.0, -0.4581618905067444, 0.9545044898986816, -0.0},
       {8.552359580993652, -18.173763275146484, 0.0}},
  };
  for (const Want& want : wants) {
    for (bool create_graph : {false, true}) {
      INFO(dtype_name(want.dt) << (create_graph ? " create_graph (the backward as ops)" : " fused backward"));
      Tensor x = leaf(kX, {4, 3}, want.dt), w = leaf(kW, {3}, want.dt), b = leaf(kB, {3}, want.dt);
      Tensor y = batch_norm(x, Tensor(), Tensor(), w, b, true, 0.1, 0.0);
      check_values(y, want.y, tol_of(want.dt), "output");
      const Tensor gy = from_vector(kGy, {4, 3}).to(want.dt);
      const TL g = autograd::grad({y}, {x, w, b}, {gy}, /*retain_graph=*/true, create_graph);
      check_values(g[0], want.gx, tol_of(want.dt), "grad x");
      check_values(g[1], want.gw, tol_of(want.dt), "grad weight");
      check_values(g[2], {16, 8, 4.5}, 0, "grad bias");
    }
  }
  // The module takes it too; eval divides by sqrt(running_var + 0): a zero variance gives NaN (0 * inf), as PyTorch.
  nn::BatchNorm1d bn(3, 0.0);
  CHECK(bn.describe() == "BatchNorm1d(3, eps 0, momentum 0.1, affine)");
  check_values(bn.forward(from_vector(kX, {4, 3}).to(DType::F32)).select(1, 2), {0, 0, 0, 0}, 0, "module, constant channel");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  check_values(batch_norm(from_vector(kX, {4, 3}), zeros({3}, DType::F64), zeros({3}, DType::F64), Tensor(), Tensor(), false, 0.1, 0.0),
               std::vector<double>(12, nan), 0, "eval with zero running variance");
  // A negative or NaN eps is refused (PyTorch does not check; the square root would be NaN).
  for (double eps : {-1e-5, nan})
    CHECK_THROWS_WITH(batch_norm(from_vector(kX, {4, 3}), Tensor(), Tensor(), Tensor(), Tensor(), true, 0.1, eps),
                      Catch::Contains("batch_norm") && Catch::Contains("eps must be non-negative"));
}

TEST_CASE("batch_norm with eps = 0: finite-difference gradient checks in f64, first and second order", "[norm][batchnorm][grad]") {
  auto sq = [](const Tensor& t) { return mul(t, t); };
  const std::vector<GradCase> cases = {
      {.name = "train 4-D x, w, b", .shapes = {{3, 2, 3, 2}, {2}, {2}},
       .fn = [](const TL& v) { return batch_norm(v[0], Tensor(), Tensor(), v[1], v[2], true, 0.1, 0.0); }},
      {.name = "train 2-D squared, running stats", .shapes = {{5, 3}, {3}, {3}},
       .fn = [sq](const TL& v) {
         return sq(batch_norm(v[0], zeros({3}, DType::F64), ones({3}, DType::F64), v[1], v[2], true, 0.1, 0.0));
       }},
      {.name = "batch_norm_relu train", .shapes = {{4, 2, 3}, {2}, {2}},
       .fn = [](const TL& v) { return batch_norm_relu(v[0], Tensor(), Tensor(), v[1], v[2], true, 0.1, 0.0); }},
  };
  for (const GradCase& c : cases) {
    INFO(c.name);
    CHECK(testing::run_case(c) == "");
  }
}

// ======================================================================== avg_pool2d divisor_override

TEST_CASE("avg_pool2d with divisor_override divides every window by it, forward and backward, as PyTorch",
          "[pool][options]") {
  // x = arange(1, 26) as [1, 1, 5, 5] in f64, gy = arange(1, numel + 1); torch's output and x.grad.
  struct Case {
    Size2 k, s, p;
    bool ceil_mode, count_include_pad;
    int64_t divisor;
    std::vector<double> y, gx;
  };
  const std::vector<Case> cases = {
      {{2, 2}, {0, 0}, {0, 0}, false, true, 3, {5.333333333333333, 8.0, 18.666666666666668, 21.333333333333332},
       {0.3333333333333333, 0.3333333333333333, 0.6666666666666666, 0.6666666666666666, 0.0, 0.3333333333333333,
        0.3333333333333333, 0.6666666666666666, 0.6666666666666666, 0.0, 1.0, 1.0, 1.3333333333333333, 1.3333333333333333,
        0.0, 1.0, 1.0, 1.3333333333333333, 1.3333333333333333, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}},
      {{3, 3}, {2, 2}, {1, 1}, false, true, 2, {8.0, 16.5, 14.0, 34.5, 58.5, 43.5, 38.0, 61.5, 44.0},
       {0.5, 1.5, 1.0, 2.5, 1.5, 2.5, 6.0, 3.5, 8.0, 4.5, 2.0, 4.5, 2.5, 5.5, 3.0, 5.5, 12.0, 6.5, 14.0, 7.5, 3.5, 7.5, 4.0, 8.5, 4.5}},
      // count_include_pad false and ceil_mode change nothing: the override wins.
      {{3, 3}, {2, 2}, {1, 1}, true, false, 5, {3.2, 6.6, 5.6, 13.8, 23.4, 17.4, 15.2, 24.6, 17.6},
       {0.2, 0.6000000000000001, 0.4, 1.0, 0.6, 1.0, 2.4000000000000004, 1.4, 3.2, 1.7999999999999998, 0.8, 1.8, 1.0, 2.2,
        1.2, 2.2, 4.800000000000001, 2.6, 5.6000000000000005, 3.0, 1.4, 3.0, 1.6, 3.4000000000000004, 1.8}},
      // A negative divisor is taken as it is.
      {{2, 2}, {0, 0}, {0, 0}, false, true, -2, {-8.0, -12.0, -28.0, -32.0},
       {-0.5, -0.5, -1.0, -1.0, 0.0, -0.5, -0.5, -1.0, -1.0, 0.0, -1.5, -1.5, -2.0, -2.0, 0.0, -1.5, -1.5, -2.0, -2.0, 0.0,
        0.0, 0.0, 0.0, 0.0, 0.0}},
  };
  std::vector<double> xs(25);
  for (int i = 0; i < 25; ++i) xs[i] = i + 1;
  for (const Case& c : cases) {
    INFO("kernel " << c.k[0] << " stride " << c.s[0] << " padding " << c.p[0] << " divisor " << c.divisor);
    Tensor x = leaf(xs, {1, 1, 5, 5}, DType::F64);
    Tensor y = avg_pool2d(x, c.k, c.s, c.p, c.ceil_mode, c.count_include_pad, c.divisor);
    check_values(y, c.y, 0, "output");
    std::vector<double> g(static_cast<size_t>(y.numel()));
    for (size_t i = 0; i < g.size(); ++i) g[i] = static_cast<double>(i + 1);
    y.backward(from_vector(g, y.shape()));
    check_values(x.grad(), c.gx, 4 * traits(DType::F64).eps, "grad x");
  }
  // f32, batched and unbatched ([C, H, W]): torch's f32 results.
  Tensor xf = from_vector<float>({0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f}, {1, 1, 3, 3});
  check_values(avg_pool2d(xf, {2, 2}, {1, 1}, {0, 0}, false, true, 3),
               {0.4000000059604645, 0.5333333611488342, 0.7999999523162842, 0.9333333969116211}, 0, "f32");
  Tensor xu = from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3});
  Tensor yu = avg_pool2d(xu, {2, 2}, {1, 1}, {0, 0}, false, true, 3);
  CHECK(yu.shape() == Shape{1, 2, 2});
  check_values(yu, {4.0, 5.333333492279053, 8.0, 9.333333015441895}, 0, "f32 unbatched");
  // Zero is refused, naming the op, in PyTorch's words.
  CHECK_THROWS_WITH(avg_pool2d(xf, {2, 2}, {0, 0}, {0, 0}, false, true, 0),
                    Catch::Contains("avg_pool2d") && Catch::Contains("divisor must be not zero"));
}

TEST_CASE("avg_pool2d with divisor_override in f16 and bf16 against f64", "[pool][options][low_precision]") {
  Tensor x = randn({2, 3, 7, 6}, DType::F64);
  Tensor gy64 = randn({2, 3, 4, 3}, DType::F64);
  for (DType dt : {DType::F16, DType::BF16}) {
    INFO(dtype_name(dt));
    // Both sides from the same rounded inputs; the low-precision side sums in f32 and rounds once.
    Tensor xl = x.to(dt).requires_grad_(), xr = xl.detach().to(DType::F64).requires_grad_();
    Tensor gy = gy64.to(dt);
    Tensor yl = avg_pool2d(xl, {3, 3}, {2, 2}, {1, 1}, false, true, 5);
    // f64 reference without the override: every window's own divisor is 9 here (count_include_pad
    // without ceil_mode), so dividing by 5 instead scales the plain average by 9/5.
    Tensor yr = mul(avg_pool2d(xr, {3, 3}, {2, 2}, {1, 1}), 9.0 / 5.0);
    yl.backward(gy);
    yr.backward(gy.to(DType::F64));
    CHECK(yl.dtype() == dt);
    CHECK(xl.grad().dtype() == dt);
    // Values are O(1) sums of at most 9 terms: half an ulp of the output plus f32 roundings.
    const double tol = 0.5 * traits(dt).eps + 16 * traits(DType::F32).eps;
    check_values(yl, values(yr), tol * 4, "output");
    check_values(xl.grad(), values(xr.grad()), tol * 4, "grad x");
  }
}

TEST_CASE("avg_pool2d with divisor_override: finite-difference gradient checks in f64, first and second order",
          "[pool][options][grad]") {
  const std::vector<GradCase> cases = {
      {.name = "k3 s2 p1 divisor 7", .shapes = {{2, 2, 5, 6}},
       .fn = [](const TL& v) { return avg_pool2d(v[0], {3, 3}, {2, 2}, {1, 1}, false, true, 7); }},
      {.name = "k2 ceil, no count_include_pad, divisor -3, squared", .shapes = {{1, 3, 5, 5}},
       .fn = [](const TL& v) {
         Tensor y = avg_pool2d(v[0], {2, 2}, {2, 2}, {1, 1}, true, false, -3);
         return mul(y, y);
       }},
  };
  for (const GradCase& c : cases) {
    INFO(c.name);
    CHECK(testing::run_case(c) == "");
  }
}

TEST_CASE("nn::AvgPool2d takes divisor_override: forward, describe and clone_structure", "[nn][pool][options]") {
  nn::AvgPool2d pool(3, 2, 1, false, true, 4);
  CHECK(pool.describe() == "AvgPool2d(3x3, stride 2, padding 1, divisor_override 4)");
  CHECK(pool.clone_structure()->describe() == pool.describe());
  CHECK(nn::AvgPool2d(2).describe() == "AvgPool2d(2x2, stride 2)");
  Tensor x = randn({2, 3, 7, 7});
  CHECK(values(pool.forward(x)) == values(avg_pool2d(x, {3, 3}, {2, 2}, {1, 1}, false, true, 4)));
  CHECK(values(pool.forward(x)) != values(avg_pool2d(x, {3, 3}, {2, 2}, {1, 1})));
  nn::AvgPool2d zero(2, 0, 0, false, true, 0);
  CHECK_THROWS_WITH(zero.forward(x), Catch::Contains("divisor must be not zero"));
}
