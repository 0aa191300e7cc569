// Anomaly mode (torch.autograd.detect_anomaly): with the switch on, a NaN/inf made in forward is
// reported naming the op, its module path and the graph node, and one made in backward naming the
// backward node and the forward op that recorded it; with it off (the default) no check runs.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "autocast/state.h"
#include "autograd/engine.h"
#include "framework/anomaly_mode.h"
#include "framework/grad_mode.h"
#include "nn/activation.h"
#include "nn/linear.h"
#include "ops/anomaly.h"
#include "ops/ops.h"

using namespace minidl;
using Catch::Contains;

namespace {
// fc1 -> relu -> fc2, with module paths "fc1" and "fc2".
struct TwoLayer : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  TwoLayer() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(3, 4));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(4, 2));
  }
  Tensor forward(const Tensor& x) {
    auto s = forward_scope();
    return fc2->forward(relu(fc1->forward(x)));
  }
};

// The message of the minidl::Error fn throws ("" when it throws none).
template <class F>
std::string error_of(F fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("anomaly mode is off by default and DetectAnomaly restores the previous setting", "[anomaly]") {
  CHECK_FALSE(AnomalyMode::is_enabled());
  {
    DetectAnomaly on;
    CHECK(AnomalyMode::is_enabled());
    {
      DetectAnomaly off(false);
      CHECK_FALSE(AnomalyMode::is_enabled());
    }
    CHECK(AnomalyMode::is_enabled());
  }
  CHECK_FALSE(AnomalyMode::is_enabled());
  AnomalyMode::set_enabled(true);
  CHECK(AnomalyMode::is_enabled());
  AnomalyMode::set_enabled(false);
}

TEST_CASE("anomaly mode off runs no check: NaN and inf pass silently, as without it", "[anomaly]") {
  const uint64_t before = autograd::anomaly_checks();
  auto net = std::make_shared<TwoLayer>();
  Tensor loss = net->forward(ones({2, 3})).sum();
  loss.backward();
  Tensor x = from_vector<float>({0.0f, 4.0f}).requires_grad_();
  Tensor y = sqrt(x).sum();
  y.backward();  // d sqrt / dx at 0 is inf
  CHECK(std::isinf(x.grad().to_vector<float>()[0]));
  CHECK(std::isnan(log(from_vector<float>({-1.0f})).item()));
  CHECK(autograd::anomaly_checks() == before);
}

TEST_CASE("anomaly mode on checks forward outputs and gradients of a clean step without changing them", "[anomaly]") {
  manual_seed(5);
  auto a = std::make_shared<TwoLayer>();
  manual_seed(5);
  auto b = std::make_shared<TwoLayer>();
  const Tensor x = from_vector<float>({0.5f, -1.0f, 2.0f, 0.25f, 1.5f, -0.75f}, {2, 3});
  a->forward(x).sum().backward();
  const uint64_t before = autograd::anomaly_checks();
  {
    DetectAnomaly on;
    b->forward(x).sum().backward();  // saved tensors are read, not bumped: backward still works
  }
  CHECK(autograd::anomaly_checks() > before);
  const auto pa = a->parameters(), pb = b->parameters();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) CHECK(pa[i].grad().to_vector<float>() == pb[i].grad().to_vector<float>());
}

TEST_CASE("anomaly mode reports a NaN made in forward naming the op, its module path and its graph node", "[anomaly]") {
  DetectAnomaly on;
  Tensor x = from_vector<float>({1.0f, -1.0f}).requires_grad_();
  std::string msg;
  {
    amp::ScopeName scope("encoder.block");
    msg = error_of([&] { log(x); });
  }
  CHECK_THAT(msg, Contains("anomaly mode") && Contains("the forward op log") && Contains("graph node LogBackward #") &&
                      Contains("in module 'encoder.block'") && Contains("produced nan values in its output 0") &&
                      Contains("every input was finite, so this op made it"));
  // Under no-grad no node is recorded, and the op is still checked.
  NoGradGuard ng;
  CHECK_THAT(error_of([&] { sqrt(from_vector<float>({-4.0f})); }),
             Contains("the forward op sqrt") && Contains("no graph node: grad mode is off") && Contains("outside any module"));
}

TEST_CASE("anomaly mode names the module whose op first sees a non-finite parameter, and says it came in", "[anomaly]") {
  auto net = std::make_shared<TwoLayer>();
  {
    NoGradGuard ng;
    net->fc2->weight.fill_(std::numeric_limits<double>::infinity());
  }
  DetectAnomaly on;
  const std::string msg = error_of([&] { net->forward(ones({2, 3})); });
  CHECK_THAT(msg, Contains("in module 'fc2'") && Contains("produced inf values") && Contains("already held inf values"));
  CHECK_THAT(msg, !Contains("module 'fc1'"));
}

TEST_CASE("anomaly mode reports a backward that makes inf (sqrt at 0) naming the forward op and module", "[anomaly]") {
  DetectAnomaly on;
  Tensor x = from_vector<float>({0.0f, 4.0f}).requires_grad_();
  Tensor y;
  {
    amp::ScopeName scope("head");
    y = mul(sqrt(x), 3.0).sum();  // forward is finite: sqrt(0) = 0
  }
  const std::string msg = error_of([&] { y.backward(); });
  CHECK_THAT(msg, Contains("Function 'SqrtBackward' returned inf values in its gradient for input 0") &&
                      Contains("recorded by the forward op sqrt") && Contains("in module 'head'"));
  CHECK_FALSE(x.grad().defined());  // the walk stopped before the leaf
}

TEST_CASE("anomaly mode reports a NaN gradient (0 * inf in a backward) and checks grad() too", "[anomaly]") {
  DetectAnomaly on;
  // d sqrt(x) / dx at 0 is g / (2 sqrt(0)): the incoming 0 from mul by 0 makes it 0 / 0 = NaN.
  Tensor x = from_vector<double>({0.0}).requires_grad_();
  Tensor y = mul(sqrt(x), 0.0).sum();
  CHECK_THAT(error_of([&] { autograd::grad({y}, {x}); }),
             Contains("Function 'SqrtBackward' returned nan values") && Contains("forward op sqrt"));
}

TEST_CASE("forward_op_name turns a backward node's name into its forward op", "[anomaly]") {
  CHECK(autograd::forward_op_name("SqrtBackward") == "sqrt");
  CHECK(autograd::forward_op_name("LeakyReluBackward") == "leaky_relu");
  CHECK(autograd::forward_op_name("MaxPool2DWithIndicesBackward") == "max_pool2d_with_indices");
  CHECK(autograd::forward_op_name("ReluBackwardBackward") == "relu_backward");
  CHECK(autograd::forward_op_name("AccumulateGrad") == "accumulate_grad");
}
