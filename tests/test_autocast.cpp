// Autocast: scopes, the policy table, the cast cache, tagged nodes, backward with autocast off,
// and state carried into other threads.
#include <catch2/catch.hpp>
#include <thread>

#include "gradcheck.h"

using namespace minidl;

namespace {
Tensor param(const Shape& s) { return ones(s).requires_grad_(); }
}  // namespace

TEST_CASE("autocast scope sets, nests and restores the thread's state", "[amp]") {
  CHECK_FALSE(amp::is_autocast_enabled(DeviceType::CPU));
  CHECK(amp::get_autocast_dtype(DeviceType::CPU) == DType::BF16);
  CHECK(amp::get_autocast_dtype(DeviceType::CUDA) == DType::F16);
  {
    amp::autocast outer(DeviceType::CPU);
    CHECK(amp::is_autocast_enabled());
    CHECK(amp::autocast_nesting() == 1);
    {
      amp::autocast inner(DeviceType::CPU, DType::F16);
      CHECK(amp::get_autocast_dtype() == DType::F16);
      {
        amp::autocast off(DeviceType::CPU, std::nullopt, false);
        CHECK_FALSE(amp::is_autocast_enabled());
        CHECK(amp::get_autocast_dtype() == DType::F16);  // dtype inherited
      }
      CHECK(amp::is_autocast_enabled());
    }
    CHECK(amp::get_autocast_dtype() == DType::BF16);
  }
  CHECK_FALSE(amp::is_autocast_enabled());
  CHECK(amp::autocast_nesting() == 0);
}

