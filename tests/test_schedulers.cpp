// The factor schedules, cosine warm restarts and SequentialLR against torch.optim.lr_scheduler
// 1.13: the rates PyTorch's recursive forms set on an SGD optimizer (base rate 0.5) at construction
// and after each of 12-16 steps, printed by torch and written here; argument errors with PyTorch's
// messages; state dicts that resume a schedule exactly.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "minidl.h"
#include "optim/optim.h"

using namespace minidl;
using namespace minidl::optim;

namespace {
std::vector<Tensor> one_param() { return {zeros({1}).requires_grad_()}; }

// The rate of group 0 after construction and after each of `steps` steps.
std::vector<double> rates(LRScheduler& s, int steps) {
  std::vector<double> out{s.get_last_lr()[0]};
  for (int i = 0; i < steps; ++i) {
    s.step();
    out.push_back(s.get_last_lr()[0]);
    CHECK(s.optimizer().param_groups()[0].lr() == out.back());
  }
  return out;
}

void check_rates(LRScheduler& s, const std::vector<double>& torch) {
  const std::vector<double> got = rates(s, static_cast<int>(torch.size()) - 1);
  for (size_t i = 0; i < torch.size(); ++i) {
    INFO(s.name() << " epoch " << i);
    CHECK(got[i] == Approx(torch[i]).epsilon(1e-12).margin(1e-15));
  }
}
}  // namespace

TEST_CASE("ExponentialLR, ConstantLR, LinearLR and PolynomialLR match torch", "[optim][sched][parity]") {
  auto p = one_param();
  SECTION("ExponentialLR(0.9)") {
    SGD opt(p, SGDOptions(0.5));
    ExponentialLR s(opt, 0.9);
    check_rates(s, {0.5, 0.45, 0.405, 0.36450000000000005, 0.32805000000000006, 0.2952450000000001, 0.2657205000000001,
                    0.23914845000000007, 0.21523360500000008, 0.19371024450000007, 0.17433922005000008,
                    0.15690529804500009, 0.14121476824050008});
  }
  SECTION("ConstantLR(factor 0.25, total_iters 4)") {
    SGD opt(p, SGDOptions(0.5));
    ConstantLR s(opt, 0.25, 4);
    check_rates(s, {0.125, 0.125, 0.125, 0.125, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5});
  }
  SECTION("ConstantLR(factor 0.5, total_iters 0) keeps the factor, as torch's chained form") {
    SGD opt(p, SGDOptions(0.1));
    ConstantLR s(opt, 0.5, 0);
    check_rates(s, {0.05, 0.05, 0.05, 0.05});
  }
  SECTION("LinearLR(0.2 -> 0.8 over 5)") {
    SGD opt(p, SGDOptions(0.5));
    LinearLR s(opt, 0.2, 0.8, 5);
    check_rates(s, {0.1, 0.16000000000000003, 0.22000000000000003, 0.28, 0.3400000000000001, 0.40000000000000013,
                    0.40000000000000013, 0.40000000000000013, 0.40000000000000013, 0.40000000000000013,
                    0.40000000000000013, 0.40000000000000013, 0.40000000000000013});
  }
  SECTION("PolynomialLR(total_iters 6, power 2)") {
    SGD opt(p, SGDOptions(0.5));
    PolynomialLR s(opt, 6, 2.0);
    check_rates(s, {0.5, 0.34722222222222227, 0.2222222222222223, 0.12500000000000003, 0.05555555555555558,
                    0.013888888888888886, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0});
  }
}

