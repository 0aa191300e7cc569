// AMP parity with torch.amp on cases beyond the typical loop: the Promote rule (torch's
// prioritize), f64 and integer inputs, nested and disabled scopes, which casts are cached, the dtype
// CUDA autocast accepts, and GradScaler's bookkeeping (inf checks per optimizer, update with a
// tensor, exact growth/backoff arithmetic, state dict before the first scale, param groups).
// Expected values are PyTorch's behaviour; deliberate differences are marked and listed in README.
#include <catch2/catch.hpp>
#include <cmath>

#include "minidl.h"
#include "ops/autocast_hook.h"
#include "amp/grad_scaler.h"
#include "tiny_sgd.h"

using namespace minidl;

namespace {
Tensor param(const Shape& s) { return ones(s).requires_grad_(); }


// One iteration with the given gradient on w: scale, set the grad, step, update.
void iteration(amp::GradScaler& scaler, TinySGD& opt, Tensor& w, float grad) {
  scaler.scale(w.sum());
  w.set_grad(full({1}, grad));
  scaler.step(opt);
  scaler.update();
}
}  // namespace

// ---------------------------------------------------------------- autocast

TEST_CASE("Promote starts from the autocast dtype as torch's prioritize", "[amp][parity]") {
  amp::autocast scope(DeviceType::CPU, DType::BF16);
  Tensor b = ones({2}, DType::BF16), h = ones({2}, DType::F16), f = ones({2}), d = ones({2}, DType::F64);
  CHECK(cat({b, b}).dtype() == DType::BF16);
  CHECK(cat({b, f}).dtype() == DType::F32);
  CHECK(stack({f, b}).dtype() == DType::F32);
  // A low-precision input other than the autocast dtype is an error, unless an f32 came first.
  CHECK_THROWS_WITH(stack({h, h}), Catch::Contains("stack") && Catch::Contains("f16") && Catch::Contains("bf16"));
  CHECK_THROWS_WITH(cat({h, f}), Catch::Contains("cat") && Catch::Contains("f16"));
  CHECK(cat({f, h}).dtype() == DType::F32);
  // f64 is ignored by the rule and never cast: cat's own promotion then gives f64.
  CHECK(cat({b, d}).dtype() == DType::F64);
  CHECK(cat({d, d}).dtype() == DType::F64);
  // Integers are never cast: bf16 with i64 stays bf16 (cat's own promotion).
  CHECK(cat({b, ones({2}, DType::I64)}).dtype() == DType::BF16);
  CHECK(cat({ones({2}, DType::I64), ones({2}, DType::I64)}).dtype() == DType::I64);
}

TEST_CASE("Promote under f16 autocast keeps f16 and refuses bf16", "[amp][parity]") {
  amp::autocast scope(DeviceType::CPU, DType::F16);
  Tensor h = ones({2}, DType::F16);
  CHECK(stack({h, h}).dtype() == DType::F16);
  CHECK_THROWS(stack({ones({2}, DType::BF16), h}));
  Tensor out = cat({h, from_vector<float>({0.5f, 1.5f})});
  CHECK(out.dtype() == DType::F32);
  CHECK(out.to_vector<float>() == std::vector<float>{1, 1, 0.5f, 1.5f});
}

TEST_CASE("f64 and integer inputs are never cast under any policy", "[amp][parity]") {
  amp::autocast scope(DeviceType::CPU, DType::BF16);
  Tensor d = full({2, 2}, 0.1, DType::F64);
  // LowerPrecision
  CHECK(mm(d, d).dtype() == DType::F64);
  CHECK(mm(d, d).to_vector<double>()[0] == 0.1 * 0.1 + 0.1 * 0.1);  // computed in f64, not bf16
  // f32 goes to bf16 but f64 stays: the op then sees bf16 with f64 and refuses, as torch's mm does
  CHECK_THROWS(mm(ones({2, 2}), d));
  // FP32
  CHECK(mse_loss(d, zeros({2, 2}, DType::F64)).dtype() == DType::F64);
  CHECK(l1_loss(d, zeros({2, 2}, DType::F64)).item() == 0.1);
  // FP32 and FP32SetOptDtype through an override (CUDA's exp and sum, checked on CPU tensors)
  amp::set_policy("exp", DeviceType::CPU, amp::CastPolicy::FP32);
  amp::set_policy("sum", DeviceType::CPU, amp::CastPolicy::FP32SetOptDtype);
  CHECK(exp(d).dtype() == DType::F64);
  CHECK(exp(ones({2}, DType::BF16)).dtype() == DType::F32);
  CHECK(sum(d).dtype() == DType::F64);
  CHECK(sum(ones({3}, DType::BF16)).dtype() == DType::F32);
  CHECK(sum(from_vector<int64_t>({1, 2, 3})).dtype() == DType::I64);  // ineligible: run as is
  CHECK(sum(from_vector<int64_t>({1, 2, 3})).item() == 6.0);
  amp::reset_policy("exp");
  amp::reset_policy("sum");
}