TEST_CASE("autocast state is restored when an exception leaves the scope", "[amp]") {
  try {
    amp::autocast scope(DeviceType::CPU);
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  CHECK_FALSE(amp::is_autocast_enabled());
}

TEST_CASE("an unsupported autocast dtype disables autocast", "[amp]") {
  amp::autocast scope(DeviceType::CPU, DType::F64);
  CHECK_FALSE(amp::is_autocast_enabled());
}

TEST_CASE("output dtype of ops under each policy (CPU, bf16 and f16)", "[amp]") {
  for (DType low : {DType::BF16, DType::F16}) {
    amp::autocast scope(DeviceType::CPU, low);
    Tensor a = ones({2, 3}), b = ones({3, 4}), w = param({4, 3}), bias = param({4});
    // LowerPrecision
    CHECK(mm(a, b).dtype() == low);
    CHECK(matmul(a, b).dtype() == low);
    CHECK(linear(a, w, bias).dtype() == low);
    CHECK(addmm(ones({4}), a, b).dtype() == low);
    CHECK(bmm(ones({2, 2, 3}), ones({2, 3, 4})).dtype() == low);
    // None: runs in the input dtype
    Tensor h = mm(a, b);
    CHECK(relu(h).dtype() == low);
    CHECK(add(h, h).dtype() == low);
    CHECK(exp(a).dtype() == DType::F32);
    CHECK(sum(h).dtype() == low);
    // None with promotion: low + f32 -> f32
    CHECK(add(h, ones({2, 4})).dtype() == DType::F32);
    // Promote (CPU cat/stack): widest eligible input
    CHECK(cat({h, ones({2, 4})}, 0).dtype() == DType::F32);
    CHECK(stack({h, h}, 0).dtype() == low);
    // FP32: losses run in f32 whatever they receive
    Tensor logits = mm(ones({4, 3}), ones({3, 5}));
    Tensor target = from_vector<int64_t>({0, 1, 2, 3});
    CHECK(cross_entropy(logits, target).dtype() == DType::F32);
    CHECK(nll_loss(log_softmax(logits, 1), target).dtype() == DType::F32);
    CHECK(mse_loss(logits, zeros({4, 5})).dtype() == DType::F32);
    CHECK(l1_loss(logits, zeros({4, 5})).dtype() == DType::F32);
    CHECK(binary_cross_entropy_with_logits(logits, zeros({4, 5})).dtype() == DType::F32);
    CHECK(binary_cross_entropy(sigmoid(logits), zeros({4, 5})).dtype() == DType::F32);  // CPU: FP32, not banned
    CHECK(log_softmax(logits, 1).dtype() == low);  // None on CPU
    // f64 and integers are never cast
    Tensor d = ones({2, 3}, DType::F64);
    CHECK(mm(d, ones({3, 2}, DType::F64)).dtype() == DType::F64);
  }
}

TEST_CASE("autocast applies only to its device type", "[amp]") {
  amp::autocast scope(DeviceType::CUDA);  // no CPU effect
  CHECK(mm(ones({2, 2}), ones({2, 2})).dtype() == DType::F32);
}

TEST_CASE("Promote refuses to mix f16 and bf16", "[amp]") {
  amp::autocast scope(DeviceType::CPU);
  CHECK_THROWS_WITH(cat({ones({2}, DType::F16), ones({2}, DType::BF16)}), Catch::Contains("cat") && Catch::Contains("f16"));
}

TEST_CASE("policy table is overridable per op and printable", "[amp]") {
  CHECK(amp::policy_for("linear", DeviceType::CPU) == amp::CastPolicy::LowerPrecision);
  CHECK(amp::policy_for("binary_cross_entropy", DeviceType::CUDA) == amp::CastPolicy::Banned);
  CHECK(amp::policy_for("softmax", DeviceType::CUDA) == amp::CastPolicy::FP32SetOptDtype);
  CHECK(amp::policy_for("relu", DeviceType::CPU) == amp::CastPolicy::None);
  amp::set_policy("mm", DeviceType::CPU, amp::CastPolicy::FP32);
  {
    amp::autocast scope(DeviceType::CPU);
    CHECK(mm(ones({2, 2}, DType::BF16), ones({2, 2}, DType::BF16)).dtype() == DType::F32);
  }
  amp::set_policy("exp", DeviceType::CPU, amp::CastPolicy::Banned);
  {
    amp::autocast scope(DeviceType::CPU);
    CHECK_THROWS_WITH(exp(ones({2})), Catch::Contains("exp") && Catch::Contains("unsafe to autocast"));
  }
  amp::reset_policy("mm");
  amp::reset_policy("exp");
  CHECK(amp::policy_for("mm", DeviceType::CPU) == amp::CastPolicy::LowerPrecision);
  std::ostringstream os;
  amp::print_policy(os);
  CHECK_THAT(os.str(), Catch::Contains("linear") && Catch::Contains("lower_precision") && Catch::Contains("banned"));
}

TEST_CASE("weight casts are cached once per region and invalidated by version changes", "[amp]") {
  Tensor w = param({3, 3});
  Tensor x = ones({2, 3});
  {
    amp::autocast scope(DeviceType::CPU);
    auto before = amp::cast_cache_stats();
    Tensor y1 = linear(x, w);
    Tensor y2 = linear(x, w);
    auto after = amp::cast_cache_stats();
    CHECK(after.entries == 1);
    CHECK(after.misses - before.misses == 1);
    CHECK(after.hits - before.hits == 1);
    {
      NoGradGuard ng;
      w.mul_(2.0);  // version bump: the cached cast is stale
    }
    Tensor y3 = linear(x, w);
    CHECK(amp::cast_cache_stats().misses - before.misses == 2);
    CHECK(y3.to_vector<float>()[0] == 6.0f);
  }
  CHECK(amp::cast_cache_stats().entries == 0);  // cleared at the outermost exit
}

TEST_CASE("a cast cached under no-grad still carries gradients later in the region", "[amp]") {
  Tensor w = param({2, 2});
  Tensor x = ones({1, 2});
  amp::autocast scope(DeviceType::CPU);
  {
    NoGradGuard ng;
    linear(x, w);
  }
  Tensor y = linear(x, w);
  CHECK(y.requires_grad());
  cast(y, DType::F32).sum().backward();
  REQUIRE(w.grad().defined());
  CHECK(w.grad().dtype() == DType::F32);
  CHECK(w.grad().to_vector<float>() == std::vector<float>{1, 1, 1, 1});
}

TEST_CASE("nothing is cached in inference mode", "[amp]") {
  Tensor w = param({2, 2});
  amp::autocast scope(DeviceType::CPU);
  InferenceMode im;
  linear(ones({1, 2}), w);
  CHECK(amp::cast_cache_stats().entries == 0);
}

TEST_CASE("nodes record the precision they ran in, backward runs with autocast off", "[amp]") {
  Tensor w = param({4, 3}), b = param({4});
  Tensor x = ones({2, 3});
  Tensor y;
  {
    amp::autocast scope(DeviceType::CPU, DType::BF16, true, std::nullopt, "fc1");
    y = linear(x, w, b);
  }
  auto& tag = y.grad_fn()->amp;
  CHECK(tag.policy == "lower_precision");
  CHECK(tag.compute_dtype == DType::BF16);
  CHECK(tag.autocast_enabled);
  CHECK(tag.scope == "fc1");
  bool autocast_seen_in_backward = true;
  y.register_hook([&](const Tensor& g) {
    autocast_seen_in_backward = amp::is_autocast_enabled();
    return Tensor();
  });
  {
    amp::autocast scope(DeviceType::CPU);
    cast(y, DType::F32).sum().backward();
  }
  CHECK_FALSE(autocast_seen_in_backward);
  CHECK(w.grad().dtype() == DType::F32);
  CHECK(b.grad().dtype() == DType::F32);
  CHECK(b.grad().to_vector<float>() == std::vector<float>{2, 2, 2, 2});
}

TEST_CASE("ops called inside a policy-wrapped op are not re-cast", "[amp]") {
  // matmul of 3-D by 2-D runs mm internally: one cast per input, not two.
  amp::autocast scope(DeviceType::CPU, DType::F16);
  Tensor y = matmul(ones({2, 2, 3}), ones({3, 4}));
  CHECK(y.dtype() == DType::F16);
  CHECK(y.to_vector<float>()[0] == 3.0f);
}

TEST_CASE("autocast state is carried into worker threads", "[amp]") {
  Tensor a = ones({2, 2});
  DType seen = DType::F32;
  {
    amp::autocast scope(DeviceType::CPU, DType::F16);
    auto task = amp::propagate_state([&] { seen = mm(a, a).dtype(); });
    std::thread t(task);
    t.join();
  }
  CHECK(seen == DType::F16);
  // Without propagation a new thread starts with autocast off.
  {
    amp::autocast scope(DeviceType::CPU, DType::F16);
    std::thread t([&] { seen = mm(a, a).dtype(); });
    t.join();
  }
  CHECK(seen == DType::F32);
}

TEST_CASE("custom functions: custom_fwd(cast_inputs) and custom_bwd", "[amp]") {
  // y = x * x with a hand-written backward; records the dtypes and autocast states it saw.
  DType fwd_dtype = DType::F64;
  bool fwd_autocast = true, bwd_autocast = false;
  auto forward = amp::custom_fwd(
      [&](autograd::FunctionCtx& ctx, const autograd::TensorList& in) {
        fwd_dtype = in[0].dtype();
        fwd_autocast = amp::is_autocast_enabled();
        ctx.save_for_backward({in[0]});
        return autograd::TensorList{mul(in[0], in[0])};
      },
      DType::F16);
  auto backward = amp::custom_bwd([&](autograd::FunctionCtx& ctx, const autograd::TensorList& g) {
    bwd_autocast = amp::is_autocast_enabled();
    return autograd::TensorList{mul(mul(g[0], ctx.saved_tensors()[0]), 2.0)};
  });
  Tensor x = from_vector<float>({1.5f, -2.0f}).requires_grad_();
  Tensor y;
  {
    amp::autocast scope(DeviceType::CPU);
    y = autograd::apply_function("Square", {x}, forward, backward)[0];
  }
  CHECK(fwd_dtype == DType::F16);
  CHECK_FALSE(fwd_autocast);  // cast_inputs runs the forward with autocast off
  CHECK(y.dtype() == DType::F16);
  CHECK(y.grad_fn()->name() == "Square");
  cast(y, DType::F32).sum().backward();
  CHECK_FALSE(bwd_autocast);
  CHECK(x.grad().dtype() == DType::F32);
  CHECK(x.grad().to_vector<float>() == std::vector<float>{3.0f, -4.0f});
}

TEST_CASE("custom_bwd runs backward under the forward's autocast state", "[amp]") {
  bool bwd_autocast = false;
  auto forward = amp::custom_fwd([](autograd::FunctionCtx&, const autograd::TensorList& in) {
    return autograd::TensorList{mul(in[0], 3.0)};
  });
  auto backward = amp::custom_bwd([&](autograd::FunctionCtx&, const autograd::TensorList& g) {
    bwd_autocast = amp::is_autocast_enabled();
    return autograd::TensorList{mul(g[0], 3.0)};
  });
  Tensor x = ones({2}).requires_grad_();
  Tensor y;
  {
    amp::autocast scope(DeviceType::CPU);
    y = autograd::apply_function("Triple", {x}, forward, backward)[0];
  }
  y.sum().backward();
  CHECK(bwd_autocast);
  CHECK(x.grad().to_vector<float>() == std::vector<float>{3, 3});
}

TEST_CASE("bytes saved for backward are counted and released", "[amp]") {
  Tensor w = param({64, 64});
  Tensor x = ones({32, 64});
  const size_t before = autograd::saved_tensor_bytes();
  Tensor y32 = relu(linear(x, w));
  const size_t f32_bytes = autograd::saved_tensor_bytes() - before;
  Tensor y16;
  {
    amp::autocast scope(DeviceType::CPU);
    y16 = relu(linear(x, w));
  }
  const size_t bf16_bytes = autograd::saved_tensor_bytes() - before - f32_bytes;
  CHECK(f32_bytes == 32 * 64 * 4 + 32 * 64 * 4);  // x, relu output (w is a parameter)
  CHECK(bf16_bytes == 32 * 64 * 2 + 32 * 64 * 2);  // x cast, relu output (w is not needed: x needs no grad)
  y32 = Tensor();
  y16 = Tensor();
  CHECK(autograd::saved_tensor_bytes() == before);
}

TEST_CASE("precision report measures every node and parameter gradient underflow", "[amp]") {
  Tensor w1 = from_vector<float>({1e-3f, 2.0f, -3.0f, 4.0f}, {2, 2}).requires_grad_();
  w1.set_name("fc1.weight");
  Tensor w2 = from_vector<float>({1.0f, 1.0f}, {1, 2}).requires_grad_();
  w2.set_name("fc2.weight");
  Tensor x = from_vector<float>({1.0f, 1.0f}, {1, 2});
  amp::PrecisionReport report;
  Tensor loss;
  {
    amp::PrecisionReport::Recorder rec(report);
    amp::autocast scope(DeviceType::CPU, DType::F16);
    Tensor h;
    {
      amp::ScopeName name("fc1");
      h = relu(linear(x, w1));
    }
    {
      amp::ScopeName name("fc2");
      loss = mul(linear(h, w2), 1e-6).sum();  // tiny gradients: underflow in f16
    }
  }
  loss.backward();
  report.add_parameter_gradients({w1, w2});
  REQUIRE(report.nodes().size() >= 6);
  bool saw_linear = false;
  for (const auto& n : report.nodes()) {
    if (n.op == "MmBackward" && n.scope == "fc1") {
      saw_linear = true;
      CHECK(n.policy == "lower_precision");
      CHECK(n.output_dtype == DType::F16);
      // x @ w1^T = [1e-3 + 2, -3 + 4] = [2.001, 1], rounded to f16
      CHECK(n.max_abs == Approx(2.001).epsilon(traits(DType::F16).eps));
      CHECK(n.headroom_log2 == Approx(std::log2(65504.0 / n.max_abs)));
    }
  }
  CHECK(saw_linear);
  auto grads = report.gradients();
  REQUIRE(grads.size() == 2);
  for (const auto& g : grads) {
    CHECK(g.compute_dtype == DType::F16);
    CHECK(g.underflow_fraction > 0.0);  // 1e-6 * O(1) values are subnormal or zero in f16
  }
  std::ostringstream table, dot;
  report.print(table);
  report.write_dot(dot);
  CHECK_THAT(table.str(), Catch::Contains("fc1") && Catch::Contains("lower_precision") && Catch::Contains("fc2.weight"));
  CHECK_THAT(dot.str(), Catch::StartsWith("digraph") && Catch::Contains("->"));
}

TEST_CASE("count_underflow counts zeros, subnormals and non-finite values in the compute dtype", "[amp][report]") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  // f16's smallest normal is 2^-14 (6.1e-5): 1e-6 and -3e-5 are subnormal there, 1e-3 is not.
  Tensor t = from_vector<float>({0.0f, -0.0f, 1e-6f, -3e-5f, 1e-3f, -250.0f, inf, nan, -inf, 2.0f});
  amp::UnderflowCounts c = amp::count_underflow(t, DType::F16);
  CHECK(c.numel == 10);
  CHECK(c.zeros == 2);
  CHECK(c.subnormals == 2);
  CHECK(c.nonfinite == 3);
  CHECK(c.max_abs == 250.0);
  // In f32 the same values hold no subnormal.
  CHECK(amp::count_underflow(t, DType::F32).subnormals == 0);
  amp::UnderflowCounts e = amp::count_underflow(zeros({0}), DType::F16);
  CHECK(e.numel == 0);
  CHECK(e.max_abs == 0.0);
}
