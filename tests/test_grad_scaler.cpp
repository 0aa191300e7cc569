// GradScaler: PyTorch's sequences, errors and state, plus our diagnostics and step result.
#include <catch2/catch.hpp>
#include <cmath>

#include "minidl.h"
#include "amp/grad_scaler.h"
#include "tiny_sgd.h"

using namespace minidl;

namespace {

Tensor param(std::vector<float> v, const std::string& name) {
  Tensor t = from_vector(v).requires_grad_();
  t.set_name(name);
  return t;
}
}  // namespace

TEST_CASE("the typical loop: scale, backward, step, update", "[amp][scaler]") {
  Tensor w = param({1.0f, 2.0f}, "w");
  TinySGD opt{{w}};
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(1024.0));
  CHECK(scaler.get_scale() == 1024.0);  // before the first scale()
  Tensor loss = mul(w, w).sum();
  Tensor scaled = scaler.scale(loss);
  CHECK(scaled.item() == 5.0 * 1024.0);
  scaled.backward();
  CHECK(w.grad().to_vector<float>() == std::vector<float>{2048.0f, 4096.0f});
  auto r = scaler.step(opt);
  CHECK(r.stepped);
  CHECK_FALSE(r.found_inf);
  CHECK(w.to_vector<float>() == std::vector<float>{-1.0f, -2.0f});  // w - grad (unscaled: 2, 4)
  scaler.update();
  CHECK(scaler.get_scale() == 1024.0);
  CHECK(scaler.get_growth_tracker() == 1);
}

TEST_CASE("scale multiplies in f32: a low-precision 0-dim loss gives an f32 result", "[amp][scaler]") {
  amp::GradScaler scaler;
  CHECK(scaler.scale(scalar_tensor(2.0, DType::F16)).dtype() == DType::F32);
  CHECK(scaler.scale(scalar_tensor(2.0, DType::BF16)).item() == 131072.0);
  CHECK(scaler.scale(ones({3}, DType::F16)).dtype() == DType::F16);  // dimensioned tensors keep theirs
}

TEST_CASE("unscale_ then clipping sees true gradients, step does not unscale twice", "[amp][scaler]") {
  Tensor w = param({3.0f, 4.0f}, "w");
  TinySGD opt{{w}};
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(8.0));
  scaler.scale(mul(w, w).sum()).backward();
  scaler.unscale_(opt);
  CHECK(w.grad().to_vector<float>() == std::vector<float>{6.0f, 8.0f});
  scaler.step(opt);
  CHECK(w.to_vector<float>() == std::vector<float>{-3.0f, -4.0f});
  scaler.update();
}

TEST_CASE("inf or NaN gradients skip the step and back off, growth after growth_interval", "[amp][scaler]") {
  Tensor w = param({1.0f}, "w");
  TinySGD opt{{w}};
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(4.0).growth_interval_(2));
  auto iteration = [&](float grad) {
    scaler.scale(mul(w, 0.0).sum());  // creates the scale
    w.set_grad(from_vector<float>({grad}));
    auto r = scaler.step(opt);
    scaler.update();
    return r;
  };
  auto r = iteration(INFINITY);
  CHECK_FALSE(r.stepped);
  CHECK(r.found_inf);
  CHECK(opt.steps == 0);
  CHECK(scaler.get_scale() == 2.0);
  CHECK(scaler.get_growth_tracker() == 0);
  iteration(NAN);
  CHECK(scaler.get_scale() == 1.0);
  iteration(1.0f);
  CHECK(scaler.get_growth_tracker() == 1);
  CHECK(scaler.get_scale() == 1.0);
  iteration(1.0f);  // second clean step: grow, tracker reset
  CHECK(scaler.get_scale() == 2.0);
  CHECK(scaler.get_growth_tracker() == 0);
  iteration(1.0f);
  iteration(INFINITY);  // tracker reset by an overflow
  CHECK(scaler.get_growth_tracker() == 0);
  CHECK(scaler.get_scale() == 1.0);
  CHECK(opt.steps == 3);
  CHECK(scaler.skipped_steps() == 3);
}

TEST_CASE("growth that would overflow f32 is refused, tracker reset", "[amp][scaler]") {
  Tensor w = param({1.0f}, "w");
  TinySGD opt{{w}};
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(3e38).growth_interval_(1));
  scaler.scale(mul(w, 0.0).sum());
  w.set_grad(from_vector<float>({1.0f}));
  scaler.step(opt);
  scaler.update();
  CHECK(static_cast<float>(scaler.get_scale()) == 3e38f);
  CHECK(scaler.get_growth_tracker() == 0);
}

