// The seed cases of DESIGN.md §1, each written as plainly as a user would: the typical loop,
// unscale_ then clipping, gradient accumulation, gradient penalty through create_graph, several
// models/losses/optimizers, and forward on worker threads / module-level autocast.
#include <catch2/catch.hpp>
#include <thread>

#include "minidl.h"

using namespace minidl;

namespace {
struct Net : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  Net() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 8));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(8, 3));
  }
  Tensor forward(const Tensor& x) {
    auto scope = forward_scope();
    return fc2->forward(relu(fc1->forward(x)));
  }
};

struct Batch {
  Tensor x, y;
};
Batch make_batch(uint64_t seed) {
  Generator g(seed);
  return {randn({16, 4}, {}, &g), randint(0, 3, {16}, DType::I64, &g)};
}

std::vector<float> flat_params(const nn::Module& m) {
  std::vector<float> out;
  for (const Tensor& p : m.parameters()) {
    auto v = p.to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}
}  // namespace

TEST_CASE("seed 1: the typical loop trains under bf16 autocast with a scaler", "[amp][seed]") {
  manual_seed(0);
  auto model = std::make_shared<Net>();
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(256.0));
  Batch b = make_batch(1);
  double first = 0, last = 0;
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    Tensor loss;
    {
      amp::autocast scope(DeviceType::CPU);
      Tensor out = model->forward(b.x);
      CHECK(out.dtype() == DType::BF16);
      loss = nn::functional::cross_entropy(out, b.y);
      CHECK(loss.dtype() == DType::F32);
    }
    scaler.scale(loss).backward();
    for (const Tensor& p : model->parameters()) CHECK(p.grad().dtype() == DType::F32);
    auto r = scaler.step(opt);
    CHECK(r.stepped);
    scaler.update();
    if (step == 0) first = loss.item();
    last = loss.item();
  }
  CHECK(last < first * 0.7);
}

TEST_CASE("seed 2: unscale_ then clip_grad_norm_ sees and clips the true gradients", "[amp][seed]") {
  manual_seed(0);
  auto model = std::make_shared<Net>();
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.1));
  Batch b = make_batch(2);
  // Reference: plain f32 gradients.
  nn::functional::cross_entropy(model->forward(b.x), b.y).backward();
  std::vector<std::vector<float>> ref;
  for (const Tensor& p : model->parameters()) ref.push_back(p.grad().to_vector<float>());
  opt.zero_grad();
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(1024.0));
  scaler.scale(nn::functional::cross_entropy(model->forward(b.x), b.y)).backward();
  scaler.unscale_(opt);
  auto params = model->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    auto g = params[i].grad().to_vector<float>();
    for (size_t k = 0; k < g.size(); ++k) CHECK(g[k] == Approx(ref[i][k]).margin(1e-6));  // scale 2^10 is exact
  }
  double norm = nn::utils::clip_grad_norm_(params, 1e-3).item();
  CHECK(norm > 1e-3);
  double after = 0;
  for (const Tensor& p : params) after += sum(mul(p.grad(), p.grad())).item();
  CHECK(std::sqrt(after) == Approx(1e-3).epsilon(1e-3));
  CHECK(scaler.step(opt).stepped);  // does not unscale a second time
  scaler.update();
}

