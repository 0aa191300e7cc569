// Module hooks (nn/module_hooks.h): forward pre-hooks and forward hooks see and may replace the
// input and output, in registration order, when the module is called (not when forward() is
// called directly); full backward (pre-)hooks see grad_output and grad_input, checked against the
// closed form of a Linear layer's gradients, and may replace them; hooks fire inside the zoo models
// (fused batch norm + ReLU included), under autocast and in DataParallel's replicas; handles remove
// them; deep copies carry copies; errors name the module.
#include <catch2/catch.hpp>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "gradcheck.h"
#include "minidl.h"
#include "random_values.h"

using namespace minidl;
using Catch::Contains;

namespace {
Tensor rand32(const Shape& shape, uint64_t seed) { return cast(testing::random_tensor(shape, seed), DType::F32); }

nn::ModulePtr submodule(nn::Module& root, const std::string& path) {
  for (auto& [name, m] : root.named_modules())
    if (name == path) return m;
  return nullptr;
}

std::shared_ptr<nn::Linear> linear_3_to_2() {
  auto fc = std::make_shared<nn::Linear>(3, 2);
  NoGradGuard ng;
  fc->weight.copy_(rand32({2, 3}, 1));
  fc->bias.copy_(rand32({2}, 2));
  return fc;
}
}  // namespace

TEST_CASE("forward pre-hooks and forward hooks see and replace input and output, in order", "[hooks]") {
  auto fc = linear_3_to_2();
  const Tensor x = rand32({4, 3}, 3);
  const Tensor plain = fc->forward(x);
  std::vector<std::string> order;
  Tensor seen_input, seen_output;
  auto pre1 = fc->register_forward_pre_hook([&](nn::Module& m, const Tensor& in) {
    order.push_back("pre1");
    CHECK(&m == fc.get());
    return mul(in, 2.0);  // replaces the input
  });
  auto pre2 = fc->register_forward_pre_hook([&](nn::Module&, const Tensor&) {
    order.push_back("pre2");
    return Tensor();  // keeps it
  });
  auto post = fc->register_forward_hook([&](nn::Module&, const Tensor& in, const Tensor& out) {
    order.push_back("post");
    seen_input = in;
    seen_output = out;
    return add(out, 1.0);
  });
  const Tensor y = (*fc)(x);
  CHECK(order == std::vector<std::string>{"pre1", "pre2", "post"});
  CHECK(testing::max_abs_diff(seen_input, mul(x, 2.0)) == 0.0);             // the hook saw the replaced input
  CHECK(testing::max_abs_diff(seen_output, fc->forward(mul(x, 2.0))) == 0.0);
  CHECK(testing::max_abs_diff(y, add(fc->forward(mul(x, 2.0)), 1.0)) == 0.0);  // and the caller the replaced output

  order.clear();
  CHECK(testing::max_abs_diff(fc->forward(x), plain) == 0.0);  // forward() called directly runs no hook
  CHECK(order.empty());

  pre1.remove();
  post.remove();
  post.remove();  // a second remove does nothing
  CHECK(testing::max_abs_diff(nn::call(fc, x), plain) == 0.0);
  CHECK(order == std::vector<std::string>{"pre2"});
  pre2.remove();
  CHECK_FALSE(fc->has_hooks());
}

