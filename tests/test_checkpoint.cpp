// nn::utils::checkpoint and checkpoint_sequential: gradients equal (bitwise) to the same block
// without checkpointing, with dropout (the generator rewound for the recompute and put back after),
// under bf16 autocast (the recompute runs in the forward's precision) and fp16 autocast with a
// GradScaler; fewer bytes saved for backward; several inputs and outputs; nesting; errors.
#include <catch2/catch.hpp>

#include "minidl.h"
#include "gradcheck.h"
#include "random_values.h"

using namespace minidl;
using Catch::Contains;

namespace {
std::shared_ptr<nn::Sequential> make_block(DType dtype) {
  Generator gen(5);
  auto block = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(nn::LinearOptions(8, 16), &gen),
                                                std::make_shared<nn::ReLU>(), std::make_shared<nn::Dropout>(0.5),
                                                std::make_shared<nn::Linear>(nn::LinearOptions(16, 16), &gen),
                                                std::make_shared<nn::Tanh>(),
                                                std::make_shared<nn::Linear>(nn::LinearOptions(16, 4), &gen));
  block->to(dtype);
  return block;
}

struct Run {
  std::vector<Tensor> grads;     // every parameter's, then the input's
  double loss = 0;
  size_t saved_bytes = 0;  // saved for backward after the forward
  double next_draw = 0;    // the default generator's next draw after backward
};

// One forward and backward of sum(block(x)^2) from seed 11, checkpointed or not, in `amp` autocast (F32: none).
Run run(bool checkpointed, DType dtype, DType amp, nn::utils::CheckpointOptions options = {}) {
  auto block = make_block(dtype);
  Tensor x = cast(testing::random_tensor({6, 8}, 3), dtype).requires_grad_();
  manual_seed(11);
  autograd::reset_peak_saved_tensor_bytes();
  const size_t before = autograd::saved_tensor_bytes();
  Tensor loss;
  {
    std::optional<amp::autocast> scope;
    if (amp != DType::F32) scope.emplace(DeviceType::CPU, amp);
    auto f = [&](const Tensor& t) { return block->forward(t); };
    Tensor y = checkpointed ? nn::utils::checkpoint(f, x, options) : f(x);
    loss = sum(mul(cast(y, dtype), cast(y, dtype)));
  }
  Run r;
  r.saved_bytes = autograd::saved_tensor_bytes() - before;
  loss.backward();
  r.loss = loss.item();
  for (const Tensor& p : block->parameters()) r.grads.push_back(p.grad());
  r.grads.push_back(x.grad());
  r.next_draw = rand({1}).item();
  return r;
}

void check_same(const Run& a, const Run& b) {
  CHECK(a.loss == b.loss);
  REQUIRE(a.grads.size() == b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i) {
    INFO("gradient " << i);
    REQUIRE(a.grads[i].defined());
    REQUIRE(b.grads[i].defined());
    CHECK(testing::max_abs_diff(a.grads[i], b.grads[i]) == 0.0);
  }
  CHECK(a.next_draw == b.next_draw);  // the recompute put the generator back
}
}  // namespace

TEST_CASE("checkpoint: the same gradients as without it, dropout included, and less saved", "[checkpoint]") {
  for (DType dtype : {DType::F64, DType::F32}) {
    INFO(dtype_name(dtype));
    const Run plain = run(false, dtype, DType::F32), ckpt = run(true, dtype, DType::F32);
    check_same(plain, ckpt);
    CHECK(ckpt.saved_bytes < plain.saved_bytes / 2);
  }
  // Without the generator's state the recompute draws other masks: other gradients.
  const Run plain = run(false, DType::F64, DType::F32);
  const Run fresh = run(true, DType::F64, DType::F32, nn::utils::CheckpointOptions().preserve_rng_state(false));
  CHECK(testing::max_abs_diff(plain.grads[0], fresh.grads[0]) > 0.0);
}

