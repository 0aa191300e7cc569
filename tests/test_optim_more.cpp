// Adadelta, Adamax, NAdam, RAdam, Rprop and ASGD against torch's trajectories (tests/torch_refs/optim_more.py:
// torch 1.13's optimizers, and torch 2.x's single-tensor code for NAdam and decoupled weight decay),
// in f64 to 1e-12 and in f32 within a few ulps per step; maximize, decoupled weight decay, state
// dicts, GradScaler and errors.
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gradcheck.h"
#include "minidl.h"
#include "optim_more_torch_values.h"
#include "sine_operands.h"

using namespace minidl;
using namespace minidl::optim;
using Catch::Contains;
using testing::sine_operand;

namespace {
constexpr int kSteps = 8;
constexpr int64_t kN = 5;
using Make = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>;

// The script's run: parameter operand 0, gradient operand 1 + s at step s; every step's parameter.
Tensor trajectory(const Make& make, DType dtype) {
  Tensor p = cast(sine_operand(0, {kN}), dtype).requires_grad_();
  std::unique_ptr<Optimizer> opt = make({p});
  std::vector<Tensor> steps;
  for (int s = 0; s < kSteps; ++s) {
    p.set_grad(cast(sine_operand(1 + s, {kN}), dtype));
    opt->step();
    steps.push_back(p.detach().clone());
  }
  return cat(steps);
}

template <class O, class Options>
Make maker(Options o) {
  return [o](std::vector<Tensor> ps) { return std::make_unique<O>(std::move(ps), o); };
}

const std::vector<std::pair<std::string, Make>>& cases() {
  static const std::vector<std::pair<std::string, Make>> c = {
      {"adadelta", maker<Adadelta>(AdadeltaOptions())},
      {"adadelta lr0.5 rho0.8 wd0.1 maximize", maker<Adadelta>(AdadeltaOptions(0.5).rho(0.8).weight_decay(0.1).maximize(true))},
      {"adamax", maker<Adamax>(AdamaxOptions())},
      {"adamax lr0.05 betas0.8,0.9 wd0.1 maximize",
       maker<Adamax>(AdamaxOptions(0.05).betas({0.8, 0.9}).weight_decay(0.1).maximize(true))},
      {"radam", maker<RAdam>(RAdamOptions())},
      {"radam lr0.01 betas0.8,0.99 wd0.1", maker<RAdam>(RAdamOptions(0.01).betas({0.8, 0.99}).weight_decay(0.1))},
      {"radam decoupled lr0.01 betas0.8,0.99 wd0.1",
       maker<RAdam>(RAdamOptions(0.01).betas({0.8, 0.99}).weight_decay(0.1).decoupled_weight_decay(true))},
      {"nadam", maker<NAdam>(NAdamOptions())},
      {"nadam lr0.01 md0.1 wd0.1", maker<NAdam>(NAdamOptions(0.01).weight_decay(0.1).momentum_decay(0.1))},
      {"nadam decoupled lr0.01 wd0.1", maker<NAdam>(NAdamOptions(0.01).weight_decay(0.1).decoupled_weight_decay(true))},
      {"rprop", maker<Rprop>(RpropOptions())},
      {"rprop lr0.1 etas0.3,1.5 steps0.01,0.2 maximize",
       maker<Rprop>(RpropOptions(0.1).etas(0.3, 1.5).step_sizes(0.01, 0.2).maximize(true))},
      {"asgd", maker<ASGD>(ASGDOptions())},
      {"asgd lr0.05 lambd0.01 alpha0.5 t0_2 wd0.1", maker<ASGD>(ASGDOptions(0.05).lambd(0.01).alpha(0.5).t0(2).weight_decay(0.1))},
  };
  return c;
}
}  // namespace

TEST_CASE("Adadelta, Adamax, NAdam, RAdam, Rprop and ASGD follow torch's trajectories in f64 and f32", "[optim]") {
  REQUIRE(cases().size() == torch_optim_more_values().size());
  for (const auto& [name, make] : cases()) {
    INFO(name);
    const std::vector<double>& want = torch_optim_more_values().at(name);
    testing::check_printed_values(trajectory(make, DType::F64), want);
    // f32: each step moves the parameter by at most lr-sized amounts computed in a handful of
    // roundings; 8 steps of them stay within 64 f32 ulps of values of order 1.
    const std::vector<double> got = trajectory(make, DType::F32).to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(64 * traits(DType::F32).eps));
  }
}

TEST_CASE("maximize is minimizing the negated objective; decoupled weight decay shrinks first", "[optim]") {
  for (const auto& [name, make] : cases()) {
    if (name.find("maximize") != std::string::npos) continue;
    INFO(name);
    // The same steps with every gradient negated and maximize on.
    Tensor a = sine_operand(0, {kN}).requires_grad_(), b = sine_operand(0, {kN}).requires_grad_();
    std::unique_ptr<Optimizer> oa = make({a});
    Json j = oa->param_groups()[0].options->to_json();
    j["maximize"] = true;
    std::unique_ptr<Optimizer> ob = make({b});
    ob->param_groups()[0].options->from_json(j);
    for (int s = 0; s < kSteps; ++s) {
      a.set_grad(sine_operand(1 + s, {kN}));
      b.set_grad(neg(sine_operand(1 + s, {kN})));
      oa->step();
      ob->step();
    }
    CHECK(testing::max_abs_diff(a, b) == 0);
  }
  // NAdamW's step: p * (1 - lr * wd), then the step without decay, from the same state.
  Tensor a = sine_operand(0, {kN}).requires_grad_(), b = sine_operand(0, {kN}).requires_grad_();
  NAdam decoupled({a}, NAdamOptions(0.01).weight_decay(0.1).decoupled_weight_decay(true));
  NAdam plain({b}, NAdamOptions(0.01));
  for (int s = 0; s < kSteps; ++s) {
    a.set_grad(sine_operand(1 + s, {kN}));
    b.set_grad(sine_operand(1 + s, {kN}));
    {
      NoGradGuard guard;
      b.mul_(1.0 - 0.01 * 0.1);
    }
    decoupled.step();
    plain.step();
  }
  CHECK(testing::max_abs_diff(a, b) == 0);
}

