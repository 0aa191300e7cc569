// ChainedScheduler against torch 1.13's rates (tests/torch_refs/chained_scheduler.py ->
// chained_scheduler_torch_values.h): chains of the multiplicative schedules on two param groups,
// a state-dict resume, and errors (a schedule that is not a factor of the epoch, another optimizer).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include "chained_scheduler_torch_values.h"
#include "minidl.h"

using namespace minidl;
using namespace minidl::optim;
using Catch::Contains;
using Schedules = std::vector<std::shared_ptr<LRScheduler>>;

namespace {
// The script's optimizer: two groups, lr 0.1 and 0.3.
struct TwoGroups {
  Tensor p1 = zeros({2}, TensorOptions().requires_grad());
  Tensor p2 = zeros({2}, TensorOptions().requires_grad());
  SGD opt{std::vector<ParamGroup>{ParamGroup({p1}), ParamGroup({p2}, SGDOptions(0.3))}, SGDOptions(0.1)};
};

using MakeChain = std::function<Schedules(SGD&)>;

std::vector<double> rates_of(SGD& opt) {
  std::vector<double> r;
  for (const auto& group : opt.param_groups()) r.push_back(group.lr());
  return r;
}

void run_case(const std::string& key, int steps, const MakeChain& make) {
  INFO(key);
  TwoGroups g;
  ChainedScheduler sched(make(g.opt));
  std::vector<double> rates;
  for (int s = 0; s <= steps; ++s) {
    if (s) {
      g.opt.step();
      sched.step();
    }
    for (double r : rates_of(g.opt)) rates.push_back(r);
  }
  const auto& want = chained_scheduler_torch_values().at(key);
  REQUIRE(rates.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("entry " << i);
    CHECK(std::abs(rates[i] - want[i]) <= 1e-12 * std::max(1.0, std::abs(want[i])));
  }
}

const MakeChain kStepLinear = [](SGD& o) {
  return Schedules{std::make_shared<StepLR>(o, 3, 0.5), std::make_shared<LinearLR>(o, 0.25, 1.0, 4)};
};
}  // namespace

TEST_CASE("ChainedScheduler matches torch's rates", "[optim][sched]") {
  run_case("constant_exponential", 8, [](SGD& o) {
    return Schedules{std::make_shared<ConstantLR>(o, 0.1, 2), std::make_shared<ExponentialLR>(o, 0.9)};
  });
  run_case("step_linear", 10, kStepLinear);
  run_case("multistep_polynomial_multiplicative", 9, [](SGD& o) {
    return Schedules{std::make_shared<MultiStepLR>(o, std::vector<int64_t>{2, 5}, 0.1),
                     std::make_shared<PolynomialLR>(o, 6, 2.0),
                     std::make_shared<MultiplicativeLR>(o, [](int64_t) { return 0.95; })};
  });
}

TEST_CASE("ChainedScheduler resumes from its state dict", "[optim][sched]") {
  TwoGroups a;
  ChainedScheduler whole(kStepLinear(a.opt));
  for (int s = 0; s < 5; ++s) {
    a.opt.step();
    whole.step();
  }
  const Json state = whole.state_dict();
  CHECK(state.at("schedulers").size() == 2);
  TwoGroups b;
  ChainedScheduler resumed(kStepLinear(b.opt));
  b.opt.load_state_dict(a.opt.state_dict());
  resumed.load_state_dict(state);
  for (int s = 0; s < 5; ++s) {
    a.opt.step();
    whole.step();
    b.opt.step();
    resumed.step();
    CHECK(rates_of(b.opt) == rates_of(a.opt));
  }
}

TEST_CASE("ChainedScheduler errors name the schedule and the problem", "[optim][sched][errors]") {
  TwoGroups g;
  auto cosine = std::make_shared<CosineAnnealingLR>(g.opt, 10);
  auto exp = std::make_shared<ExponentialLR>(g.opt, 0.9);
  CHECK_THROWS_WITH(ChainedScheduler({exp, cosine}),
                    Contains("ChainedScheduler") && Contains("scheduler 1 is a CosineAnnealingLR"));
  CHECK_THROWS_WITH(ChainedScheduler(Schedules{}), Contains("expects at least one scheduler"));
  TwoGroups other;
  auto foreign = std::make_shared<ExponentialLR>(other.opt, 0.9);
  CHECK_THROWS_WITH(ChainedScheduler({exp, foreign}),
                    Contains("ChainedScheduler expects all schedulers to belong to the same optimizer"));
}
