// ctc_loss and nn::CTCLoss against torch 1.13's (tests/torch_refs/ctc_loss.py): values and
// gradients, through PyTorch's gradient formula on a log_probs leaf and exactly through a
// log_softmax; f64 finite differences of the latter; a brute-force sum over every alignment; inf
// and zero_infinity; lengths as tensors or vectors; autocast; errors; a [cuda] case.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "minidl.h"
#include "ctc_loss_torch_values.h"
#include "cuda_checks.h"
#include "gradcheck.h"
#include "sine_operands.h"

using namespace minidl;
using Catch::Contains;
using testing::check_printed_case;
using testing::sine_leaves;

namespace {
Tensor i64s(std::vector<int64_t> v, Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  return from_vector<int64_t>(v, shape);
}

struct Case {
  std::string name;
  std::vector<Shape> shapes;
  std::function<Tensor(const std::vector<Tensor>&)> fn;
};
// The torch script's cases; targets and lengths on `device`.
std::vector<Case> cases(Device device = Device::cpu()) {
  const Tensor padded = i64s({1, 1, 2, 3, 3, 2, 0, 0, 0, 0, 0, 0}, {3, 4}).to(device);
  const Tensor concatenated = i64s({1, 1, 2, 3, 3, 2}).to(device);
  const Tensor il = i64s({6, 4, 3}).to(device), tl = i64s({4, 2, 0}).to(device);
  const Tensor shortest = i64s({6, 2, 3}).to(device), impossible = i64s({6, 1, 3}).to(device);
  return {
      {"lp_mean", {{6, 3, 5}}, [=](auto& x) { return ctc_loss(x[0], padded, il, tl); }},
      {"lp_none", {{6, 3, 5}}, [=](auto& x) { return ctc_loss(x[0], padded, il, tl, 0, Reduction::None); }},
      {"logits_mean", {{6, 3, 5}}, [=](auto& x) { return ctc_loss(log_softmax(x[0], 2), padded, il, tl); }},
      {"logits_sum_1d", {{6, 3, 5}},
       [=](auto& x) { return ctc_loss(log_softmax(x[0], 2), concatenated, il, tl, 0, Reduction::Sum); }},
      {"logits_none_blank4", {{6, 3, 5}},
       [=](auto& x) { return ctc_loss(log_softmax(x[0], 2), padded, shortest, tl, 4, Reduction::None); }},
      {"logits_zero_infinity", {{6, 3, 5}},
       [=](auto& x) { return ctc_loss(log_softmax(x[0], 2), padded, impossible, tl, 0, Reduction::None, true); }},
      {"logits_unbatched", {{6, 5}},
       [=](auto& x) {
         return ctc_loss(log_softmax(x[0], 1), i64s({1, 1, 2}).to(device), scalar_tensor(5, DType::I64).to(device),
                         scalar_tensor(3, DType::I64).to(device), 0, Reduction::Sum);
       }},
  };
}

// -log of the summed probability of every frame labelling that collapses (merge repeats, drop blanks) to target.
double brute_force_nll(const std::vector<std::vector<double>>& probs, const std::vector<int64_t>& target, int64_t blank) {
  const size_t T = probs.size(), C = probs[0].size();
  double total = 0;
  std::vector<size_t> path(T, 0);
  while (true) {
    std::vector<int64_t> collapsed;
    for (size_t t = 0; t < T; ++t) {
      const auto c = static_cast<int64_t>(path[t]);
      if (c != blank && (t == 0 || path[t - 1] != path[t])) collapsed.push_back(c);
    }
    if (collapsed == target) {
      double p = 1;
      for (size_t t = 0; t < T; ++t) p *= probs[t][path[t]];
      total += p;
    }
    size_t t = 0;
    while (t < T && ++path[t] == C) path[t++] = 0;
    if (t == T) break;
  }
  return -std::log(total);
}
}  // namespace

TEST_CASE("ctc_loss matches torch: values and gradients", "[ctc_loss][torch]") {
  for (const Case& c : cases()) {
    std::vector<Tensor> in = sine_leaves(c.shapes);
    check_printed_case(torch_ctc_loss_values(), c.name, c.fn(in), in);
  }
}

