// optim against torch.optim on cases a PyTorch user would check: the empty parameter list error,
// defaults, SGD's maximize / weight decay / Nesterov order, Adam's eps outside the square root,
// amsgrad's running maximum, AdamW's decoupled decay, per-group options, and the schedules past
// their period (CosineAnnealingLR against PyTorch's recursive form, duplicate MultiStepLR
// milestones). Expected values are PyTorch's formulas written out by hand in double.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>
#include <numbers>

#include "minidl.h"
#include "ops/cpu_isa.h"
#include "optim/optim.h"

using namespace minidl;
using namespace minidl::optim;

namespace {
Tensor param(double v) { return from_vector<double>({v}).requires_grad_(); }
void set_grad(Tensor& p, double g) { p.set_grad(from_vector<double>({g})); }
}  // namespace

TEST_CASE("an empty parameter list is refused, an empty group is not", "[optim][parity]") {
  CHECK_THROWS_WITH(SGD(std::vector<Tensor>{}, SGDOptions(0.1)), Catch::Contains("optimizer got an empty parameter list"));
  CHECK_THROWS_WITH(Adam(std::vector<Tensor>{}, AdamOptions()), Catch::Contains("optimizer got an empty parameter list"));
  CHECK_THROWS_WITH(AdamW(std::vector<ParamGroup>{}), Catch::Contains("optimizer got an empty parameter list"));
  // torch.optim.SGD([{"params": []}]) is accepted.
  SGD opt(std::vector<ParamGroup>{ParamGroup(std::vector<Tensor>{})}, SGDOptions(0.1));
  CHECK(opt.param_groups().size() == 1);
  opt.step();
}

TEST_CASE("optimizer defaults are torch's", "[optim][parity]") {
  const SGDOptions s;
  CHECK(s.lr_ == 1e-3);
  CHECK(s.momentum_ == 0.0);
  CHECK(s.dampening_ == 0.0);
  CHECK(s.weight_decay_ == 0.0);
  CHECK_FALSE(s.nesterov_);
  CHECK_FALSE(s.maximize_);
  const AdamOptions a;
  CHECK(a.lr_ == 1e-3);
  CHECK(a.betas_ == std::pair<double, double>{0.9, 0.999});
  CHECK(a.eps_ == 1e-8);
  CHECK(a.weight_decay_ == 0.0);
  CHECK_FALSE(a.amsgrad_);
  CHECK_FALSE(a.maximize_);
  const AdamWOptions w;
  CHECK(w.weight_decay_ == 1e-2);
  CHECK(w.eps_ == 1e-8);
  Tensor p = param(1.0);
  SGD opt({p}, SGDOptions(0.1));
  set_grad(p, 1.0);
  opt.zero_grad();  // set_to_none defaults to true
  CHECK_FALSE(p.grad().defined());
}

TEST_CASE("SGD negates for maximize, then adds weight decay, then Nesterov momentum", "[optim][parity]") {
  Tensor p = param(1.0);
  SGD opt({p}, SGDOptions(0.5).momentum(0.9).weight_decay(0.1).nesterov(true).maximize(true));
  // Step 1: d = -0.5 + 0.1 * 1 = -0.4; buf = d; d = d + 0.9 buf = -0.76; p = 1 + 0.5 * 0.76 = 1.38.
  set_grad(p, 0.5);
  opt.step();
  CHECK(p.item() == Approx(1.38).epsilon(1e-14));
  // Step 2: d = -0.5 + 0.138 = -0.362; buf = 0.9 (-0.4) + d = -0.722; d = -0.362 + 0.9 (-0.722) =
  // -1.0118; p = 1.38 + 0.5 * 1.0118 = 1.8859.
  set_grad(p, 0.5);
  opt.step();
  CHECK(p.item() == Approx(1.8859).epsilon(1e-14));
  CHECK(opt.state(p).buffers.at("momentum_buffer").item() == Approx(-0.722).epsilon(1e-14));
}