TEST_CASE("an enabled=false scope inside an enabled one runs ops as they come and keeps the cache", "[amp][parity]") {
  Tensor w = param({3, 3});
  Tensor x = ones({2, 3});
  amp::autocast outer(DeviceType::CPU);
  CHECK(linear(x, w).dtype() == DType::BF16);
  REQUIRE(amp::cast_cache_stats().entries == 1);
  {
    amp::autocast off(DeviceType::CPU, std::nullopt, false);
    CHECK(amp::autocast_nesting() == 2);
    CHECK(linear(x, w).dtype() == DType::F32);
    CHECK(mm(x, ones({3, 2})).dtype() == DType::F32);
    CHECK(mm(ones({2, 2}, DType::BF16), ones({2, 2}, DType::BF16)).dtype() == DType::BF16);
    CHECK(mse_loss(ones({2}, DType::BF16), zeros({2}, DType::BF16)).dtype() == DType::BF16);  // FP32 is off too
  }
  // Leaving an inner scope does not clear the cache: only the outermost exit does.
  CHECK(amp::cast_cache_stats().entries == 1);
  CHECK(amp::is_autocast_enabled());
  CHECK(linear(x, w).dtype() == DType::BF16);
}

TEST_CASE("only f32 leaves that require grad are cached", "[amp][parity]") {
  Tensor x = ones({2, 3});
  {
    amp::autocast scope(DeviceType::CPU, DType::BF16);
    Tensor w = param({3, 3});
    linear(x, mul(w, 1.0));  // a non-leaf
    CHECK(amp::cast_cache_stats().entries == 0);
    linear(x, ones({3, 3}));  // a leaf that does not require grad
    CHECK(amp::cast_cache_stats().entries == 0);
    Tensor w16 = ones({3, 3}, DType::F16).requires_grad_();  // not f32: torch caches f32 sources only
    linear(x, w16);
    CHECK(amp::cast_cache_stats().entries == 0);
    Tensor wl = ones({2}, DType::BF16).requires_grad_();  // a cast to f32 (FP32 policy) is not cached
    mse_loss(wl, zeros({2}));
    CHECK(amp::cast_cache_stats().entries == 0);
    linear(x, w);
    CHECK(amp::cast_cache_stats().entries == 1);
  }
  {
    amp::autocast scope(DeviceType::CPU, DType::BF16, true, false);  // cache_enabled=false
    CHECK_FALSE(amp::is_autocast_cache_enabled());
    linear(x, param({3, 3}));
    CHECK(amp::cast_cache_stats().entries == 0);
  }
  CHECK(amp::is_autocast_cache_enabled());
}

TEST_CASE("a nested scope of another dtype gets a weight cast of its own dtype (deliberate difference)", "[amp][parity]") {
  // PyTorch keys the cache by the weight only and would hand the inner f16 region the outer bf16
  // cast (linear then fails on f16 input with a bf16 weight); ours casts again.
  Tensor w = param({3, 3});
  Tensor x = ones({2, 3});
  amp::autocast outer(DeviceType::CPU, DType::BF16);
  CHECK(linear(x, w).dtype() == DType::BF16);
  {
    amp::autocast inner(DeviceType::CPU, DType::F16);
    Tensor y = linear(x, w);
    CHECK(y.dtype() == DType::F16);
    CHECK(y.to_vector<float>()[0] == 3.0f);
  }
  CHECK(linear(x, w).dtype() == DType::BF16);
}