TEST_CASE("several optimizers in one iteration count as one update", "[amp][scaler]") {
  Tensor a = param({1.0f}, "a"), b = param({1.0f}, "b");
  TinySGD oa{{a}}, ob{{b}};
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(16.0).growth_interval_(1));
  Tensor la = mul(a, b).sum(), lb = mul(a, mul(b, 2.0)).sum();
  scaler.scale(la).backward(Tensor(), true);
  scaler.scale(lb).backward();
  scaler.unscale_(oa);
  CHECK(a.grad().item() == 3.0);  // d/da (ab + 2ab) = 3b
  CHECK(scaler.step(oa).stepped);
  CHECK(scaler.step(ob).stepped);
  scaler.update();
  CHECK(scaler.get_scale() == 32.0);  // one growth, not two
  // One optimizer overflowing skips only its own step but backs off once for the iteration.
  scaler.scale(mul(a, b).sum());
  a.set_grad(from_vector<float>({INFINITY}));
  b.set_grad(from_vector<float>({1.0f}));
  CHECK_FALSE(scaler.step(oa).stepped);
  CHECK(scaler.step(ob).stepped);
  scaler.update();
  CHECK(scaler.get_scale() == 16.0);
}

TEST_CASE("GradScaler errors follow PyTorch's messages", "[amp][scaler]") {
  Tensor w = param({1.0f}, "w");
  TinySGD opt{{w}};
  amp::GradScaler scaler;
  CHECK_THROWS_WITH(scaler.unscale_(opt), Catch::Contains("Attempted unscale_ but _scale is None"));
  CHECK_THROWS_WITH(scaler.step(opt), Catch::Contains("Attempted step but _scale is None"));
  CHECK_THROWS_WITH(scaler.update(), Catch::Contains("Attempted update but _scale is None"));
  scaler.scale(w.sum()).backward();
  CHECK_THROWS_WITH(scaler.update(), Catch::Contains("No inf checks were recorded prior to update."));
  scaler.unscale_(opt);
  CHECK_THROWS_WITH(scaler.unscale_(opt), Catch::Contains("unscale_() has already been called on this optimizer since the last update()."));
  scaler.step(opt);
  CHECK_THROWS_WITH(scaler.step(opt), Catch::Contains("step() has already been called since the last update()."));
  CHECK_THROWS_WITH(scaler.unscale_(opt), Catch::Contains("unscale_() is being called after step()."));
  scaler.update();
  Tensor h = ones({1}, DType::F16).requires_grad_();  // an f16 parameter: a .grad has its tensor's dtype
  TinySGD oh{{h}};
  h.set_grad(ones({1}, DType::F16));
  CHECK_THROWS_WITH(scaler.unscale_(oh), Catch::Contains("Attempting to unscale FP16 gradients."));
  Tensor bf = ones({2}, DType::BF16).requires_grad_();
  TinySGD obf{{bf}};
  bf.set_grad(full({2}, 4.0, DType::BF16));
  scaler.unscale_(obf);  // bf16 gradients are accepted
  CHECK(bf.grad().to_vector<float>()[0] == static_cast<float>(4.0 / 65536.0));
}

TEST_CASE("the constructor validates every argument", "[amp][scaler]") {
  CHECK_THROWS_WITH(amp::GradScaler(amp::GradScalerOptions().init_scale_(0)), Catch::Contains("init_scale"));
  // PyTorch's text where PyTorch checks; ours for what PyTorch lets through.
  CHECK_THROWS_WITH(amp::GradScaler(amp::GradScalerOptions().growth_factor_(1.0)), Catch::Contains("The growth factor must be > 1.0."));
  CHECK_THROWS_WITH(amp::GradScaler(amp::GradScalerOptions().backoff_factor_(1.0)), Catch::Contains("The backoff factor must be < 1.0."));
  CHECK_THROWS_WITH(amp::GradScaler(amp::GradScalerOptions().backoff_factor_(1.5)), Catch::Contains("The backoff factor must be < 1.0."));
  CHECK_THROWS_WITH(amp::GradScaler(amp::GradScalerOptions().backoff_factor_(0.0)), Catch::Contains("backoff_factor must be > 0"));
  CHECK_THROWS_WITH(amp::GradScaler(amp::GradScalerOptions().growth_factor_(INFINITY)), Catch::Contains("growth_factor must be finite"));
  amp::GradScaler ok;
  CHECK_THROWS_WITH(ok.set_growth_factor(0.5), Catch::Contains("The growth factor must be > 1.0."));
  CHECK_THROWS_WITH(ok.set_backoff_factor(2.0), Catch::Contains("The backoff factor must be < 1.0."));
  CHECK_THROWS_WITH(amp::GradScaler(amp::GradScalerOptions().growth_interval_(0)), Catch::Contains("growth_interval"));
  CHECK_THROWS_WITH(amp::GradScaler(amp::GradScalerOptions().init_scale_(4).min_scale_(8)), Catch::Contains("min_scale"));
  // As PyTorch, a disabled scaler (GradScaler(enabled=use_amp, ...)) does not check what it never uses.
  amp::GradScaler off(amp::GradScalerOptions().enabled_(false).growth_factor_(0.5).init_scale_(0));
  CHECK_FALSE(off.is_enabled());
  CHECK(off.get_scale() == 1.0);
}

