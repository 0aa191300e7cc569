// Bad class targets and indices on a GPU, and the losses that must not wait for the device
// (framework/deferred_error.h): the kernels record the first bad value in a device-resident slot and
// the host reports it at its next wait (item(), copies to the host, cuda::synchronize(), GradScaler's
// step), in the CPU's words, then clears it so the device goes on working. Three parts:
// - the messages, against the CPU ops' own (runs on every machine);
// - cross_entropy / nll_loss forward and backward queue without a single host wait and agree with
//   the CPU, and a whole training step waits for nothing;
// - every bad input is reported at the next wait, naming its op and value, the first one wins, and
//   the next correct call works.
// The device parts skip without a GPU (and fail under MINIDL_EXPECT_GPU=1); with
// MINIDL_CUDA_TESTS_ON_CPU=1 the CPU stands in, and its ops report bad input at once instead.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "amp/grad_scaler.h"
#include "cuda_checks.h"
#include "framework/cuda.h"
#include "framework/deferred_error.h"
#include "minidl.h"
#include "targets.h"

using namespace minidl;
using namespace minidl::cuda_test;
using Catch::Matchers::Contains;

namespace {
const char* const kDeferredWords = "reported at the next synchronisation";

cuda::DeferredErrorRecord record(cuda::DeferredOp op, int64_t value, int64_t bound, int64_t detail = 0) {
  cuda::DeferredErrorRecord r;
  r.op = static_cast<int32_t>(op);
  r.value = value;
  r.bound = bound;
  r.detail = detail;
  return r;
}

// The message a CPU call throws ("" when it does not throw).
std::string cpu_message(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Tensor i64(std::vector<int64_t> v, Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  return from_vector<int64_t>(v, shape);
}

// Bad input on the device under test. On a GPU `call` must return without waiting for the device,
// and `wait` (a host wait on its result) must throw a message containing `words`; after that,
// nothing is pending. On the CPU stand-in, `call` itself throws.
void expect_reported_at_next_wait(const std::function<Tensor()>& call, const std::function<void(const Tensor&)>& wait,
                                  const std::string& words) {
  INFO("expected: " << words);
  if (!kCuda.is_cuda()) {
    CHECK_THROWS_WITH(call(), Contains(words));
    return;
  }
  const int64_t syncs = cuda::host_sync_count();
  Tensor out;
  REQUIRE_NOTHROW(out = call());
  CHECK(cuda::host_sync_count() == syncs);  // queued, not waited for
  CHECK_THROWS_WITH(wait(out), Contains(words) && Contains(kDeferredWords));
  CHECK_NOTHROW(cuda::synchronize());  // reported once: the slot is clear again
}

void wait_item(const Tensor& t) { (void)sum(cast(t, DType::F64)).item(); }
void wait_to_cpu(const Tensor& t) { (void)t.to(Device::cpu()); }
void wait_synchronize(const Tensor&) { cuda::synchronize(); }

// Loss tolerance: both sides compute each row's loss in f32 (f64) from the same logits, whose exp
// and log differ by a few ulp (growing with sqrt(C) over the row's sum), and sum the rows in f64
// (fused) or in the compute dtype in another order (composed paths: up to `rows` roundings).
double loss_tol(DType t, int64_t classes, int64_t rows) {
  const double acc = t == DType::F64 ? eps_of(DType::F64) : eps_of(DType::F32);
  return 2 * eps_of(t) + 8 * std::sqrt(static_cast<double>(classes)) * acc + static_cast<double>(rows) * acc;
}
}  // namespace

// ================================================================ messages (every machine)

TEST_CASE("deferred errors: the device reports bad input in the CPU ops' words, and says where it was found", "[errors][deferred]") {
  const std::string where = "; found on cuda:0 and reported at the next synchronisation";
  const Tensor logits = randn_cpu({3, 10}, DType::F32, 1);
  struct Case {
    const char* what;
    std::function<void()> cpu_call;
    cuda::DeferredErrorRecord device_record;
  };
  const std::vector<Case> cases = {
      {"cross_entropy", [&] { cross_entropy(logits, i64({1, 12, -100})); }, record(cuda::DeferredOp::CrossEntropy, 12, 10, -100)},
      {"cross_entropy, other ignore_index",
       [&] {
         CrossEntropyOptions o;
         o.ignore_index = 3;
         cross_entropy(logits, i64({-1, 3, 0}), o);
       },
       record(cuda::DeferredOp::CrossEntropy, -1, 10, 3)},
      {"nll_loss", [&] { nll_loss(log_softmax(logits, 1), i64({10, 0, 0})); }, record(cuda::DeferredOp::NllLoss, 10, 10, -100)},
      {"index_select dim 0", [] { index_select(zeros({5, 3}), 0, i64({1, 7})); }, record(cuda::DeferredOp::IndexSelect, 7, 5, 0)},
      {"index_select dim 1", [] { index_select(zeros({5, 3}), 1, i64({-1})); }, record(cuda::DeferredOp::IndexSelect, -1, 3, 1)},
      {"gather", [] { gather(zeros({2, 4}), 1, i64({0, 5, 1, 2}, {2, 2})); }, record(cuda::DeferredOp::Gather, 5, 4, 1)},
      {"embedding", [] { embedding(i64({1, 9}), zeros({4, 2})); }, record(cuda::DeferredOp::Embedding, 9, 4)},
      {"embedding, negative", [] { embedding(i64({-2, 1}), zeros({4, 2})); }, record(cuda::DeferredOp::Embedding, -2, 4)},
      {"one_hot, too large", [] { one_hot(i64({1, 5}), 3); }, record(cuda::DeferredOp::OneHot, 5, 3)},
      {"one_hot, negative", [] { one_hot(i64({-1}), 3); }, record(cuda::DeferredOp::OneHot, -1, 3)},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string cpu = cpu_message(c.cpu_call);
    REQUIRE(!cpu.empty());
    CHECK(cuda::describe(c.device_record, 0) == cpu + where);
  }
  CHECK_THAT(cuda::describe(record(cuda::DeferredOp::Gather, 5, 4, 1), 3), Contains("found on cuda:3"));
  CHECK_THAT(cuda::describe(record(static_cast<cuda::DeferredOp>(99), 5, 4), 0), Contains("unknown op id 99"));
}

// ================================================================ no waits, CPU agreement

TEST_CASE("cuda: cross_entropy and nll_loss forward and backward never wait for the device and agree with the CPU", "[cuda][loss][deferred]") {
  MINIDL_REQUIRE_GPU();
  manual_seed(5);
  const int64_t rows = 64, classes = 10;
  const Tensor x0 = randn_cpu({rows, classes}, DType::F32, 11, 3.0);
  Tensor target = randint(0, classes, {rows}, DType::I64);
  target.slice(0, 0, 5).fill_(-100);  // ignored rows
  const Tensor weight = add(rand({classes}), 0.5);
  const Tensor all_ignored = full({rows}, -100.0, DType::I64);
  const Tensor x3 = randn_cpu({8, classes, 4}, DType::F32, 12, 3.0);  // [N, C, d]: the fused path permutes
  Tensor target3 = randint(0, classes, {8, 4}, DType::I64);
  target3.slice(0, 0, 1).fill_(-100);

  using LossFn = std::function<Tensor(const Tensor& x, const Tensor& target, const Tensor& weight)>;
  auto ce = [](Reduction red, bool weighted, double smoothing) -> LossFn {
    return [=](const Tensor& x, const Tensor& t, const Tensor& w) {
      CrossEntropyOptions o;
      o.reduction = red;
      o.label_smoothing = smoothing;
      if (weighted) o.weight = w;
      return cross_entropy(x, t, o);
    };
  };
  auto nll = [](Reduction red, bool weighted) -> LossFn {
    return [=](const Tensor& x, const Tensor& t, const Tensor& w) {
      CrossEntropyOptions o;
      o.reduction = red;
      if (weighted) o.weight = w;
      return nll_loss(log_softmax(x, 1), t, o);
    };
  };
  struct Case {
    const char* name;
    LossFn loss;
    Reduction red;
    const Tensor* x;
    const Tensor* target;
  };
  const std::vector<Case> cases = {
      {"fused mean", ce(Reduction::Mean, false, 0), Reduction::Mean, &x0, &target},
      {"fused sum", ce(Reduction::Sum, false, 0), Reduction::Sum, &x0, &target},
      {"fused none", ce(Reduction::None, false, 0), Reduction::None, &x0, &target},
      {"fused mean, every target ignored (NaN loss, zero gradient)", ce(Reduction::Mean, false, 0), Reduction::Mean, &x0, &all_ignored},
      {"fused mean over [N, C, d]", ce(Reduction::Mean, false, 0), Reduction::Mean, &x3, &target3},
      {"weighted mean", ce(Reduction::Mean, true, 0), Reduction::Mean, &x0, &target},
      {"label smoothing mean", ce(Reduction::Mean, false, 0.1), Reduction::Mean, &x0, &target},
      {"weighted label smoothing sum", ce(Reduction::Sum, true, 0.2), Reduction::Sum, &x0, &target},
      {"nll_loss mean", nll(Reduction::Mean, false), Reduction::Mean, &x0, &target},
      {"nll_loss weighted none", nll(Reduction::None, true), Reduction::None, &x0, &target},
  };
  const Tensor dweight = weight.to(kCuda);
  for (const Case& c : cases) {
    INFO(c.name);
    const Tensor dtarget = c.target->to(kCuda);
    Tensor hx = leaf_on_cpu(*c.x), dx = leaf_on_device(*c.x);
    Tensor hl = c.loss(hx, *c.target, weight);
    const Tensor g = c.red == Reduction::None ? randn_cpu(hl.shape(), DType::F32, 13) : ones({});
    const Tensor dg = g.to(kCuda);
    const int64_t syncs = cuda::host_sync_count();
    Tensor dl = c.loss(dx, dtarget, dweight);
    dl.backward(dg);
    CHECK(cuda::host_sync_count() == syncs);  // forward and backward queued, never waited for
    hl.backward(g);
    const double tol = loss_tol(DType::F32, classes, c.x->numel() / classes);
    check_close(dl, hl, tol, tol, std::string(c.name) + ": loss");
    check_close(dx.grad(), hx.grad(), 4 * tol, 4 * tol * 1e-2, std::string(c.name) + ": gradient");
  }
}

TEST_CASE("cuda: an MLP training step under autocast with cross_entropy waits for the device zero times", "[cuda][train][deferred]") {
  MINIDL_REQUIRE_GPU();
  manual_seed(2);
  auto model = std::make_shared<nn::models::MLP>(32, std::vector<int64_t>{64}, 10);
  model->to(kCuda);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  const Tensor x = randn_cpu({16, 32}, DType::F32, 21).to(kCuda);
  const Tensor y = randint(0, 10, {16}, DType::I64).to(kCuda);
  auto step = [&] {
    opt.zero_grad();
    Tensor loss;
    {
      amp::autocast scope(kCuda.type);
      loss = cross_entropy(model->forward(x), y);
    }
    loss.backward();
    opt.step();
    return loss;
  };
  step();  // first step: lazily created state
  const int64_t syncs = cuda::host_sync_count();
  Tensor last;
  for (int i = 0; i < 3; ++i) last = step();
  CHECK(cuda::host_sync_count() == syncs);
  CHECK(std::isfinite(last.item()));  // the one wait, where the value is asked for
}

// ================================================================ bad input, reported later

TEST_CASE("cuda: a bad target or index is reported at the next host wait, naming the op and value; the device stays usable", "[cuda][errors][deferred]") {
  MINIDL_REQUIRE_GPU();
  const Tensor logits = randn_cpu({4, 10}, DType::F32, 31).to(kCuda);
  const Tensor bad_target = i64({1, 12, 3, -100}).to(kCuda);
  const Tensor good_target = i64({1, 9, 3, -100});
  const Tensor weight = add(rand({10}), 0.5).to(kCuda);
  const Tensor table = randn_cpu({5, 3}, DType::F32, 32);
  auto with = [](Reduction red, const Tensor& w, double smoothing) {
    CrossEntropyOptions o;
    o.reduction = red;
    o.weight = w;
    o.label_smoothing = smoothing;
    return o;
  };

  SECTION("cross_entropy, fused, at item()") {
    expect_reported_at_next_wait([&] { return cross_entropy(logits, bad_target); }, wait_item,
                                 "cross_entropy: target 12 is out of bounds for 10 classes (expected 0..9 or ignore_index -100)");
  }
  SECTION("cross_entropy, fused, no reduction, at a copy to the host") {
    expect_reported_at_next_wait([&] { return cross_entropy(logits, bad_target, with(Reduction::None, Tensor(), 0)); },
                                 wait_to_cpu, "cross_entropy: target 12 is out of bounds for 10 classes");
  }
  SECTION("cross_entropy with class weights and label smoothing names the target, not the weight lookup") {
    expect_reported_at_next_wait([&] { return cross_entropy(logits, bad_target, with(Reduction::Mean, weight, 0.1)); },
                                 wait_item, "cross_entropy: target 12 is out of bounds for 10 classes");
  }
  SECTION("nll_loss, at cuda::synchronize()") {
    expect_reported_at_next_wait([&] { return nll_loss(log_softmax(logits, 1), bad_target); }, wait_synchronize,
                                 "nll_loss: target 12 is out of bounds for 10 classes");
  }
  SECTION("cross_entropy's backward runs on a bad target without faulting") {
    Tensor x = leaf_on_device(logits);
    expect_reported_at_next_wait(
        [&] {
          Tensor loss = cross_entropy(x, bad_target);
          loss.backward();
          return x.grad();
        },
        wait_item, "cross_entropy: target 12");
  }
  SECTION("index_select and its backward") {
    Tensor w = leaf_on_device(table);
    expect_reported_at_next_wait(
        [&] {
          Tensor out = index_select(w, 0, i64({0, 7, 2}).to(kCuda));
          out.sum().backward();
          return out;
        },
        wait_item, "index_select: index 7 is out of bounds for dimension 0 with size 5");
  }
  SECTION("gather and its backward") {
    Tensor w = leaf_on_device(table);
    expect_reported_at_next_wait(
        [&] {
          Tensor out = gather(w, 1, i64({0, 3, 1, 2}, {2, 2}).to(kCuda));
          out.sum().backward();
          return out;
        },
        wait_to_cpu, "gather: index 3 is out of bounds for dimension 1 with size 3");
  }
  SECTION("embedding and its backward") {
    Tensor w = leaf_on_device(table);
    expect_reported_at_next_wait(
        [&] {
          Tensor out = embedding(i64({1, 4, -3}, {3}).to(kCuda), w);
          out.sum().backward();
          return out;
        },
        wait_item, "embedding: index -3 is out of range for a table of 5 rows");
  }
  SECTION("one_hot with num_classes") {
    expect_reported_at_next_wait([&] { return one_hot(i64({0, 2, 3}).to(kCuda), 3); }, wait_item,
                                 "one_hot: class values must be smaller than num_classes (3), got 3");
  }

  // Whichever bad input came before: the device is usable and agrees with the CPU.
  const Tensor hlogits = logits.to(Device::cpu());
  check_close(cross_entropy(logits, good_target.to(kCuda)), cross_entropy(hlogits, good_target),
              loss_tol(DType::F32, 10, 4), loss_tol(DType::F32, 10, 4), "cross_entropy after a reported error");
  check_equal(index_select(table.to(kCuda), 0, i64({4, 0}).to(kCuda)), index_select(table, 0, i64({4, 0})), "index_select after");
  check_equal(embedding(i64({2, 2}).to(kCuda), table.to(kCuda)), embedding(i64({2, 2}), table), "embedding after");
  check_equal(one_hot(i64({0, 2}).to(kCuda), 3), one_hot(i64({0, 2}), 3), "one_hot after");
  CHECK_NOTHROW(cuda::synchronize());
}

TEST_CASE("cuda: the first bad input is the one reported, once", "[cuda][errors][deferred]") {
  MINIDL_REQUIRE_GPU();
  if (!kCuda.is_cuda()) return;  // the CPU reports each at once
  const Tensor table = randn_cpu({5, 3}, DType::F32, 41).to(kCuda);
  const Tensor logits = randn_cpu({2, 10}, DType::F32, 42).to(kCuda);
  // One stream: the index_select kernel finishes before the cross_entropy kernel starts.
  Tensor a = index_select(table, 0, i64({6}).to(kCuda));
  Tensor b = cross_entropy(logits, i64({0, 11}).to(kCuda));
  CHECK_THROWS_WITH(b.item(), Contains("index_select: index 6") && !Contains("cross_entropy"));
  CHECK_NOTHROW(b.item());  // the later error was not kept: the slot holds one record, then is cleared
  // A new error after the report is reported in turn.
  Tensor c = gather(table, 0, i64({0, 9, 0}, {1, 3}).to(kCuda));
  CHECK_THROWS_WITH(cuda::synchronize(), Contains("gather: index 9 is out of bounds for dimension 0 with size 5"));
}

TEST_CASE("cuda: a bad target is reported at GradScaler's step, and the next step trains", "[cuda][amp][errors][deferred]") {
  MINIDL_REQUIRE_GPU();
  if (!kCuda.is_cuda()) return;  // the CPU reports it at the loss
  const Tensor x = randn_cpu({4, 6}, DType::F32, 51).to(kCuda);
  Tensor w = leaf_on_device(randn_cpu({6, 10}, DType::F32, 52));
  optim::SGD opt(std::vector<Tensor>{w}, optim::SGDOptions(0.1));
  {
    amp::GradScaler scaler(kCuda);
    Tensor loss = cross_entropy(mm(x, w), i64({1, 2, 10, 3}).to(kCuda));
    scaler.scale(loss).backward();  // no wait yet
    CHECK_THROWS_WITH(scaler.step(opt), Contains("cross_entropy: target 10 is out of bounds for 10 classes"));
  }
  opt.zero_grad();
  amp::GradScaler scaler(kCuda);
  Tensor loss = cross_entropy(mm(x, w), i64({1, 2, 9, 3}).to(kCuda));
  scaler.scale(loss).backward();
  const auto r = scaler.step(opt);
  scaler.update();
  CHECK(r.stepped);
  CHECK_FALSE(r.found_inf);
  CHECK(std::isfinite(loss.item()));
}