TEST_CASE("CUDA autocast accepts f32 as its dtype while CPU autocast refuses it", "[amp][parity]") {
  {
    amp::autocast cuda(DeviceType::CUDA, DType::F32);  // torch checks only bf16 support on CUDA
    CHECK(amp::is_autocast_enabled(DeviceType::CUDA));
    CHECK(amp::get_autocast_dtype(DeviceType::CUDA) == DType::F32);
  }
  CHECK_FALSE(amp::is_autocast_enabled(DeviceType::CUDA));
  CHECK(amp::get_autocast_dtype(DeviceType::CUDA) == DType::F16);
  CHECK(amp::is_autocast_supported(DeviceType::CUDA, DType::F32));
  CHECK_FALSE(amp::is_autocast_supported(DeviceType::CPU, DType::F32));
  {
    amp::autocast cpu(DeviceType::CPU, DType::F32);  // "In CPU autocast, but the target dtype is not supported"
    CHECK_FALSE(amp::is_autocast_enabled(DeviceType::CPU));
  }
  {
    amp::autocast cuda(DeviceType::CUDA, DType::F64);  // deliberate difference: warns and disables
    CHECK_FALSE(amp::is_autocast_enabled(DeviceType::CUDA));
  }
}

TEST_CASE("the policy table matches torch's lists for every op minidl has", "[amp][parity]") {
  using P = amp::CastPolicy;
  auto cpu = [](const char* op) { return amp::policy_for(op, DeviceType::CPU); };
  auto cuda = [](const char* op) { return amp::policy_for(op, DeviceType::CUDA); };
  for (const char* op : {"mm", "bmm", "matmul", "addmm", "linear", "conv2d", "conv_transpose2d", "prelu"}) {
    CHECK(cpu(op) == P::LowerPrecision);
    CHECK(cuda(op) == P::LowerPrecision);
  }
  // smooth_l1_loss, huber_loss, kl_div: probed with torch 1.13's autocast('cpu') (bf16 in, f32 out).
  for (const char* op : {"nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
                         "binary_cross_entropy_with_logits"}) {
    CHECK(cpu(op) == P::FP32);
    CHECK(cuda(op) == P::FP32);
  }
  CHECK(cpu("cross_entropy") == P::FP32);  // cross_entropy_loss is in the CPU fp32 list
  // The pads of PyTorch's CPU fp32 list (reflection_pad3d, constant and circular are on none).
  for (const char* op : {"reflection_pad1d", "reflection_pad2d", "replication_pad1d", "replication_pad2d", "replication_pad3d"}) {
    CHECK(cpu(op) == P::FP32);
    CHECK(cuda(op) == P::None);
  }
  CHECK(cpu("binary_cross_entropy") == P::FP32);
  CHECK(cuda("binary_cross_entropy") == P::Banned);
  // logsumexp: CUDA's fp32 list; torch 1.13's CPU autocast returns bf16 for a bf16 input.
  for (const char* op : {"exp", "log", "pow", "rsqrt", "softplus", "logsumexp", "tan", "asin", "acos", "sinh", "cosh", "log1p",
                         "expm1", "log2", "log10", "erfinv", "reciprocal"}) {
    CHECK(cpu(op) == P::None);
    CHECK(cuda(op) == P::FP32);
  }
  for (const char* op : {"softmax", "log_softmax", "sum", "cumsum", "cumprod"}) {
    CHECK(cpu(op) == P::None);
    CHECK(cuda(op) == P::FP32SetOptDtype);
  }
  for (const char* op : {"cat", "stack"}) {
    CHECK(cpu(op) == P::Promote);
    CHECK(cuda(op) == P::None);  // CUDA's promote list has neither; cat promotes on its own
  }
  for (const char* op : {"scatter_add", "atan2", "dot"}) {
    CHECK(cpu(op) == P::None);
    CHECK(cuda(op) == P::Promote);
  }
  // In no list on either device.
  for (const char* op : {"sqrt", "tanh", "sigmoid", "relu", "gelu", "mean", "var", "max_pool2d", "avg_pool2d",
                         "adaptive_avg_pool2d", "adaptive_max_pool2d", "batch_norm", "dropout", "add", "div", "remainder", "fmod", "where",
                         "index_select", "gather", "sort", "topk", "amax", "sin", "cos", "atan", "asinh", "acosh", "atanh",
                         "exp2", "erf", "erfc", "floor", "round", "hardswish", "mish", "logsigmoid"}) {
    CHECK(cpu(op) == P::None);
    CHECK(cuda(op) == P::None);
  }
}