TEST_CASE("update(new_scale) sets the scale and keeps the tracker, min/max scale bound it", "[amp][scaler]") {
  Tensor w = param({1.0f}, "w");
  TinySGD opt{{w}};
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(8.0).min_scale_(4.0).max_scale_(16.0).growth_interval_(1));
  scaler.scale(w.sum()).backward();
  scaler.step(opt);
  scaler.update();
  CHECK(scaler.get_scale() == 16.0);
  scaler.scale(w.sum());
  w.set_grad(ones({1}));
  scaler.step(opt);
  scaler.update();
  CHECK(scaler.get_scale() == 16.0);  // max_scale caps growth
  for (int i = 0; i < 3; ++i) {
    scaler.scale(w.sum());
    w.set_grad(full({1}, INFINITY));
    scaler.step(opt);
    scaler.update();
  }
  CHECK(scaler.get_scale() == 4.0);  // min_scale floors backoff
  scaler.scale(w.sum());
  w.set_grad(ones({1}));
  scaler.step(opt);
  scaler.update(100.0);
  CHECK(scaler.get_scale() == 100.0);
}

TEST_CASE("state dict round trip, and a disabled scaler", "[amp][scaler]") {
  Tensor w = param({1.0f}, "w");
  TinySGD opt{{w}};
  amp::GradScaler a(amp::GradScalerOptions().init_scale_(32.0).growth_interval_(7));
  a.scale(w.sum()).backward();
  a.step(opt);
  a.update();
  auto sd = a.state_dict();
  CHECK(sd.at("scale") == 32.0);
  CHECK(sd.at("growth_interval") == 7.0);
  CHECK(sd.at("_growth_tracker") == 1.0);
  amp::GradScaler b;
  b.load_state_dict(sd);
  CHECK(b.get_scale() == 32.0);
  CHECK(b.get_growth_tracker() == 1);
  CHECK(b.get_growth_interval() == 7);
  CHECK_THROWS_WITH(b.load_state_dict({}), Catch::Contains("The source state dict is empty"));

  amp::GradScaler off(amp::GradScalerOptions().enabled_(false));
  CHECK(off.get_scale() == 1.0);
  CHECK(off.state_dict().empty());
  Tensor loss = w.sum();
  CHECK(off.scale(loss).is_same(loss));
  w.set_grad(ones({1}));
  CHECK(off.step(opt).stepped);
  off.update();
}

TEST_CASE("diagnostics name the parameters whose gradients overflowed", "[amp][scaler]") {
  Tensor a = param({1.0f, 1.0f, 1.0f}, "fc1.weight"), b = param({1.0f}, "fc2.bias");
  TinySGD opt{{a, b}};
  amp::GradScaler scaler(amp::GradScalerOptions().diagnostics_(true));
  scaler.scale(a.sum());
  a.set_grad(from_vector<float>({1.0f, INFINITY, NAN}));
  b.set_grad(ones({1}));
  auto r = scaler.step(opt);
  scaler.update();
  CHECK(r.found_inf);
  REQUIRE(scaler.last_nonfinite().size() == 1);
  const auto& n = scaler.last_nonfinite()[0];
  CHECK(n.param == "fc1.weight");
  CHECK(n.inf == 1);
  CHECK(n.nan == 1);
  CHECK(n.numel == 3);
  CHECK_THAT(scaler.report(), Catch::Contains("fc1.weight") && Catch::Contains("1 inf, 1 NaN"));
}

TEST_CASE("diagnostics list the worst parameter first", "[amp][scaler]") {
  Tensor a = param({1.0f, 1.0f}, "a"), b = param({1.0f, 1.0f, 1.0f}, "b"), c = param({1.0f}, "c");
  TinySGD opt{{a, b, c}};
  amp::GradScaler scaler(amp::GradScalerOptions().diagnostics_(true));
  scaler.scale(a.sum());
  a.set_grad(from_vector<float>({INFINITY, 1.0f}));           // 1 non-finite
  b.set_grad(from_vector<float>({NAN, -INFINITY, NAN}));      // 3
  c.set_grad(from_vector<float>({NAN}));                      // 1 (ties keep parameter order)
  scaler.step(opt);
  REQUIRE(scaler.last_nonfinite().size() == 3);
  CHECK(scaler.last_nonfinite()[0].param == "b");
  CHECK(scaler.last_nonfinite()[1].param == "a");
  CHECK(scaler.last_nonfinite()[2].param == "c");
  const std::string r = scaler.report();
  CHECK(r.find("b:") < r.find("a:"));
}

