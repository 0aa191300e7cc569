// PyTorch's layer options beyond the defaults, against torch 1.13's numbers (probed with
// /usr/bin/python3, kept here as literals): BatchNorm1d/2d with track_running_stats=False,
// affine=False and momentum=None (state dicts, save/load, clone_structure, describe()), the
// functional batch_norm with eps=0, avg_pool2d / AvgPool2d with divisor_override (forward, backward,
// gradient checks in f64, f16/bf16 with dtype-derived tolerances), and clip_grad_norm_ returning
// the total norm as a 0-dim tensor in the gradients' dtype and scaling by a coefficient computed on
// the gradients' device ([cuda]: against the CPU, and without any host synchronisation).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cuda_checks.h"
#include "framework/cuda.h"
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
  // num_batches_tracked is not reported: a state dict without it loads with the count set to 0, as
  // PyTorch does for unversioned state dicts (minidl's carry no version).
  CHECK_THROWS_WITH(tracked.load_state_dict(untracked.state_dict()),
                    Catch::Contains("Missing key(s) in state_dict: \"running_mean\", \"running_var\". "));

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

// ======================================================================== clip_grad_norm_

namespace {
// Parameters whose gradients are the given values, in dtype dt on dev.
std::vector<Tensor> params_with_grads(const std::vector<std::vector<double>>& grads, DType dt, Device dev = Device::cpu()) {
  std::vector<Tensor> ps;
  for (const auto& g : grads) {
    Tensor p = zeros({static_cast<int64_t>(g.size())}, TensorOptions(dt).device(dev)).requires_grad_();
    p.set_grad(from_vector(g).to(dt).to(dev));
    ps.push_back(p);
  }
  return ps;
}
const std::vector<std::vector<double>> kGrads = {{0.3, -1.7, 2.2}, {0.05, 4.1}};
}  // namespace