// ---------------------------------------------------------------- GradScaler

TEST_CASE("step with no gradients raises No inf checks were recorded for this optimizer", "[amp][parity][scaler]") {
  Tensor w = ones({1}).requires_grad_();
  TinySGD opt{{w}};
  amp::GradScaler scaler;
  scaler.scale(w.sum());  // no backward: w.grad stays undefined
  CHECK_THROWS_WITH(scaler.step(opt), Catch::Contains("No inf checks were recorded for this optimizer."));
  CHECK(opt.steps == 0);
  CHECK_THROWS_WITH(scaler.update(), Catch::Contains("No inf checks were recorded prior to update."));

  // unscale_ itself succeeds on an optimizer without gradients; step then raises.
  amp::GradScaler s2;
  s2.scale(w.sum());
  s2.unscale_(opt);
  CHECK_THROWS_WITH(s2.step(opt), Catch::Contains("No inf checks were recorded for this optimizer."));
  CHECK_THROWS_WITH(s2.unscale_(opt), Catch::Contains("unscale_() has already been called"));
  CHECK(opt.steps == 0);

  // Another optimizer with gradients still feeds update().
  Tensor v = ones({1}).requires_grad_();
  TinySGD with_grads{{v}};
  amp::GradScaler s3(amp::GradScalerOptions().init_scale_(8.0).growth_interval_(1));
  s3.scale(v.sum()).backward();
  CHECK(s3.step(with_grads).stepped);
  CHECK_THROWS(s3.step(opt));
  s3.update();
  CHECK(s3.get_scale() == 16.0);
}

TEST_CASE("update accepts a one-element tensor as the new scale", "[amp][parity][scaler]") {
  Tensor w = ones({1}).requires_grad_();
  TinySGD opt{{w}};
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(4.0).growth_interval_(3));
  iteration(scaler, opt, w, 1.0f);
  REQUIRE(scaler.get_growth_tracker() == 1);
  scaler.update(from_vector<float>({8.0f}));
  CHECK(scaler.get_scale() == 8.0);
  scaler.update(scalar_tensor(0.5, DType::F64));
  CHECK(scaler.get_scale() == 0.5);
  CHECK(scaler.get_growth_tracker() == 1);  // kept, as with a float
  CHECK_THROWS_WITH(scaler.update(ones({2})), Catch::Contains("new_scale should be a float or a 1-element"));
  CHECK_THROWS_WITH(scaler.update(ones({1}).requires_grad_()), Catch::Contains("requires_grad=False"));
  CHECK(scaler.get_scale() == 0.5);
  amp::GradScaler off(amp::GradScalerOptions().enabled_(false));
  off.update(ones({3}));  // a disabled scaler ignores it
  CHECK(off.get_scale() == 1.0);
}

TEST_CASE("growth and backoff follow _amp_update_scale_ exactly in f32", "[amp][parity][scaler]") {
  Tensor w = ones({1}).requires_grad_();
  TinySGD opt{{w}};
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(4.0).growth_factor_(3.0).backoff_factor_(0.3).growth_interval_(2));
  iteration(scaler, opt, w, 1.0f);
  CHECK(scaler.get_scale() == 4.0);
  CHECK(scaler.get_growth_tracker() == 1);
  iteration(scaler, opt, w, 1.0f);
  CHECK(scaler.get_scale() == 12.0);
  CHECK(scaler.get_growth_tracker() == 0);
  iteration(scaler, opt, w, 1.0f);
  CHECK(scaler.get_growth_tracker() == 1);
  iteration(scaler, opt, w, NAN);  // backoff, and the streak starts over
  const float s1 = static_cast<float>(12.0 * 0.3);
  CHECK(scaler.get_scale() == static_cast<double>(s1));
  CHECK(scaler.get_growth_tracker() == 0);
  iteration(scaler, opt, w, 1.0f);
  CHECK(scaler.get_scale() == static_cast<double>(s1));  // one clean step is not a full interval
  iteration(scaler, opt, w, 1.0f);
  CHECK(scaler.get_scale() == static_cast<double>(static_cast<float>(static_cast<double>(s1) * 3.0)));
  CHECK(opt.steps == 5);  // the NaN iteration skipped its step
  CHECK(scaler.skipped_steps() == 1);
}

