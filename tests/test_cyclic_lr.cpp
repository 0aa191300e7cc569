// CyclicLR against torch 1.13's rates and momenta (tests/torch_refs/cyclic_lr.py ->
// cyclic_lr_torch_values.h): every mode, uneven halves, no momentum cycling, a user scale function;
// beta1 of Adam; errors; a state-dict resume.
#include <catch2/catch.hpp>

#include "cyclic_lr_torch_values.h"
#include "minidl.h"

using namespace minidl;

namespace {

// The script's optimizer: two groups (lr 0.1 and 0.3), momentum 0.5.
struct TwoGroups {
  Tensor p1 = zeros({2}, TensorOptions().requires_grad());
  Tensor p2 = zeros({2}, TensorOptions().requires_grad());
  optim::SGD opt{std::vector<optim::ParamGroup>{optim::ParamGroup({p1}),
                                                optim::ParamGroup({p2}, optim::SGDOptions(0.3).momentum(0.5))},
                 optim::SGDOptions(0.1).momentum(0.5)};
};

void run_case(const std::string& key, int steps, const optim::CyclicLROptions& options) {
  INFO(key);
  TwoGroups g;
  optim::CyclicLR sched(g.opt, options);
  std::vector<double> rates, momenta;
  for (int s = 0; s <= steps; ++s) {
    if (s) {
      g.opt.step();
      sched.step();
    }
    for (const auto& group : g.opt.param_groups()) {
      rates.push_back(group.lr());
      momenta.push_back(*optim::get_momentum(*group.options));
    }
  }
  const auto& want_lr = cyclic_lr_torch_values().at(key + ".lr");
  const auto& want_m = cyclic_lr_torch_values().at(key + ".momentum");
  REQUIRE(rates.size() == want_lr.size());
  REQUIRE(momenta.size() == want_m.size());
  for (size_t i = 0; i < rates.size(); ++i) {
    INFO("value " << i);
    CHECK(rates[i] == Approx(want_lr[i]).epsilon(1e-14));
    CHECK(momenta[i] == Approx(want_m[i]).epsilon(1e-14));
  }
}

}  // namespace

TEST_CASE("CyclicLR: rates and momenta as torch's, every mode", "[optim][scheduler][cyclic]") {
  run_case("triangular", 15, optim::CyclicLROptions({0.01, 0.02}, {0.1, 0.2}).step_size_up(4).step_size_down(2));
  run_case("triangular2", 14,
           optim::CyclicLROptions(0.001, 0.01).step_size_up(3).mode(optim::CyclicMode::Triangular2).cycle_momentum(false));
  run_case("exp_range", 12,
           optim::CyclicLROptions(0.05, 0.5).step_size_up(2).mode(optim::CyclicMode::ExpRange).gamma(0.9).base_momentum(0.7).max_momentum(0.95));
  run_case("custom", 10,
           optim::CyclicLROptions(0.01, 0.03).step_size_up(2).scale_fn([](double x) { return 1 / (1 + 0.1 * x); }, false));
}

TEST_CASE("CyclicLR cycles Adam's beta1, refuses bad options, and resumes from a state dict", "[optim][scheduler][cyclic]") {
  Tensor p = zeros({2}, TensorOptions().requires_grad());
  optim::Adam adam({p}, optim::AdamOptions(1e-3));
  optim::CyclicLR on_adam(adam, optim::CyclicLROptions(1e-4, 1e-2).step_size_up(2));
  on_adam.step();
  CHECK(*optim::get_momentum(*adam.param_groups()[0].options) == Approx(0.85));

  TwoGroups g;
  CHECK_THROWS_WITH(optim::CyclicLR(g.opt, optim::CyclicLROptions({0.1, 0.2, 0.3}, {1.0})),
                    Catch::Contains("CyclicLR") && Catch::Contains("expected 2 values for base_lr, got 3"));
  CHECK_THROWS_WITH(optim::CyclicLR(g.opt, optim::CyclicLROptions(0.1, 1.0).step_size_up(0)),
                    Catch::Contains("step_size_up must be positive"));

  TwoGroups a, b;
  const auto options = optim::CyclicLROptions(0.01, 0.1).step_size_up(3);
  optim::CyclicLR sa(a.opt, options), sb(b.opt, options);
  for (int s = 0; s < 4; ++s) sa.step();
  sb.load_state_dict(sa.state_dict());
  for (int s = 0; s < 5; ++s) {
    sa.step();
    sb.step();
    CHECK(b.opt.param_groups()[1].lr() == a.opt.param_groups()[1].lr());
    CHECK(*optim::get_momentum(*b.opt.param_groups()[0].options) == *optim::get_momentum(*a.opt.param_groups()[0].options));
  }
}