TEST_CASE("checkpoint: the recompute runs in the forward's autocast state", "[checkpoint][amp]") {
  for (DType amp : {DType::BF16, DType::F16}) {
    INFO(dtype_name(amp));
    check_same(run(false, DType::F32, amp), run(true, DType::F32, amp));
  }
  // fp16 with a GradScaler: scaled gradients through the checkpoint, unscaled by step.
  auto train = [](bool checkpointed) {
    auto block = make_block(DType::F32);
    optim::SGD opt(block->parameters(), optim::SGDOptions(0.1));
    amp::GradScaler scaler(Device::cpu(), amp::GradScalerOptions().init_scale_(1024.0));
    Tensor x = testing::random_tensor({6, 8}, 4).to(DType::F32).requires_grad_();
    manual_seed(2);
    Tensor loss;
    {
      amp::autocast scope(DeviceType::CPU, DType::F16);
      auto f = [&](const Tensor& t) { return block->forward(t); };
      Tensor y = checkpointed ? nn::utils::checkpoint(f, x) : f(x);
      loss = mean(mul(y, y));
    }
    scaler.scale(loss).backward();
    scaler.step(opt);
    scaler.update();
    return block->parameters()[0].detach().clone();
  };
  CHECK(testing::max_abs_diff(train(false), train(true)) == 0.0);
}

TEST_CASE("checkpoint: several inputs and outputs, nesting, checkpoint_sequential", "[checkpoint]") {
  Tensor a = testing::random_tensor({3, 4}, 5).requires_grad_(), b = testing::random_tensor({3, 4}, 6);
  auto fn = [](const autograd::TensorList& in) { return autograd::TensorList{mul(in[0], in[1]), exp(in[0])}; };
  autograd::TensorList out = nn::utils::checkpoint(fn, {a, b});
  CHECK_FALSE(out[0].grad_fn() == nullptr);
  sum(out[0]).backward();  // only the first output reaches the loss
  CHECK(testing::max_abs_diff(a.grad(), b) == 0.0);
  // Nested: a checkpoint inside a checkpoint.
  Tensor c = testing::random_tensor({5}, 7).requires_grad_();
  auto inner = [](const Tensor& t) { return sin(t); };
  Tensor y = nn::utils::checkpoint([&](const Tensor& t) { return mul(nn::utils::checkpoint(inner, t), 2.0); }, c);
  sum(y).backward();
  CHECK(testing::max_abs_diff(c.grad(), mul(cos(c.detach()), 2.0)) < 1e-15);
  // checkpoint_sequential: three segments of two, the last run as usual; more segments than modules.
  for (int64_t segments : {1, 3, 8}) {
    INFO(segments << " segments");
    auto block = make_block(DType::F64);
    Tensor x = testing::random_tensor({6, 8}, 8).requires_grad_();
    manual_seed(3);
    Tensor plain = block->forward(x);
    sum(plain).backward();
    const Tensor plain_grad = x.grad().clone(), plain_w = block->parameters()[0].grad().clone();
    x.set_grad(Tensor());
    block->zero_grad();
    manual_seed(3);
    Tensor ck = nn::utils::checkpoint_sequential(*block, segments, x);
    CHECK(testing::max_abs_diff(ck, plain) == 0.0);
    sum(ck).backward();
    CHECK(testing::max_abs_diff(x.grad(), plain_grad) == 0.0);
    CHECK(testing::max_abs_diff(block->parameters()[0].grad(), plain_w) == 0.0);
  }
}

TEST_CASE("checkpoint: errors and the no-input-requires-grad warning", "[checkpoint]") {
  Tensor x = testing::random_tensor({4}, 9).requires_grad_();
  Tensor y = nn::utils::checkpoint([](const Tensor& t) { return exp(t); }, x);
  CHECK_THROWS_WITH(autograd::grad({sum(y)}, {x}), Contains("checkpoint: Checkpointing is not compatible with autograd::grad()"));
  CHECK_THROWS_WITH(nn::utils::checkpoint_sequential(nn::Sequential(), 0, x), Contains("segments must be at least 1"));
  std::vector<std::string> warnings;
  auto previous = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  Tensor z = nn::utils::checkpoint([](const Tensor& t) { return exp(t); }, x.detach());
  set_warning_handler(previous);
  CHECK_FALSE(z.requires_grad());
  // Once per process: this is the first such call in this program.
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Contains("None of the inputs have requires_grad=True"));
}