TEST_CASE("unscale_ then update without step still updates the scale", "[amp][parity][scaler]") {
  Tensor w = ones({1}).requires_grad_();
  TinySGD opt{{w}};
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(8.0).growth_interval_(1));
  scaler.scale(w.sum());
  w.set_grad(full({1}, INFINITY));
  scaler.unscale_(opt);
  scaler.update();  // found_inf recorded by unscale_: backoff
  CHECK(scaler.get_scale() == 4.0);
  CHECK(opt.steps == 0);
  scaler.scale(w.sum());
  w.set_grad(ones({1}));
  scaler.unscale_(opt);  // a new iteration: allowed again
  scaler.update();
  CHECK(scaler.get_scale() == 8.0);
}

TEST_CASE("an inf in one param group skips the step of every group", "[amp][parity][scaler]") {
  Tensor a = ones({2}).requires_grad_(), b = ones({1}).requires_grad_();
  optim::SGD opt({optim::ParamGroup({a}), optim::ParamGroup({b}, optim::SGDOptions(0.5))}, optim::SGDOptions(1.0));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(2.0));
  scaler.scale(a.sum());
  a.set_grad(full({2}, 2.0));
  b.set_grad(full({1}, INFINITY));
  auto r = scaler.step(opt);
  scaler.update();
  CHECK_FALSE(r.stepped);
  CHECK(a.to_vector<float>() == std::vector<float>{1, 1});
  CHECK(b.to_vector<float>() == std::vector<float>{1});
  CHECK(a.grad().to_vector<float>() == std::vector<float>{1, 1});  // still unscaled in place
  CHECK(scaler.get_scale() == 1.0);
  // Clean gradients in both groups: both step with their own learning rates.
  scaler.scale(a.sum());
  a.set_grad(full({2}, 2.0));
  b.set_grad(full({1}, 2.0));
  CHECK(scaler.step(opt).stepped);
  CHECK(a.to_vector<float>() == std::vector<float>{-1, -1});
  CHECK(b.to_vector<float>() == std::vector<float>{0});
}

TEST_CASE("a refused FP16 unscale_ changes no gradient and leaves the optimizer ready", "[amp][parity][scaler]") {
  Tensor a = ones({1}).requires_grad_(), h = ones({1}, DType::F16).requires_grad_();  // .grad has h's dtype
  TinySGD opt{{a, h}};
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(4.0));
  scaler.scale(a.sum());
  a.set_grad(full({1}, 8.0));
  h.set_grad(ones({1}, DType::F16));
  CHECK_THROWS_WITH(scaler.unscale_(opt), Catch::Contains("Attempting to unscale FP16 gradients."));
  CHECK(a.grad().item() == 8.0);
  h.set_grad(Tensor());
  scaler.unscale_(opt);  // not "already been called"
  CHECK(a.grad().item() == 2.0);
}

TEST_CASE("a state dict loaded before the first scale seeds the lazy scale and tracker", "[amp][parity][scaler]") {
  Tensor w = ones({1}).requires_grad_();
  TinySGD opt{{w}};
  amp::GradScaler scaler;
  scaler.load_state_dict(
      {{"scale", 1024.0}, {"growth_factor", 4.0}, {"backoff_factor", 0.25}, {"growth_interval", 6.0}, {"_growth_tracker", 5.0}});
  CHECK(scaler.get_scale() == 1024.0);
  CHECK(scaler.get_growth_tracker() == 5);
  CHECK(scaler.scale(full({}, 3.0)).item() == 3072.0);
  w.set_grad(ones({1}));
  scaler.step(opt);
  scaler.update();  // the sixth clean step in a row: grow by 4
  CHECK(scaler.get_scale() == 4096.0);
  CHECK(scaler.get_growth_tracker() == 0);
  auto sd = scaler.state_dict();
  CHECK(sd.size() == 5);
  CHECK(sd.at("growth_factor") == 4.0);
  CHECK(sd.at("backoff_factor") == 0.25);

  // Disabled: every method is a no-op and loading anything, even nothing, is accepted.
  amp::GradScaler off(amp::GradScalerOptions().enabled_(false));
  CHECK_FALSE(off.is_enabled());
  off.load_state_dict({});
  off.load_state_dict(sd);
  CHECK(off.get_scale() == 1.0);
  CHECK(off.get_growth_tracker() == 0);
  off.unscale_(opt);
  off.update(7.0);
  CHECK(off.get_scale() == 1.0);
}