TEST_CASE("the new optimizers save and resume their state, and run under GradScaler", "[optim][amp]") {
  for (const auto& [name, make] : cases()) {
    INFO(name);
    // 3 steps, a state dict, 5 more on a fresh optimizer: the same as 8 uninterrupted.
    Tensor p = sine_operand(0, {kN}).requires_grad_();
    std::unique_ptr<Optimizer> first = make({p});
    for (int s = 0; s < 3; ++s) {
      p.set_grad(sine_operand(1 + s, {kN}));
      first->step();
    }
    const StateDict saved = first->state_dict();
    std::unique_ptr<Optimizer> resumed = make({p});
    resumed->load_state_dict(saved);
    for (int s = 3; s < kSteps; ++s) {
      p.set_grad(sine_operand(1 + s, {kN}));
      resumed->step();
    }
    const std::vector<double> want = torch_optim_more_values().at(name);
    testing::check_printed_values(p, std::vector<double>(want.end() - kN, want.end()));
  }
  // NAdam's mu_product is one value per parameter; a state dict with another shape is refused.
  Tensor q = sine_operand(0, {kN}).requires_grad_();
  NAdam nadam({q}, NAdamOptions());
  q.set_grad(sine_operand(1, {kN}));
  nadam.step();
  StateDict sd = nadam.state_dict();
  CHECK(sd.tensors.at("state.0.mu_product").shape() == Shape{});
  sd.tensors.set("state.0.mu_product", ones({kN}));
  CHECK_THROWS_WITH(nadam.load_state_dict(sd), Contains("'state.0.mu_product' has shape [5] but a scalar state has shape []"));
  sd.tensors.set("state.0.mu_product", ones({}));
  sd.tensors.set("state.0.exp_avg", ones({}));
  CHECK_THROWS_WITH(nadam.load_state_dict(sd), Contains("'state.0.exp_avg' has shape [] but the parameter has shape [5]"));
  // A scaled f32 loss: the scaler unscales before the step and skips the step of an inf gradient.
  Tensor w = full({3}, 0.5).requires_grad_();
  NAdam opt({w}, NAdamOptions(0.1));
  amp::GradScaler scaler;
  scaler.scale(sum(mul(w, w))).backward();
  scaler.step(opt);
  scaler.update();
  CHECK(w.to_vector<double>()[0] < 0.5);
  const std::vector<double> before = w.to_vector<double>();
  opt.zero_grad();
  scaler.scale(sum(mul(w, full({3}, INFINITY)))).backward();
  scaler.step(opt);
  scaler.update();
  CHECK(w.to_vector<double>() == before);
}

TEST_CASE("the new optimizers refuse bad hyper-parameters with torch's words", "[optim]") {
  Tensor p = zeros({2}).requires_grad_();
  CHECK_THROWS_WITH(Adadelta({p}, AdadeltaOptions().rho(1.5)), Contains("Adadelta") && Contains("Invalid rho value: 1.5"));
  CHECK_THROWS_WITH(Adamax({p}, AdamaxOptions().betas({1.0, 0.9})), Contains("Invalid beta parameter at index 0: 1"));
  CHECK_THROWS_WITH(RAdam({p}, RAdamOptions(-1.0)), Contains("RAdam") && Contains("Invalid learning rate: -1"));
  CHECK_THROWS_WITH(NAdam({p}, NAdamOptions().momentum_decay(-0.1)), Contains("Invalid momentum_decay value: -0.1"));
  CHECK_THROWS_WITH(NAdam({p}, NAdamOptions().eps(-1.0)), Contains("Invalid epsilon value: -1"));
  CHECK_THROWS_WITH(Rprop({p}, RpropOptions().etas(1.2, 0.5)), Contains("Rprop") && Contains("Invalid eta values: 1.2, 0.5"));
  CHECK_THROWS_WITH(ASGD({p}, ASGDOptions().weight_decay(-1)), Contains("ASGD") && Contains("Invalid weight_decay value: -1"));
}

TEST_CASE("ASGD's average of the iterates and its f32 eta and mu match torch's state", "[optim]") {
  Tensor p = sine_operand(0, {kN}).requires_grad_();
  ASGD asgd({p}, ASGDOptions(0.05).lambd(0.01).alpha(0.5).t0(2).weight_decay(0.1));
  for (int s = 0; s < kSteps; ++s) {
    p.set_grad(sine_operand(1 + s, {kN}));
    asgd.step();
  }
  const TensorDict& st = asgd.state(p).buffers;
  testing::check_printed_values(st["ax"], torch_asgd_state_values().at("ax"));
  CHECK(st["eta"].dtype() == DType::F32);
  CHECK(st["eta"].shape() == Shape{});
  CHECK(st["eta"].item() == torch_asgd_state_values().at("eta")[0]);  // the same f32 value
  CHECK(st["mu"].item() == torch_asgd_state_values().at("mu")[0]);
  CHECK(asgd.state_dict().tensors.at("state.0.mu").shape() == Shape{});
}