TEST_CASE("LambdaLR and MultiplicativeLR match torch", "[optim][sched][parity]") {
  auto p = one_param();
  SECTION("LambdaLR(1 / (1 + e))") {
    SGD opt(p, SGDOptions(0.5));
    LambdaLR s(opt, [](int64_t e) { return 1.0 / (1.0 + static_cast<double>(e)); });
    check_rates(s, {0.5, 0.25, 0.16666666666666666, 0.125, 0.1, 0.08333333333333333, 0.07142857142857142, 0.0625,
                    0.05555555555555555, 0.05, 0.045454545454545456, 0.041666666666666664, 0.038461538461538464});
  }
  SECTION("MultiplicativeLR(0.95 on odd epochs, 0.8 on even)") {
    SGD opt(p, SGDOptions(0.5));
    MultiplicativeLR s(opt, [](int64_t e) { return e % 2 ? 0.95 : 0.8; });
    check_rates(s, {0.5, 0.475, 0.38, 0.361, 0.2888, 0.27436, 0.21948800000000002, 0.2085136, 0.16681088, 0.158470336,
                    0.1267762688, 0.12043745536, 0.09634996428800001});
  }
  SECTION("one lambda per group") {
    Tensor a = zeros({1}).requires_grad_(), b = zeros({1}).requires_grad_();
    SGD opt(std::vector<ParamGroup>{ParamGroup({a}, SGDOptions(0.5)), ParamGroup({b}, SGDOptions(1.0))});
    LambdaLR s(opt, std::vector<LRLambda>{[](int64_t e) { return std::pow(0.5, static_cast<double>(e)); },
                                          [](int64_t e) { return 1.0 + static_cast<double>(e); }});
    const std::vector<std::vector<double>> torch = {{0.5, 1.0}, {0.25, 2.0}, {0.125, 3.0}, {0.0625, 4.0}, {0.03125, 5.0}};
    for (size_t i = 0; i < torch.size(); ++i) {
      if (i > 0) s.step();
      CHECK(s.get_last_lr() == torch[i]);
    }
    CHECK_THROWS_WITH(LambdaLR(opt, std::vector<LRLambda>{[](int64_t) { return 1.0; }, [](int64_t) { return 1.0; },
                                                          [](int64_t) { return 1.0; }}),
                      Catch::Contains("LambdaLR") && Catch::Contains("expected 2 lr_lambdas"));
  }
}

TEST_CASE("CosineAnnealingWarmRestarts matches torch, with and without growing periods", "[optim][sched][parity]") {
  auto p = one_param();
  SECTION("T_0 4, eta_min 0.01") {
    SGD opt(p, SGDOptions(0.5));
    CosineAnnealingWarmRestarts s(opt, 4, 1, 0.01);
    check_rates(s, {0.5, 0.4282411613907041, 0.255, 0.08175883860929586, 0.5, 0.4282411613907041, 0.255,
                    0.08175883860929586, 0.5, 0.4282411613907041, 0.255, 0.08175883860929586, 0.5, 0.4282411613907041,
                    0.255});
  }
  SECTION("T_0 2, T_mult 2: periods 2, 4, 8") {
    SGD opt(p, SGDOptions(0.5));
    CosineAnnealingWarmRestarts s(opt, 2, 2);
    check_rates(s, {0.5, 0.25, 0.5, 0.42677669529663687, 0.25, 0.07322330470336313, 0.5, 0.4809698831278217,
                    0.42677669529663687, 0.34567085809127246, 0.25, 0.15432914190872757, 0.07322330470336313,
                    0.019030116872178315, 0.5, 0.4951963201008076, 0.4809698831278217});
  }
}

TEST_CASE("SequentialLR hands over at its milestones as torch's does", "[optim][sched][parity]") {
  auto p = one_param();
  SECTION("LinearLR warm-up, then ExponentialLR") {
    SGD opt(p, SGDOptions(0.5));
    auto warm = std::make_shared<LinearLR>(opt, 0.1, 1.0, 3);
    auto decay = std::make_shared<ExponentialLR>(opt, 0.9);
    SequentialLR s(opt, {warm, decay}, {3});
    check_rates(s, {0.05, 0.19999999999999998, 0.35, 0.5, 0.45, 0.405, 0.36450000000000005, 0.32805000000000006,
                    0.2952450000000001, 0.2657205000000001, 0.23914845000000007, 0.21523360500000008,
                    0.19371024450000007});
  }
  SECTION("three schedules: ConstantLR, StepLR, CosineAnnealingLR past its period") {
    SGD opt(p, SGDOptions(0.5));
    auto c = std::make_shared<ConstantLR>(opt, 0.5, 2);
    auto st = std::make_shared<StepLR>(opt, 2, 0.5);
    auto cos = std::make_shared<CosineAnnealingLR>(opt, 4, 0.05);
    SequentialLR s(opt, {c, st, cos}, {2, 6});
    check_rates(s, {0.25, 0.25, 0.5, 0.5, 0.25, 0.25, 0.5, 0.4340990257669732, 0.275, 0.11590097423302684, 0.05,
                    0.1159009742330268, 0.275, 0.43409902576697335, 0.5000000000000002});
  }
}