TEST_CASE("seed 3a: gradient accumulation over micro-batches, one step and update", "[amp][seed]") {
  manual_seed(0);
  auto a = std::make_shared<Net>();
  manual_seed(0);
  auto b = std::make_shared<Net>();
  optim::SGD opt_a(a->parameters(), optim::SGDOptions(0.1)), opt_b(b->parameters(), optim::SGDOptions(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(8.0));
  Batch whole = make_batch(3);
  // Four micro-batches of 4, each loss divided by 4, accumulate into .grad.
  for (int m = 0; m < 4; ++m) {
    Tensor x = whole.x.narrow(0, 4 * m, 4), y = whole.y.narrow(0, 4 * m, 4);
    scaler.scale(div(nn::functional::cross_entropy(a->forward(x), y), 4.0)).backward();
  }
  scaler.step(opt_a);
  scaler.update();
  // The same update from the whole batch at once, unscaled.
  nn::functional::cross_entropy(b->forward(whole.x), whole.y).backward();
  opt_b.step();
  auto pa = flat_params(*a), pb = flat_params(*b);
  for (size_t k = 0; k < pa.size(); ++k) CHECK(pa[k] == Approx(pb[k]).margin(1e-6));
  CHECK(scaler.get_growth_tracker() == 1);  // one update for the accumulated batch
}

TEST_CASE("seed 3b: gradient penalty through create_graph on scaled gradients", "[amp][seed]") {
  manual_seed(0);
  auto model = std::make_shared<Net>();
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(64.0));
  Batch b = make_batch(4);
  Tensor loss = nn::functional::cross_entropy(model->forward(b.x), b.y);
  auto params = model->parameters();
  // Gradients of the scaled loss, unscaled by hand before computing the penalty (PyTorch's recipe).
  auto scaled_grads = autograd::grad({scaler.scale(loss)}, params, {}, false, true);
  const double inv = 1.0 / scaler.get_scale();
  Tensor norm2 = zeros({});
  for (const Tensor& g : scaled_grads) norm2 = add(norm2, sum(mul(mul(g, inv), mul(g, inv))));
  Tensor total = add(loss, mul(norm2, 0.5));
  scaler.scale(total).backward();
  // Reference: the same penalty without any scaling.
  manual_seed(0);
  auto ref = std::make_shared<Net>();
  Tensor rl = nn::functional::cross_entropy(ref->forward(b.x), b.y);
  auto rg = autograd::grad({rl}, ref->parameters(), {}, false, true);
  Tensor rn = zeros({});
  for (const Tensor& g : rg) rn = add(rn, sum(mul(g, g)));
  add(rl, mul(rn, 0.5)).backward();
  scaler.unscale_(opt);
  auto rp = ref->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    auto g = params[i].grad().to_vector<float>(), r = rp[i].grad().to_vector<float>();
    for (size_t k = 0; k < g.size(); ++k) CHECK(g[k] == Approx(r[k]).margin(1e-5));
  }
  CHECK(scaler.step(opt).stepped);
  scaler.update();
}