TEST_CASE("full backward hooks see grad_input and grad_output and may replace them", "[hooks][grad]") {
  // loss = sum(fc(x) * g): grad_output = g, grad_input = g W, dW = g^T x.
  auto fc = linear_3_to_2();
  const Tensor g = rand32({4, 2}, 4);
  const Tensor expected_gi = matmul(g, fc->weight.detach());
  auto run = [&](const Tensor& x) {
    fc->zero_grad();
    sum(mul(nn::call(fc, x), g)).backward();
  };
  Tensor got_gi, got_go;
  std::vector<std::string> order;
  auto pre = fc->register_full_backward_pre_hook([&](nn::Module&, const Tensor& go) {
    order.push_back("pre");
    CHECK(testing::max_abs_diff(go, g) == 0.0);
    return Tensor();
  });
  auto hook = fc->register_full_backward_hook([&](nn::Module& m, const Tensor& gi, const Tensor& go) {
    order.push_back("hook");
    CHECK(&m == fc.get());
    got_gi = gi;
    got_go = go;
    return Tensor();
  });
  Tensor x = rand32({4, 3}, 5).requires_grad_();
  run(x);
  CHECK(order == std::vector<std::string>{"pre", "hook"});
  CHECK(testing::max_abs_diff(got_go, g) == 0.0);
  CHECK(testing::max_abs_diff(got_gi, expected_gi) < 1e-6);
  CHECK(testing::max_abs_diff(x.grad(), expected_gi) < 1e-6);
  CHECK(testing::max_abs_diff(fc->weight.grad(), matmul(g.t(), x.detach())) < 1e-6);

  SECTION("a replaced grad_input reaches the input, not the parameters") {
    hook.remove();
    auto doubling = fc->register_full_backward_hook([](nn::Module&, const Tensor& gi, const Tensor&) { return mul(gi, 2.0); });
    Tensor x2 = rand32({4, 3}, 5).requires_grad_();
    run(x2);
    CHECK(testing::max_abs_diff(x2.grad(), mul(expected_gi, 2.0)) < 1e-6);
    CHECK(testing::max_abs_diff(fc->weight.grad(), matmul(g.t(), x2.detach())) < 1e-6);
  }
  SECTION("a replaced grad_output reaches the parameters and the input") {
    pre.remove();
    auto halving = fc->register_full_backward_pre_hook([](nn::Module&, const Tensor& go) { return mul(go, 0.5); });
    Tensor x2 = rand32({4, 3}, 5).requires_grad_();
    run(x2);
    CHECK(testing::max_abs_diff(got_go, mul(g, 0.5)) == 0.0);  // the backward hook sees the replacement
    CHECK(testing::max_abs_diff(x2.grad(), mul(expected_gi, 0.5)) < 1e-6);
    CHECK(testing::max_abs_diff(fc->weight.grad(), mul(matmul(g.t(), x2.detach()), 0.5)) < 1e-6);
  }
  SECTION("an input that takes no gradient: the hook runs with an undefined grad_input") {
    run(rand32({4, 3}, 5));
    CHECK_FALSE(got_gi.defined());
    CHECK(testing::max_abs_diff(got_go, g) == 0.0);
    CHECK(testing::max_abs_diff(fc->weight.grad(), matmul(g.t(), rand32({4, 3}, 5))) < 1e-6);
  }
  SECTION("no graph, no backward hooks: under no_grad the call records nothing") {
    NoGradGuard ng;
    order.clear();
    const Tensor y = nn::call(fc, x);
    CHECK_FALSE(y.requires_grad());
    CHECK(order.empty());
  }
}

TEST_CASE("the backward hooks' identity nodes pass gradients unchanged (f64 gradient check)", "[hooks][grad]") {
  auto fc = std::make_shared<nn::Linear>(3, 2);
  fc->to(DType::F64);
  int calls = 0;
  fc->register_full_backward_hook([&](nn::Module&, const Tensor&, const Tensor&) {
    ++calls;
    return Tensor();
  });
  fc->register_full_backward_pre_hook([](nn::Module&, const Tensor&) { return Tensor(); });
  const auto fn = [&](const std::vector<Tensor>& in) { return tanh(nn::call(fc, in[0])); };
  Tensor x = cast(rand32({4, 3}, 6), DType::F64).requires_grad_();
  CHECK(testing::check_gradients(fn, {x}, 1e-6, 1e-7) == "");
  CHECK(calls > 0);
}

TEST_CASE("hooks fire on the zoo models' layers, fused batch norm + ReLU included, and under autocast", "[hooks]") {
  SECTION("LeNet-5's first convolution") {
    auto net = nn::models::make_model("lenet");
    nn::ModulePtr conv1 = submodule(*net, "conv1");
    REQUIRE(conv1);
    Shape seen;
    conv1->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor& out) {
      seen = out.shape();
      return Tensor();
    });
    nn::call(net, rand32({2, 1, 28, 28}, 7));
    CHECK(seen == Shape{2, 6, 28, 28});
  }
  SECTION("ResNet-20: a hooked batch norm runs unfused, with the same result") {
    auto make = [] {
      manual_seed(3);
      return nn::models::make_model("resnet20");
    };
    auto plain = make(), hooked = make();
    const Tensor x = rand32({2, 3, 32, 32}, 8);
    const Tensor expected = nn::call(plain, x);
    nn::ModulePtr bn = submodule(*hooked, "stem_bn");
    REQUIRE(bn);
    Tensor bn_out;
    bn->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor& out) {
      bn_out = out;
      return Tensor();
    });
    const Tensor y = nn::call(hooked, x);
    REQUIRE(bn_out.defined());
    CHECK(min(bn_out).item<float>() < 0.0f);  // before the ReLU
    CHECK(testing::max_abs_diff(y, expected) < 1e-5);
  }
  SECTION("a ReLU after a BatchNorm in a Sequential") {
    auto seq = std::make_shared<nn::Sequential>(std::make_shared<nn::BatchNorm2d>(3), std::make_shared<nn::ReLU>());
    int relu_calls = 0;
    seq->named_modules()[2].second->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) {
      ++relu_calls;
      return Tensor();
    });
    nn::call(seq, rand32({2, 3, 4, 4}, 9));
    CHECK(relu_calls == 1);
  }
  SECTION("a Linear under bf16 autocast: the hook sees its bf16 output") {
    auto fc = linear_3_to_2();
    DType seen = DType::F32;
    fc->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor& out) {
      seen = out.dtype();
      return Tensor();
    });
    {
      amp::autocast ac(DeviceType::CPU, DType::BF16);
      nn::call(fc, rand32({4, 3}, 10));
    }
    CHECK(seen == DType::BF16);
  }
}