TEST_CASE("SGD's f32 update is bit for bit PyTorch's (momentum, dampening, weight decay, Nesterov)", "[optim][parity]") {
  // torch 1.13, CPU, f32: 6 steps of SGD(lr=0.1, momentum=0.9) on 0.5 * sum(p * p) (whose gradient is
  // p exactly), from these 18 values. PyTorch's single-tensor SGD runs op by op, each add one fused
  // multiply-add (its vectorized kernels' fmadd) and the momentum product rounded alone; a kernel set
  // without FMA (baseline) rounds twice, as PyTorch on such a CPU, so it is held to a few ulps only.
  const std::vector<float> start{1.0f, -0.37f, 2.5f, 0.001f, 3.3f, -7.1f, 0.2f, 0.9f, 1.7f, -2.2f, 0.05f, 4.4f, -0.6f, 0.33f, 1.1f, -1.9f, 0.7f, 2.9f};
  struct Case {
    bool nesterov;
    double dampening, weight_decay;
    std::vector<float> torch;
  };
  const std::vector<Case> cases{
      {false, 0, 0.0, {-0.256608009f, 0.0949449614f, -0.641519785f, -0.000256607978f, -0.846806288f, 1.8219167f, -0.0513215847f, -0.230947152f, -0.43623364f, 0.564537525f, -0.0128303962f, -1.12907505f, 0.153964773f, -0.0846806169f, -0.282268763f, 0.487555087f, -0.179625571f, -0.744163156f}},
      {false, 0, 0.01, {-0.264528841f, 0.0978756621f, -0.661322057f, -0.000264528848f, -0.872945368f, 1.87815511f, -0.0529057719f, -0.238075957f, -0.449699014f, 0.58196348f, -0.013226443f, -1.16392696f, 0.15871729f, -0.0872945413f, -0.29098174f, 0.502604783f, -0.185170218f, -0.767133772f}},
      {false, 0.1, 0.0, {-0.19773379f, 0.0731615424f, -0.494334549f, -0.000197733825f, -0.652521729f, 1.40391052f, -0.0395467766f, -0.177960411f, -0.336147547f, 0.435014457f, -0.00988669414f, -0.870028913f, 0.118640319f, -0.06525217f, -0.217507228f, 0.375694275f, -0.138413683f, -0.573428094f}},
      {false, 0.1, 0.01, {-0.205657765f, 0.0760933906f, -0.51414454f, -0.000205657809f, -0.678670764f, 1.46017015f, -0.0411315747f, -0.185092017f, -0.349618286f, 0.452447116f, -0.0102828937f, -0.904894233f, 0.12339469f, -0.0678670853f, -0.226223558f, 0.390749872f, -0.143960476f, -0.596407533f}},
      {true, 0, 0.0, {-0.254883856f, 0.094306998f, -0.637209594f, -0.000254883838f, -0.841116726f, 1.80967557f, -0.0509767719f, -0.229395449f, -0.433302611f, 0.560744405f, -0.012744193f, -1.12148881f, 0.15293029f, -0.0841116607f, -0.280372202f, 0.484279335f, -0.178418711f, -0.73916316f}},
      {true, 0, 0.01, {-0.260116875f, 0.0962432548f, -0.650292277f, -0.000260116853f, -0.858385742f, 1.84682965f, -0.0520233773f, -0.23410517f, -0.442198694f, 0.572257042f, -0.0130058443f, -1.14451408f, 0.156070143f, -0.0858385786f, -0.286128521f, 0.494222134f, -0.182081863f, -0.75433892f}},
  };
  const bool fma = minidl::kernels::active_cpu_isa() != minidl::kernels::CpuIsa::Baseline;
  for (const Case& c : cases) {
    INFO("nesterov " << c.nesterov << " dampening " << c.dampening << " weight_decay " << c.weight_decay);
    Tensor p = from_vector(start, {18}).requires_grad_();
    SGD opt({p}, SGDOptions(0.1).momentum(0.9).dampening(c.dampening).weight_decay(c.weight_decay).nesterov(c.nesterov));
    for (int i = 0; i < 6; ++i) {
      opt.zero_grad();
      (sum(p * p) * 0.5).backward();
      opt.step();
    }
    const std::vector<float> got = p.to_vector<float>();
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("element " << i << ": " << got[i] << " against " << c.torch[i]);
      if (fma) CHECK(got[i] == c.torch[i]);
      else CHECK(std::fabs(got[i] - c.torch[i]) <= 8 * std::numeric_limits<float>::epsilon() * std::fabs(c.torch[i]));
    }
  }
}

TEST_CASE("Adam adds eps after the square root of the bias-corrected second moment", "[optim][parity]") {
  // Step 1 with g = 1: m_hat = 1, sqrt(v_hat) = 1, so p = -lr * 1 / (1 + eps) = -0.05 with eps = 1
  // (eps inside the square root would give -0.1 / sqrt(2)).
  Tensor p = param(0.0);
  Adam opt({p}, AdamOptions(0.1).eps(1.0));
  set_grad(p, 1.0);
  opt.step();
  CHECK(p.item() == Approx(-0.05).epsilon(1e-12));
}