TEST_CASE("clip_grad_norm_ returns the total norm as a 0-dim tensor in the gradients' dtype and clips as PyTorch",
          "[nn][clip][options]") {
  // torch.nn.utils.clip_grad_norm_(params, 1.25, norm_type) on the gradients kGrads: the total, then
  // the clipped gradients, flattened.
  struct Want {
    DType dt;
    double norm_type, total;
    std::vector<double> grads;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<Want> wants = {
      {DType::F32, 2.0, 4.963114261627197,
       {0.07555738091468811, -0.4281584918498993, 0.5540874600410461, 0.012592896819114685, 1.0326175689697266}},
      {DType::F32, 1.0, 8.350000381469727,
       {0.04491017758846283, -0.25449100136756897, 0.3293412923812866, 0.00748502928763628, 0.6137723922729492}},
      {DType::F32, 3.0, 4.388350009918213,
       {0.08545351773500443, -0.48423659801483154, 0.6266591548919678, 0.014242253266274929, 1.1678646802902222}},
      {DType::F32, inf, 4.099999904632568,
       {0.09146340191364288, -0.5182926058769226, 0.6707316040992737, 0.015243900008499622, 1.249999761581421}},
      {DType::F64, 2.0, 4.963113941871574,
       {0.07555738772767344, -0.4281585304568161, 0.5540875100029385, 0.01259289795461224, 1.0326176322782035}},
      {DType::F64, 1.0, 8.35,
       {0.04491017426225458, -0.2544909874861093, 0.32934127792320034, 0.007485029043709098, 0.6137723815841459}},
      {DType::F64, 3.0, 4.3883494295618295,
       {0.08545352200540722, -0.48423662469730755, 0.6266591613729863, 0.01424225366756787, 1.1678648007405652}},
      {DType::F64, inf, 4.1,
       {0.09146339232600187, -0.5182925565140106, 0.6707315437240138, 0.015243898721000314, 1.2499996951220256}},
  };
  for (const Want& w : wants) {
    INFO(dtype_name(w.dt) << " norm_type " << w.norm_type);
    std::vector<Tensor> ps = params_with_grads(kGrads, w.dt);
    const Tensor total = nn::utils::clip_grad_norm_(ps, 1.25, w.norm_type);
    CHECK(total.dim() == 0);
    CHECK(total.dtype() == w.dt);
    CHECK(total.device() == Device::cpu());
    CHECK_FALSE(total.requires_grad());
    // The norm accumulates in double and rounds once (PyTorch rounds each tensor's norm first).
    check_values(total, {w.total}, 2 * traits(w.dt).eps, "total");
    check_values(cat({ps[0].grad(), ps[1].grad()}), w.grads, 4 * traits(w.dt).eps, "clipped gradients");
    // grad_norm measures without clipping: the clipped gradients have norm total * coef.
    check_values(nn::utils::grad_norm(ps, w.norm_type), {w.total * (1.25 / (w.total + 1e-6))}, 8 * traits(w.dt).eps,
                 "grad_norm after clipping");
  }
  // Under the limit the coefficient is clamped to 1: the gradients keep their values.
  for (DType dt : {DType::F32, DType::F64}) {
    std::vector<Tensor> ps = params_with_grads(kGrads, dt);
    const std::vector<double> before = values(cat({ps[0].grad(), ps[1].grad()}));
    nn::utils::clip_grad_norm_(ps, 100.0);
    CHECK(values(cat({ps[0].grad(), ps[1].grad()})) == before);
  }
  // max_norm equal to the norm: PyTorch's coefficient (total + 1e-6).reciprocal() * max_norm < 1,
  // bit for bit (5 / (5 + 1e-6) would give 2.9999995231628418 for the first f32 element).
  std::vector<Tensor> pf = params_with_grads({{3, 4}}, DType::F32), pd = params_with_grads({{3, 4}}, DType::F64);
  CHECK(nn::utils::clip_grad_norm_(pf, 5.0).item() == 5.0);
  CHECK(nn::utils::clip_grad_norm_(pd, 5.0).item() == 5.0);
  check_values(pf[0].grad(), {2.9999992847442627, 3.9999990463256836}, 0, "f32, max_norm = total");
  check_values(pd[0].grad(), {2.99999940000012, 3.99999920000016}, 0, "f64, max_norm = total");
}

TEST_CASE("clip_grad_norm_ without gradients, with non-finite norms, mixed and low-precision dtypes, as PyTorch",
          "[nn][clip][options]") {
  // No gradients: torch.tensor(0.), an f32 CPU scalar.
  for (const std::vector<Tensor>& ps : {std::vector<Tensor>{}, std::vector<Tensor>{zeros({2}, DType::F64).requires_grad_()}}) {
    const Tensor t = nn::utils::clip_grad_norm_(ps, 1.0);
    CHECK(t.dim() == 0);
    CHECK(t.dtype() == DType::F32);
    CHECK(t.item() == 0.0);
    CHECK(nn::utils::grad_norm(ps).dtype() == DType::F32);
  }
  // Non-finite gradients: the norm and the coefficient 1.0 / (norm + 1e-6) are applied as they are.
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    double bad, norm_type, total;
    std::vector<double> grads;
  };
  for (const Case& c : {Case{nan, 2.0, nan, {nan, nan, nan}}, Case{inf, 2.0, inf, {0, nan, 0}},
                        Case{inf, nn::utils::kInfNorm, inf, {0, nan, 0}}, Case{nan, nn::utils::kInfNorm, nan, {nan, nan, nan}}}) {
    INFO("gradient " << c.bad << ", norm_type " << c.norm_type);
    std::vector<Tensor> ps = params_with_grads({{1, c.bad}, {2}}, DType::F32);
    check_values(nn::utils::clip_grad_norm_(ps, 1.0, c.norm_type), {c.total}, 0, "total");
    check_values(cat({ps[0].grad(), ps[1].grad()}), c.grads, 0, "gradients");
    // error_if_nonfinite: throws in PyTorch's words and leaves the gradients alone.
    std::vector<Tensor> qs = params_with_grads({{1, c.bad}, {2}}, DType::F32);
    CHECK_THROWS_WITH(nn::utils::clip_grad_norm_(qs, 1.0, c.norm_type, true),
                      Catch::Contains("clip_grad_norm_") && Catch::Contains("is non-finite, so it cannot be clipped"));
    check_values(cat({qs[0].grad(), qs[1].grad()}), {1, c.bad, 2}, 0, "gradients after the error");
  }
  // Mixed dtypes: the total in the promoted dtype; each gradient scaled by the coefficient in its own.
  std::vector<Tensor> mixed = params_with_grads({{12}}, DType::F32);
  mixed.push_back(params_with_grads({{3, 4}}, DType::F64)[0]);
  const Tensor t = nn::utils::clip_grad_norm_(mixed, 1.0);
  CHECK(t.dtype() == DType::F64);
  CHECK(t.item() == 13.0);
  check_values(mixed[0].grad(), {0.923076868057251}, 0, "f32 gradient");
  check_values(mixed[1].grad(), {0.23076921301775288, 0.3076922840236705}, 0, "f64 gradient");
  // bf16: torch's total 4.96875 and clipped gradients; f16 (PyTorch 1.13's CPU cannot clamp f16)
  // against the f64 computation from the same rounded gradients.
  std::vector<Tensor> pb = params_with_grads(kGrads, DType::BF16);
  const Tensor tb = nn::utils::clip_grad_norm_(pb, 1.25);
  CHECK(tb.dtype() == DType::BF16);
  CHECK(tb.item() == 4.96875);
  check_values(cat({pb[0].grad(), pb[1].grad()}), {0.07568359375, -0.4296875, 0.5546875, 0.01263427734375, 1.03125},
               traits(DType::BF16).eps, "bf16 gradients");
  std::vector<Tensor> ph = params_with_grads(kGrads, DType::F16);
  std::vector<Tensor> pr = {ph[0].grad().to(DType::F64), ph[1].grad().to(DType::F64)};
  const double total = std::sqrt(sum(mul(cat(pr), cat(pr))).item());
  const Tensor th = nn::utils::clip_grad_norm_(ph, 1.25);
  CHECK(th.dtype() == DType::F16);
  check_values(th, {total}, 0.5 * traits(DType::F16).eps, "f16 total");
  // Four f16 roundings: the total, the reciprocal, the product with max_norm and each gradient's.
  check_values(cat({ph[0].grad(), ph[1].grad()}), values(mul(cat(pr), 1.25 / total)), 2.5 * traits(DType::F16).eps,
               "f16 gradients");
  // norm_type must be positive.
  CHECK_THROWS_WITH(nn::utils::clip_grad_norm_(ph, 1.0, 0.0), Catch::Contains("norm_type must be positive"));
}