TEST_CASE("seed 4: two models, two losses, two optimizers, one update", "[amp][seed]") {
  manual_seed(0);
  auto m0 = std::make_shared<Net>(), m1 = std::make_shared<Net>();
  optim::SGD o0(m0->parameters(), optim::SGDOptions(0.1)), o1(m1->parameters(), optim::SGDOptions(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(16.0).growth_interval_(1));
  Batch b = make_batch(5);
  Tensor out0, out1;
  {
    amp::autocast scope(DeviceType::CPU);
    out0 = m0->forward(b.x);
    out1 = m1->forward(b.x);
  }
  Tensor shared = add(cast(out0, DType::F32), cast(out1, DType::F32));
  Tensor loss0 = nn::functional::cross_entropy(shared, b.y);
  Tensor loss1 = mse_loss(cast(out1, DType::F32), zeros({16, 3}));
  scaler.scale(loss0).backward(Tensor(), true);  // the graphs share out1
  scaler.scale(loss1).backward();
  scaler.unscale_(o0);  // optional, for either optimizer
  CHECK(scaler.step(o0).stepped);
  CHECK(scaler.step(o1).stepped);
  scaler.update();
  CHECK(scaler.get_scale() == 32.0);  // one growth for the iteration
}

TEST_CASE("seed 5: forward on worker threads keeps the caller's autocast state", "[amp][seed]") {
  manual_seed(0);
  auto model = std::make_shared<Net>();
  Batch b = make_batch(6);
  std::vector<DType> seen(2, DType::F64);
  {
    amp::autocast scope(DeviceType::CPU, DType::F16);
    std::vector<std::thread> replicas;
    for (int r = 0; r < 2; ++r)
      replicas.emplace_back(amp::propagate_state([&, r] { seen[r] = model->forward(b.x.narrow(0, 8 * r, 8)).dtype(); }));
    for (auto& t : replicas) t.join();
  }
  CHECK(seen[0] == DType::F16);
  CHECK(seen[1] == DType::F16);
}

TEST_CASE("seed 5: a module carries its own autocast setting", "[amp][seed]") {
  manual_seed(0);
  auto model = std::make_shared<Net>();
  Batch b = make_batch(7);
  model->fc1->set_autocast(DType::BF16);  // only fc1 runs in bf16
  Tensor h = model->fc1->forward(b.x);
  CHECK(h.dtype() == DType::BF16);
  // Outside autocast fc2 gets a bf16 input and f32 weights: an error, as in PyTorch.
  CHECK_THROWS_WITH(model->forward(b.x), Catch::Contains("linear") && Catch::Contains("same dtype"));
  model->fc1->clear_autocast();
  {
    amp::autocast scope(DeviceType::CPU);
    model->fc2->set_autocast(std::nullopt, false);  // fc2 opts out of an enclosing autocast
    CHECK(model->fc2->forward(ones({2, 8})).dtype() == DType::F32);
    CHECK(model->fc1->forward(ones({2, 4})).dtype() == DType::BF16);
  }
}

namespace {
// A user's models whose forward does not open forward_scope(): a Layer (one input) and a plain
// Module with two inputs. The bare matmul is an op of the user's own, outside any built-in layer.
struct BareLayer : nn::Layer {
  Tensor w = ones({4, 3}).requires_grad_();
  Tensor forward(const Tensor& x) override { return matmul(x, w); }
};
struct BareTwoInputs : nn::Module {
  Tensor w = ones({4, 3}).requires_grad_();
  Tensor forward(const Tensor& a, const Tensor& b) { return add(matmul(a, w), matmul(b, w)); }
};
}  // namespace

TEST_CASE("set_autocast holds however forward is written, when the module is called", "[amp][seed]") {
  auto layer = std::make_shared<BareLayer>();
  layer->set_autocast(DType::BF16);
  CHECK((*layer)(ones({2, 4})).dtype() == DType::BF16);        // Layer's call operator
  CHECK(nn::call(layer, ones({2, 4})).dtype() == DType::BF16);  // nn::call
  CHECK(layer->forward(ones({2, 4})).dtype() == DType::F32);    // forward() itself skips it, as PyTorch's
  // Through a container (AnyModule) and a DataParallel-style wrapper on two threads.
  nn::Sequential seq(layer);
  CHECK(seq.forward(ones({2, 4})).dtype() == DType::BF16);
  dist::DataParallel<BareLayer> dp(layer, 2);
  CHECK(dp.forward(ones({4, 4})).dtype() == DType::BF16);
  // Any forward signature, through nn::call.
  auto two = std::make_shared<BareTwoInputs>();
  two->set_autocast(DType::BF16);
  CHECK(nn::call(two, ones({2, 4}), ones({2, 4})).dtype() == DType::BF16);
  // Opting out inside an enclosing autocast.
  amp::autocast outer(DeviceType::CPU);
  layer->set_autocast(std::nullopt, false);
  CHECK((*layer)(ones({2, 4})).dtype() == DType::F32);
}

TEST_CASE("nodes recorded inside a module carry its path", "[amp][seed]") {
  manual_seed(0);
  auto model = std::make_shared<Net>();
  Tensor y;
  {
    amp::autocast scope(DeviceType::CPU);
    y = model->forward(ones({2, 4}));
  }
  REQUIRE(y.grad_fn());
  CHECK(y.grad_fn()->amp.scope == "fc2");
  CHECK(y.grad_fn()->amp.policy == "lower_precision");
}

TEST_CASE("a module whose forward opens its scope and is called opens it once", "[amp][seed]") {
  std::vector<std::string> seen;
  nn::set_forward_scope_factory([&](const nn::Module& m) -> std::shared_ptr<void> {
    seen.push_back(m.path().empty() ? "root" : m.path());
    return nullptr;
  });
  auto model = std::make_shared<Net>();
  nn::call(model, ones({2, 4}));  // Net::forward opens forward_scope() itself as well
  (*model->fc1)(ones({2, 4}));    // Linear::forward opens it too
  nn::set_forward_scope_factory(nullptr);  // (no way back to the default: this case stays last in the file)
  CHECK(seen == std::vector<std::string>{"root", "fc1", "fc2", "fc1"});
}