TEST_CASE("the new schedules refuse bad arguments with PyTorch's messages", "[optim][sched][errors]") {
  auto p = one_param();
  SGD opt(p, SGDOptions(0.5));
  CHECK_THROWS_WITH(ConstantLR(opt, 1.5), Catch::Contains("ConstantLR") &&
                                              Catch::Contains("Constant multiplicative factor expected to be between 0 and 1"));
  CHECK_THROWS_WITH(LinearLR(opt, 0.0), Catch::Contains("Starting multiplicative factor expected to be greater than 0"));
  CHECK_THROWS_WITH(LinearLR(opt, 0.5, 1.5), Catch::Contains("Ending multiplicative factor expected to be between 0 and 1"));
  CHECK_THROWS_WITH(LinearLR(opt, 0.5, 1.0, 0), Catch::Contains("total_iters must be positive"));
  CHECK_THROWS_WITH(PolynomialLR(opt, 0), Catch::Contains("PolynomialLR") && Catch::Contains("total_iters must be positive"));
  CHECK_THROWS_WITH(CosineAnnealingWarmRestarts(opt, 0), Catch::Contains("Expected positive integer T_0, but got 0"));
  CHECK_THROWS_WITH(CosineAnnealingWarmRestarts(opt, 2, 0), Catch::Contains("Expected integer T_mult >= 1, but got 0"));
  CHECK_THROWS_WITH(LambdaLR(opt, LRLambda()), Catch::Contains("an lr_lambda is empty"));
  auto e = std::make_shared<ExponentialLR>(opt, 0.9);
  CHECK_THROWS_WITH(SequentialLR(opt, {e}, {3}),
                    Catch::Contains("expects number of schedulers provided to be one more than the number of milestone"));
  auto e2 = std::make_shared<ExponentialLR>(opt, 0.8);
  CHECK_THROWS_WITH(SequentialLR(opt, {e, e2}, {}), Catch::Contains("SequentialLR"));
  CHECK_THROWS_WITH(SequentialLR(opt, {e, e2, e}, {4, 2}), Catch::Contains("non-decreasing"));
  auto q = one_param();
  SGD other(q, SGDOptions(0.1));
  auto foreign = std::make_shared<ExponentialLR>(other, 0.9);
  CHECK_THROWS_WITH(SequentialLR(opt, {e, foreign}, {2}), Catch::Contains("to belong to the same optimizer"));
}

TEST_CASE("state dicts resume the new schedules exactly", "[optim][sched]") {
  // An uninterrupted run against one saved at step 5 and resumed on a fresh optimizer and scheduler.
  auto make = [](SGD& opt) {
    auto warm = std::make_shared<LinearLR>(opt, 0.1, 1.0, 3);
    auto restarts = std::make_shared<CosineAnnealingWarmRestarts>(opt, 2, 2, 0.01);
    return std::make_unique<SequentialLR>(opt, std::vector<std::shared_ptr<LRScheduler>>{warm, restarts},
                                          std::vector<int64_t>{3});
  };
  auto pa = one_param(), pb = one_param();
  SGD a(pa, SGDOptions(0.5)), b(pb, SGDOptions(0.5));
  auto sa = make(a);
  for (int i = 0; i < 5; ++i) sa->step();
  const Json saved = sa->state_dict();
  auto sb = make(b);
  sb->load_state_dict(saved);
  CHECK(sb->last_epoch() == 5);
  for (int i = 0; i < 9; ++i) {
    sa->step();
    sb->step();
    CHECK(sb->get_last_lr() == sa->get_last_lr());
  }
  ExponentialLR wrong(b, 0.5);
  CHECK_THROWS_WITH(wrong.load_state_dict(saved), Catch::Contains("saved by SequentialLR, not ExponentialLR"));

  // MultiplicativeLR resumed past the products it has computed.
  auto pc = one_param(), pd = one_param();
  SGD c(pc, SGDOptions(0.5)), d(pd, SGDOptions(0.5));
  auto f = [](int64_t e) { return 1.0 - 0.01 * static_cast<double>(e); };
  MultiplicativeLR mc(c, f), md(d, f);
  for (int i = 0; i < 7; ++i) mc.step();
  md.load_state_dict(mc.state_dict());
  mc.step();
  md.step();
  CHECK(md.get_last_lr() == mc.get_last_lr());
}