TEST_CASE("scale follows torch's type promotion with its 0-dim f32 scale", "[amp][parity][scaler]") {
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(8.0));
  Tensor h = scaler.scale(ones({3}, DType::F16));  // a dimensioned f16 output stays f16
  CHECK(h.dtype() == DType::F16);
  CHECK(h.to_vector<float>() == std::vector<float>{8, 8, 8});
  CHECK(scaler.scale(full({}, 2.0, DType::BF16)).dtype() == DType::F32);  // 0-dim with 0-dim: f32
  auto outs = scaler.scale(std::vector<Tensor>{ones({2}), full({}, 0.5, DType::F16)});
  REQUIRE(outs.size() == 2);
  CHECK(outs[0].to_vector<float>() == std::vector<float>{8, 8});
  CHECK(outs[1].dtype() == DType::F32);
  CHECK(outs[1].item() == 4.0);
}

TEST_CASE("unscale_ multiplies by the f32 reciprocal computed in double", "[amp][parity][scaler]") {
  Tensor w = ones({1}).requires_grad_();
  TinySGD opt{{w}};
  amp::GradScaler scaler;
  scaler.scale(w.sum());
  scaler.update(3.0);
  w.set_grad(full({1}, 10.0));
  scaler.unscale_(opt);
  const float inv = static_cast<float>(1.0 / 3.0);
  CHECK(w.grad().to_vector<float>()[0] == 10.0f * inv);
}

TEST_CASE("a CUDA scaler without CUDA warns and disables itself", "[amp][parity][scaler]") {
  if (cuda::is_available()) return;  // the behaviour applies where CUDA cannot be used
  amp::GradScaler scaler(Device::cuda(), amp::GradScalerOptions().init_scale_(8.0));
  CHECK_FALSE(scaler.is_enabled());
  CHECK(scaler.get_scale() == 1.0);
  Tensor loss = full({}, 2.0);
  CHECK(scaler.scale(loss).is_same(loss));
  Tensor w = ones({1}).requires_grad_();
  TinySGD opt{{w}};
  w.set_grad(full({1}, INFINITY));
  CHECK(scaler.step(opt).stepped);  // disabled: step just steps
  CHECK(opt.steps == 1);
  CHECK(scaler.state_dict().empty());
}

TEST_CASE("unscale_ takes a non-contiguous gradient, unscaled in place in its own layout", "[amp][parity][scaler]") {
  // PyTorch 1.13 (torch.cuda.amp.GradScaler): `w.grad = g.t()` is accepted and unscale_ multiplies it
  // in place (_unscale_grads_ collects param.grad whatever its strides), e.g. with scale 4
  // w.grad = (4 * torch.arange(1., 7.).reshape(3, 2)).t() gives [[1, 3, 5], [2, 4, 6]] after unscale_.
  Tensor w = zeros({2, 3}).requires_grad_();
  TinySGD opt{{w}};
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(4.0));
  scaler.scale(w.sum());
  Tensor g = mul(from_vector<float>({1, 2, 3, 4, 5, 6}).reshape({3, 2}), 4.0).t();
  REQUIRE_FALSE(g.is_contiguous());
  w.set_grad(g);
  scaler.unscale_(opt);
  CHECK(w.grad().is_same(g));  // the same tensor, in place
  CHECK(w.grad().to_vector<float>() == std::vector<float>{1, 3, 5, 2, 4, 6});
  CHECK(scaler.step(opt).stepped);
  scaler.update();
  // An inf in a non-contiguous gradient is found as in a contiguous one.
  scaler.scale(w.sum());
  w.set_grad(from_vector<float>({1, INFINITY, 3, 4, 5, 6}).reshape({3, 2}).t());
  CHECK_FALSE(scaler.step(opt).stepped);
  scaler.update();
  CHECK(scaler.get_scale() == 2.0);
}