TEST_CASE("ctc_loss: f64 finite differences through log_softmax", "[ctc_loss][gradcheck]") {
  for (const Case& c : cases()) {
    if (c.name.rfind("logits_", 0) != 0) continue;  // a log_probs leaf gets PyTorch's formula, not the derivative
    INFO(c.name);
    CHECK(testing::check_gradients(c.fn, sine_leaves(c.shapes, 2), 1e-6, 1e-7) == "");
  }
}

TEST_CASE("ctc_loss equals the brute-force sum over alignments", "[ctc_loss]") {
  // T = 5 frames of 3 classes: 243 labellings, each collapsed and summed.
  const Tensor logits = sine_leaves({{5, 1, 3}}, 4)[0];
  const Tensor lp = log_softmax(logits, 2);
  const std::vector<double> p = exp(lp).to_vector<double>();
  std::vector<std::vector<double>> probs(5, std::vector<double>(3));
  for (size_t t = 0; t < 5; ++t)
    for (size_t c = 0; c < 3; ++c) probs[t][c] = p[t * 3 + c];
  for (const auto& [target, blank] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
           {{1, 2}, 0}, {{1, 1}, 0}, {{2, 2, 1}, 0}, {{}, 0}, {{0, 2}, 1}}) {
    INFO("target of " << target.size() << " labels, blank " << blank);
    const auto len = static_cast<int64_t>(target.size());
    Tensor y = ctc_loss(lp, i64s(target.empty() ? std::vector<int64_t>{0} : target, {1, std::max<int64_t>(len, 1)}),
                        std::vector<int64_t>{5}, std::vector<int64_t>{len}, blank, Reduction::Sum);
    CHECK(y.item() == Approx(brute_force_nll(probs, target, blank)).epsilon(1e-12));
  }
}

TEST_CASE("ctc_loss: impossible alignments, empty inputs, lengths as vectors, autocast, the module", "[ctc_loss]") {
  const Tensor lp = log_softmax(sine_leaves({{6, 3, 5}})[0], 2);
  const Tensor padded = i64s({1, 1, 2, 3, 3, 2, 0, 0, 0, 0, 0, 0}, {3, 4});
  // Two labels in one frame: inf (PyTorch's), its gradient NaN-free only with zero_infinity.
  Tensor none = ctc_loss(lp, padded, i64s({6, 1, 3}), i64s({4, 2, 0}), 0, Reduction::None);
  const std::vector<double> v = none.to_vector<double>();
  CHECK(std::isinf(v[1]));
  CHECK(std::isfinite(v[0]));
  // A repeated label needs a blank between: "1 1 2 3" in 4 frames is impossible, in 5 it is not.
  CHECK(std::isinf(ctc_loss(lp, padded, i64s({4, 4, 3}), i64s({4, 2, 0}), 0, Reduction::None).to_vector<double>()[0]));
  CHECK(std::isfinite(ctc_loss(lp, padded, i64s({5, 4, 3}), i64s({4, 2, 0}), 0, Reduction::None).to_vector<double>()[0]));
  // No frames: 0 for an empty target, inf for any other.
  const std::vector<double> empty = ctc_loss(lp, padded, i64s({0, 0, 3}), i64s({0, 2, 0}), 0, Reduction::None).to_vector<double>();
  CHECK(empty[0] == 0.0);
  CHECK(std::isinf(empty[1]));
  // Lengths as host vectors, i32 everywhere: the same loss.
  Tensor a = ctc_loss(lp, padded, i64s({6, 4, 3}), i64s({4, 2, 0}));
  CHECK(testing::max_abs_diff(a, ctc_loss(lp, padded, std::vector<int64_t>{6, 4, 3}, std::vector<int64_t>{4, 2, 0})) == 0.0);
  CHECK(testing::max_abs_diff(a, ctc_loss(lp, cast(padded, DType::I32), cast(i64s({6, 4, 3}), DType::I32),
                                          cast(i64s({4, 2, 0}), DType::I32))) == 0.0);
  // CPU autocast: FP32 (PyTorch's CPU list), so bf16 log_probs run in f32.
  const Tensor lp32 = cast(lp.detach(), DType::F32);
  Tensor reference = ctc_loss(cast(cast(lp32, DType::BF16), DType::F32), padded, i64s({6, 4, 3}), i64s({4, 2, 0}));
  {
    amp::autocast scope(DeviceType::CPU);
    Tensor y = ctc_loss(cast(lp32, DType::BF16), padded, i64s({6, 4, 3}), i64s({4, 2, 0}));
    CHECK(y.dtype() == DType::F32);
    CHECK(testing::max_abs_diff(y, reference) == 0.0);
  }
  nn::CTCLoss module(0, Reduction::Sum);
  CHECK(module.describe() == "CTCLoss(blank=0, reduction=sum, zero_infinity=false)");
  CHECK(testing::max_abs_diff(module(lp, padded, i64s({6, 4, 3}), i64s({4, 2, 0})),
                              ctc_loss(lp, padded, i64s({6, 4, 3}), i64s({4, 2, 0}), 0, Reduction::Sum)) == 0.0);
}