TEST_CASE("cuda: clip_grad_norm_ agrees with the CPU and never waits for the device", "[cuda][nn][clip][options]") {
  using namespace minidl::cuda_test;
  MINIDL_REQUIRE_GPU();
  // Several chunks (16384 elements each), an empty gradient and a one-element one.
  const std::vector<Shape> shapes = {{40000}, {0}, {1}, {30, 17}, {3}};
  for (DType dt : kFloat64)
    for (double norm_type : {2.0, 1.0, 3.0, nn::utils::kInfNorm}) {
      INFO(dtype_name(dt) << " norm_type " << norm_type);
      std::vector<Tensor> host, dev;
      for (size_t i = 0; i < shapes.size(); ++i) {
        const Tensor g = randn_cpu(shapes[i], dt, 60 + i);
        Tensor hp = zeros(shapes[i], TensorOptions(dt)).requires_grad_();
        Tensor dp = zeros(shapes[i], TensorOptions(dt).device(kCuda)).requires_grad_();
        hp.set_grad(g.clone());
        dp.set_grad(g.to(kCuda).clone());
        host.push_back(hp);
        dev.push_back(dp);
      }
      const Tensor ht = nn::utils::clip_grad_norm_(host, 0.5, norm_type);
      const int64_t syncs = cuda::host_sync_count();
      const Tensor dt_total = nn::utils::clip_grad_norm_(dev, 0.5, norm_type);
      const Tensor measured = nn::utils::grad_norm(dev, norm_type);
      CHECK(cuda::host_sync_count() == syncs);  // queued, not waited for
      CHECK(dt_total.device() == kCuda);
      CHECK(dt_total.dtype() == dt);
      // Both sides sum in f64 (in another order: a few hundred f64 ulps over 40000 terms) and round
      // once into dt; the coefficient and the products round a few more times.
      const double tol = 2 * eps_of(dt) + 256 * eps_of(DType::F64);
      check_close(dt_total.to(Device::cpu()), ht, tol, 0, "total");
      check_close(measured.to(Device::cpu()), nn::utils::grad_norm(host, norm_type), 3 * tol, 0, "norm after clipping");
      for (size_t i = 0; i < host.size(); ++i)
        check_close(dev[i].grad().to(Device::cpu()), host[i].grad(), 2 * tol, 0, "clipped gradient");
    }
  // error_if_nonfinite reads the total: the one wait.
  std::vector<Tensor> ps = params_with_grads(kGrads, DType::F32, kCuda);
  const int64_t syncs = cuda::host_sync_count();
  nn::utils::clip_grad_norm_(ps, 1.0, 2.0, true);
  if (kCuda.is_cuda()) CHECK(cuda::host_sync_count() > syncs);
}