TEST_CASE("a scheduler built after the optimizer's state was loaded keeps the resumed rate, as torch", "[optim][sched][parity]") {
  // The resume order optimizer.load_state_dict -> build the scheduler -> scheduler.load_state_dict,
  // after 13 steps at base rate 0.1. PyTorch's chainable schedules keep the loaded rate at their
  // first step; minidl's closed forms used to set the epoch-0 rate there (0.1 for StepLR instead of
  // 0.00625) until the next step. Rates at the resume and after 1-3 more steps, printed by torch 1.13.
  struct Case {
    const char* name;
    std::function<std::unique_ptr<LRScheduler>(SGD&)> make;
    std::vector<double> torch;
  };
  const std::vector<Case> cases = {
      {"StepLR", [](SGD& o) { return std::make_unique<StepLR>(o, 3, 0.5); },
       {0.0062500000000000003, 0.0062500000000000003, 0.0031250000000000002, 0.0031250000000000002}},
      {"ExponentialLR", [](SGD& o) { return std::make_unique<ExponentialLR>(o, 0.9); },
       {0.025418658283290013, 0.022876792454961013, 0.020589113209464913, 0.018530201888518422}},
      {"CosineAnnealingLR", [](SGD& o) { return std::make_unique<CosineAnnealingLR>(o, 10, 0.001); },
       {0.021404630011522669, 0.035203658778440255, 0.050500000000000218, 0.065796341221560181}},
      {"MultiplicativeLR", [](SGD& o) { return std::make_unique<MultiplicativeLR>(o, [](int64_t) { return 0.95; }); },
       {0.051334208327950479, 0.048767497911552951, 0.046329123015975304, 0.04401266686517654}},
      {"PolynomialLR", [](SGD& o) { return std::make_unique<PolynomialLR>(o, 20, 2.0); },
       {0.012250000000000002, 0.0090000000000000045, 0.0062500000000000021, 0.0039999999999999992}},
      // Without a milestone at 0 the rate is kept too (with one, torch multiplies the loaded rate by
      // gamma at construction and minidl does the same at that step).
      {"MultiStepLR", [](SGD& o) { return std::make_unique<MultiStepLR>(o, std::vector<int64_t>{4, 9, 15}, 0.5); },
       {0.025000000000000001, 0.025000000000000001, 0.012500000000000001, 0.012500000000000001}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    auto p = one_param();
    SGD a(p, SGDOptions(0.1));
    auto sa = c.make(a);
    for (int e = 0; e < 13; ++e) sa->step();
    const auto saved_opt = a.state_dict();
    const Json saved_sched = sa->state_dict();
    SGD b(p, SGDOptions(0.1));
    b.load_state_dict(saved_opt);
    auto sb = c.make(b);
    sb->load_state_dict(saved_sched);
    check_rates(*sb, c.torch);
  }
  // A fresh optimizer: the first step sets the epoch-0 rate as before (a milestone at 0 applies).
  auto p = one_param();
  SGD fresh(p, SGDOptions(0.1));
  MultiStepLR at_zero(fresh, {0, 4}, 0.5);
  CHECK(fresh.param_groups()[0].lr() == 0.05);
}

TEST_CASE("a param group added after the scheduler is refused at its step, which then changes nothing", "[optim][sched][errors]") {
  SGD opt(one_param(), SGDOptions(0.1));
  StepLR sched(opt, 1, 0.5);
  sched.step();
  opt.add_param_group(ParamGroup(one_param()));
  CHECK_THROWS_WITH(sched.step(), Catch::Contains("StepLR") && Catch::Contains("groups added after the scheduler"));
  CHECK(sched.last_epoch() == 1);
  CHECK(sched.get_last_lr() == std::vector<double>{0.05});
  CHECK(opt.param_groups()[0].lr() == 0.05);
}