TEST_CASE("ctc_loss: errors name the op and the problem", "[ctc_loss]") {
  const Tensor lp = log_softmax(ones({6, 2, 4}), 2);
  const Tensor targets = i64s({1, 2, 3, 1, 0, 0}, {2, 3});
  const Tensor il = i64s({6, 5}), tl = i64s({3, 1});
  CHECK_THROWS_WITH(ctc_loss(lp, targets, i64s({7, 5}), tl), Contains("ctc_loss: Expected input_lengths to have value at most 6, but got value 7"));
  CHECK_THROWS_WITH(ctc_loss(lp, targets, il, i64s({4, 1})), Contains("Expected tensor to have size at least 4 at dimension 1, but got size 3"));
  CHECK_THROWS_WITH(ctc_loss(lp, targets, il, tl, 4), Contains("blank must be in label range"));
  CHECK_THROWS_WITH(ctc_loss(lp, i64s({1, 2, 3, 1}), il, i64s({3, 2})), Contains("Expected tensor to have size 5 at dimension 0"));
  CHECK_THROWS_WITH(ctc_loss(lp, i64s({1, 2, 4, 1, 0, 0}, {2, 3}), il, tl), Contains("target labels must be in [0, 4)"));
  CHECK_THROWS_WITH(ctc_loss(lp, targets, i64s({-1, 5}), tl), Contains("input_lengths must be non-negative"));
  CHECK_THROWS_WITH(ctc_loss(lp, targets, i64s({6}), tl), Contains("input_lengths must be of size batch_size (2)"));
  CHECK_THROWS_WITH(ctc_loss(cast(lp, DType::BF16), targets, il, tl), Contains("expected f32 or f64 log_probs"));
  CHECK_THROWS_WITH(ctc_loss(lp, cast(targets, DType::F32), il, tl), Contains("expected i64 or i32 targets"));
  CHECK_THROWS_WITH(ctc_loss(ones({2, 6, 2, 4}), targets, il, tl), Contains("log_probs must be [T, N, C] or unbatched [T, C]"));
}

TEST_CASE("cuda: ctc_loss agrees with the CPU, values and gradients", "[cuda][ctc_loss]") {
  using namespace minidl::cuda_test;
  MINIDL_REQUIRE_GPU();
  const std::vector<Case> on_cpu = cases(), on_device = cases(kCuda);
  for (size_t i = 0; i < on_cpu.size(); ++i) {
    INFO(on_cpu[i].name);
    const Tensor v = cast(testing::sine_operand(0, on_cpu[i].shapes[0]), DType::F32);
    std::vector<Tensor> cpu{v.clone().requires_grad_()}, dev{v.to(kCuda).requires_grad_()};
    const Tensor yc = on_cpu[i].fn(cpu), yd = on_device[i].fn(dev);
    sum(mul(yc, testing::cosine_weights(yc.shape()).to(DType::F32))).backward();
    sum(mul(yd, testing::cosine_weights(yd.shape()).to(DType::F32).to(kCuda))).backward();
    check_close(yd.to(Device::cpu()), yc, 1e-5, 1e-5, "loss");
    check_close(dev[0].grad().to(Device::cpu()), cpu[0].grad(), 1e-5, 1e-5, "gradient");
  }
}