TEST_CASE("amsgrad divides by the running maximum of the second moment", "[optim][parity]") {
  // g = 1 then g = 0: v falls from 1e-3 to 0.999e-3, the maximum stays 1e-3.
  const double lr = 0.1, eps = 1e-8;
  const double p1 = -lr / (1 + eps);
  const double m2 = 0.09, bc1 = 1 - 0.81, bc2 = 1 - 0.999 * 0.999;
  const double want_ams = p1 - lr / bc1 * m2 / (std::sqrt(1e-3) / std::sqrt(bc2) + eps);
  const double want_plain = p1 - lr / bc1 * m2 / (std::sqrt(0.999e-3) / std::sqrt(bc2) + eps);
  REQUIRE(std::fabs(want_ams - want_plain) > 1e-5);
  for (bool ams : {true, false}) {
    Tensor p = param(0.0);
    Adam opt({p}, AdamOptions(lr).amsgrad(ams));
    set_grad(p, 1.0);
    opt.step();
    CHECK(p.item() == Approx(p1).epsilon(1e-12));
    set_grad(p, 0.0);
    opt.step();
    CHECK(p.item() == Approx(ams ? want_ams : want_plain).epsilon(1e-12));
  }
}

TEST_CASE("AdamW decays the parameter by lr * weight_decay before the update, Adam adds L2 to the gradient", "[optim][parity]") {
  Tensor a = param(10.0), b = param(10.0);
  AdamW adamw({a}, AdamWOptions(0.1).weight_decay(0.5));
  Adam adam({b}, AdamOptions(0.1).weight_decay(0.5));
  set_grad(a, 0.0);
  set_grad(b, 0.0);
  adamw.step();
  adam.step();
  CHECK(a.item() == Approx(10.0 * (1 - 0.1 * 0.5)).epsilon(1e-15));  // zero moments: only the decay
  CHECK(b.item() == Approx(10.0 - 0.1 * 5.0 / (5.0 + 1e-8)).epsilon(1e-12));  // g = 0.5 * 10: a normalized step
}

TEST_CASE("a group's options are complete options, not overrides of the defaults", "[optim][parity]") {
  // libtorch semantics (see README, deliberate differences): ParamGroup({b}, SGDOptions(0.5)) has
  // momentum 0, where torch's {"params": b, "lr": 0.5} inherits momentum 0.9 from the defaults.
  Tensor a = param(1.0), b = param(1.0);
  SGD opt({ParamGroup({a}), ParamGroup({b}, SGDOptions(0.5))}, SGDOptions(0.1).momentum(0.9));
  CHECK(static_cast<const SGDOptions&>(*opt.param_groups()[0].options).momentum_ == 0.9);
  CHECK(static_cast<const SGDOptions&>(*opt.param_groups()[1].options).momentum_ == 0.0);
}

TEST_CASE("CosineAnnealingLR past T_max keeps oscillating like torch's recursive form", "[optim][parity][sched]") {
  const int64_t T = 3;
  const double base = 1.0, eta_min = 0.1;
  Tensor p = param(0.0);
  SGD opt({p}, SGDOptions(base));
  CosineAnnealingLR sched(opt, T, eta_min);
  // torch's get_lr(), step by step from the previous rate.
  double lr = base;
  for (int64_t e = 0; e <= 4 * T; ++e) {
    if (e > 0) {
      sched.step();
      const double pi = std::numbers::pi;
      if ((e - 1 - T) % (2 * T) == 0)
        lr = lr + (base - eta_min) * (1 - std::cos(pi / T)) / 2;
      else
        lr = (1 + std::cos(pi * e / T)) / (1 + std::cos(pi * (e - 1) / T)) * (lr - eta_min) + eta_min;
    }
    INFO("epoch " << e);
    CHECK(sched.get_last_lr()[0] == Approx(lr).margin(1e-12));
    CHECK(opt.param_groups()[0].lr() == sched.get_last_lr()[0]);
  }
  // Back at the base rate after 2 T_max, at eta_min after 3 T_max.
  CHECK(sched.lr_at(2 * T)[0] == Approx(base).margin(1e-12));
  CHECK(sched.lr_at(3 * T)[0] == Approx(eta_min).margin(1e-12));
}

TEST_CASE("StepLR and MultiStepLR with repeated milestones", "[optim][parity][sched]") {
  Tensor p = param(0.0);
  SGD opt({p}, SGDOptions(1.0));
  StepLR step(opt, 3, 0.5);
  std::vector<double> got;
  for (int e = 0; e < 7; ++e) {
    if (e) step.step();
    got.push_back(step.get_last_lr()[0]);
  }
  CHECK(got == std::vector<double>{1, 1, 1, 0.5, 0.5, 0.5, 0.25});
  Tensor q = param(0.0);
  SGD opt2({q}, SGDOptions(1.0));
  // A milestone listed twice decays twice (torch counts milestones with a Counter).
  MultiStepLR multi(opt2, {4, 2, 2}, 0.5);
  got.clear();
  for (int e = 0; e < 6; ++e) {
    if (e) multi.step();
    got.push_back(multi.get_last_lr()[0]);
  }
  CHECK(got == std::vector<double>{1, 1, 0.25, 0.25, 0.125, 0.125});
}