TEST_CASE("deep copies carry copies of the hooks", "[hooks]") {
  auto fc = linear_3_to_2();
  int calls = 0;
  auto handle = fc->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) {
    ++calls;
    return Tensor();
  });
  auto copy = std::dynamic_pointer_cast<nn::Linear>(fc->deep_copy());
  handle.remove();
  nn::call(copy, rand32({1, 3}, 11));
  nn::call(fc, rand32({1, 3}, 11));
  CHECK(calls == 1);  // the copy's, not the original's
}

TEST_CASE("DataParallel replicas run the hooks on their own chunk, with their own module", "[hooks][data_parallel]") {
  auto fc = linear_3_to_2();
  std::mutex mu;
  std::vector<int64_t> rows;
  std::vector<const nn::Module*> modules;
  fc->register_forward_hook([&](nn::Module& m, const Tensor& in, const Tensor&) {
    std::lock_guard<std::mutex> lock(mu);
    rows.push_back(in.size(0));
    modules.push_back(&m);
    return Tensor();
  });
  dist::DataParallel dp(fc, 2, dist::DataParallelOptions().replicate());
  const Tensor x = rand32({6, 3}, 12);
  const Tensor y = dp.forward(x);
  CHECK(testing::max_abs_diff(y, fc->forward(x)) < 1e-6);
  std::sort(rows.begin(), rows.end());
  CHECK(rows == std::vector<int64_t>{3, 3});  // each replica saw its half of the batch
  REQUIRE(modules.size() == 2);
  CHECK(modules[0] != modules[1]);             // the original and a replica
}

namespace {
struct TwoInputs : nn::Module {
  Tensor forward(const Tensor& a, const Tensor& b) { return add(a, b); }
};
}  // namespace

TEST_CASE("hook errors name the module and the problem", "[hooks][errors]") {
  SECTION("a module with hooks called with two tensors") {
    auto m = std::make_shared<TwoInputs>();
    m->register_forward_hook([](nn::Module&, const Tensor&, const Tensor&) { return Tensor(); });
    const Tensor a = rand32({2}, 1);
    CHECK_THROWS_WITH(nn::call(m, a, a), Contains("TwoInputs has hooks") && Contains("one tensor"));
  }
  SECTION("a grad_input of the wrong shape") {
    auto fc = linear_3_to_2();
    fc->register_full_backward_hook([](nn::Module&, const Tensor&, const Tensor&) { return zeros({5}); });
    Tensor x = rand32({4, 3}, 5).requires_grad_();
    CHECK_THROWS_WITH(sum(nn::call(fc, x)).backward(),
                      Contains("register_full_backward_hook") && Contains("Linear") && Contains("shape [5]"));
  }
  SECTION("a grad_input returned for an input that takes no gradient") {
    auto fc = linear_3_to_2();
    fc->register_full_backward_hook([](nn::Module&, const Tensor&, const Tensor&) { return zeros({4, 3}); });
    CHECK_THROWS_WITH(sum(nn::call(fc, rand32({4, 3}, 5))).backward(),
                      Contains("does not require grad"));
  }
  SECTION("an empty hook") {
    auto fc = linear_3_to_2();
    CHECK_THROWS_WITH(fc->register_forward_hook(nn::ForwardHook()), Contains("register_forward_hook") && Contains("empty"));
  }
}