TEST_CASE("a scaler's per-optimizer stage reads as PyTorch's OptState", "[amp][scaler]") {
  Tensor w = param({1.0f}, "w"), v = param({1.0f}, "v");
  TinySGD opt{{w}}, other{{v}};
  amp::GradScaler scaler;
  CHECK(scaler.stage(opt) == amp::OptimizerStage::Ready);
  scaler.scale(w.sum()).backward();
  scaler.unscale_(opt);
  CHECK(scaler.stage(opt) == amp::OptimizerStage::Unscaled);
  CHECK(scaler.stage(other) == amp::OptimizerStage::Ready);
  scaler.step(opt);
  CHECK(scaler.stage(opt) == amp::OptimizerStage::Stepped);
  CHECK(std::string(amp::to_string(scaler.stage(opt))) == "STEPPED");
  scaler.update();
  CHECK(scaler.stage(opt) == amp::OptimizerStage::Ready);
}

// step()/unscale_() accept optimizers only; anything else fails at compile time with one message.
static_assert(amp::ScalableOptimizer<TinySGD>);
static_assert(amp::ScalableOptimizer<optim::SGD>);
static_assert(!amp::ScalableOptimizer<nn::Linear>);
static_assert(!amp::ScalableOptimizer<Tensor>);

TEST_CASE("unscale_ over gradients of several dtypes keeps each gradient's order, values and report", "[amp][scaler]") {
  // f32, bf16 and f64 parameters interleaved: unscale_ groups them by dtype, and every gradient
  // and every diagnostics entry must still belong to its own parameter.
  Tensor a = param({1.0f, 1.0f}, "a"), c = param({1.0f, 1.0f}, "c");
  Tensor b = from_vector<float>({1.0f, 1.0f, 1.0f}).to(DType::BF16).requires_grad_();
  Tensor d = from_vector<double>({1.0, 1.0}).requires_grad_();
  b.set_name("b");
  d.set_name("d");
  TinySGD opt{{a, b, c, d}};
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(8.0).diagnostics_(true));
  scaler.scale(a.sum());
  a.set_grad(from_vector<float>({8.0f, 24.0f}));
  b.set_grad(from_vector<float>({NAN, 16.0f, NAN}).to(DType::BF16));
  c.set_grad(from_vector<float>({-INFINITY, 40.0f}));
  d.set_grad(from_vector<double>({4.0, -12.0}));
  scaler.unscale_(opt);
  CHECK(a.grad().to_vector<float>() == std::vector<float>{1.0f, 3.0f});
  CHECK(b.grad().to_vector<float>()[1] == 2.0f);
  CHECK(c.grad().to_vector<float>()[1] == 5.0f);
  CHECK(d.grad().to_vector<double>() == std::vector<double>{0.5, -1.5});
  REQUIRE(scaler.last_nonfinite().size() == 2);
  CHECK(scaler.last_nonfinite()[0].param == "b");
  CHECK(scaler.last_nonfinite()[0].nan == 2);
  CHECK(scaler.last_nonfinite()[0].inf == 0);
  CHECK(scaler.last_nonfinite()[1].param == "c");
  CHECK(scaler.last_nonfinite()[1].inf == 1);
  CHECK(scaler.last_nonfinite()[1].nan == 0);
  CHECK_FALSE(scaler.step(opt).stepped);
}

TEST_CASE("fp16 underflow is rescued by scaling", "[amp][scaler]") {
  // A gradient of 1e-8 flushes to zero in f16 (smallest subnormal ~6e-8) but survives scaled.
  Tensor w = param({1.0f}, "w");
  auto grad_through_f16 = [&](double loss_scale) {
    w.set_grad(Tensor());
    Tensor y = mul(cast(w, DType::F16), 2.0);  // an f16 activation path
    Tensor loss = mul(mul(cast(y, DType::F32).sum(), 0.5e-8), loss_scale);  // d loss/dy = 0.5e-8 * scale
    loss.backward();
    return w.grad().item() / loss_scale;
  };
  CHECK(grad_through_f16(1.0) == 0.0);
  CHECK(grad_through_f16(65536.0) == Approx(1e-8).epsilon(2 * traits(DType::F16).eps));
}
