// optim: SGD (plain, momentum, dampening, Nesterov, weight decay, maximize), Adam, AdamW and
// amsgrad against PyTorch's update formulas written out here in double, for three steps, on f64
// (tight), f32 and bf16 parameters and through the non-fused path; param groups, zero_grad and
// argument errors; state_dict round trips that continue bit-identically (also through a checkpoint
// file); LR schedules against their closed forms; scheduler state dicts.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <numbers>

#include "gradcheck.h"
#include "minidl.h"
#include "optim/optim.h"

using namespace minidl;
using namespace minidl::optim;

namespace {

using Vec = std::vector<double>;

// The gradient used at step k for parameter values p (so momentum and moments see varied inputs).
Vec grad_at(const Vec& p, int k) {
  Vec g(p.size());
  for (size_t i = 0; i < p.size(); ++i) g[i] = 0.3 * p[i] + 0.1 * (k + 1) * (static_cast<double>(i) + 1) - 0.2;
  return g;
}

// torch.optim.SGD, single-tensor form.
struct SgdRef {
  double lr, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, maximize = false;
  Vec buf;
  void step(Vec& p, const Vec& g) {
    const bool first = buf.empty();
    if (first) buf.assign(p.size(), 0.0);
    for (size_t i = 0; i < p.size(); ++i) {
      double d = maximize ? -g[i] : g[i];
      if (weight_decay != 0) d = d + weight_decay * p[i];
      if (momentum != 0) {
        buf[i] = first ? d : buf[i] * momentum + (1 - dampening) * d;
        d = nesterov ? d + momentum * buf[i] : buf[i];
      }
      p[i] -= lr * d;
    }
  }
};

// torch.optim.Adam / AdamW, single-tensor form.
struct AdamRef {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool amsgrad = false, decoupled = false, maximize = false;
  Vec m, v, vmax;
  int step_n = 0;
  void step(Vec& p, Vec g) {
    if (m.empty()) m.assign(p.size(), 0), v.assign(p.size(), 0), vmax.assign(p.size(), 0);
    ++step_n;
    const double bc1 = 1 - std::pow(beta1, step_n), bc2 = 1 - std::pow(beta2, step_n);
    const double step_size = lr / bc1;
    for (size_t i = 0; i < p.size(); ++i) {
      double gi = maximize ? -g[i] : g[i];
      if (decoupled) p[i] *= 1 - lr * weight_decay;
      else if (weight_decay != 0) gi += weight_decay * p[i];
      m[i] = m[i] + (1 - beta1) * (gi - m[i]);
      v[i] = v[i] * beta2 + (1 - beta2) * gi * gi;
      double used = v[i];
      if (amsgrad) used = vmax[i] = std::max(vmax[i], v[i]);
      const double denom = std::sqrt(used) / std::sqrt(bc2) + eps;
      p[i] -= step_size * m[i] / denom;
    }
  }
};

const Vec kInit = {1.0, -2.0, 0.5, 3.0, -0.25};

Tensor make_param(DType dt) { return from_vector<double>(kInit).to(dt).requires_grad_(); }

// Runs three steps of `opt` on `param` and of `ref` on a double copy, comparing after each step.
template <class Opt, class Ref>
void compare_three_steps(Tensor param, Opt& opt, Ref& ref, double tol, bool strided_grad = false) {
  Vec p = kInit;
  for (int k = 0; k < 3; ++k) {
    const Vec g = grad_at(p, k);
    Tensor gt = from_vector<double>(g).to(param.dtype());
    if (strided_grad) {
      // A non-contiguous gradient of the same shape: forces the generic (tensor-op) path.
      Tensor wide = zeros({static_cast<int64_t>(g.size()), 2}, param.dtype());
      {
        NoGradGuard ng;
        wide.select(1, 0).copy_(gt);
      }
      gt = wide.select(1, 0);
      REQUIRE_FALSE(gt.is_contiguous());
    }
    param.set_grad(gt);
    opt.step();
    ref.step(p, g);
    const Vec got = param.template to_vector<double>();
    for (size_t i = 0; i < p.size(); ++i) {
      INFO("step " << k << " element " << i);
      CHECK(got[i] == Approx(p[i]).margin(tol).epsilon(tol));
    }
  }
}

// torch.optim.RMSprop, single-tensor form.
struct RmspropRef {
  double lr, alpha, eps, weight_decay, momentum;
  bool centered, maximize;
  Vec sq, gavg, buf;
  void step(Vec& p, Vec g) {
    if (sq.empty()) sq.assign(p.size(), 0.0), gavg.assign(p.size(), 0.0), buf.assign(p.size(), 0.0);
    for (size_t i = 0; i < p.size(); ++i) {
      if (maximize) g[i] = -g[i];
      if (weight_decay != 0) g[i] += weight_decay * p[i];
      sq[i] = alpha * sq[i] + (1 - alpha) * g[i] * g[i];
      double avg;
      if (centered) {
        gavg[i] += (g[i] - gavg[i]) * (1 - alpha);
        avg = std::sqrt(sq[i] - gavg[i] * gavg[i]) + eps;
      } else {
        avg = std::sqrt(sq[i]) + eps;
      }
      if (momentum > 0) {
        buf[i] = momentum * buf[i] + g[i] / avg;
        p[i] -= lr * buf[i];
      } else {
        p[i] -= lr * g[i] / avg;
      }
    }
  }
};

// torch.optim.Adagrad, single-tensor form.
struct AdagradRef {
  double lr, lr_decay, weight_decay, init, eps;
  bool maximize;
  Vec sum;
  int step_n = 0;
  void step(Vec& p, Vec g) {
    if (sum.empty()) sum.assign(p.size(), init);
    ++step_n;
    const double clr = lr / (1 + (step_n - 1) * lr_decay);
    for (size_t i = 0; i < p.size(); ++i) {
      if (maximize) g[i] = -g[i];
      if (weight_decay != 0) g[i] += weight_decay * p[i];
      sum[i] += g[i] * g[i];
      p[i] -= clr * g[i] / (std::sqrt(sum[i]) + eps);
    }
  }
};

}  // namespace

TEST_CASE("RMSprop and Adagrad match torch.optim for three steps, with PyTorch's defaults", "[optim][rmsprop][adagrad]") {
  const RMSpropOptions d;
  CHECK((d.lr_ == 1e-2 && d.alpha_ == 0.99 && d.eps_ == 1e-8 && d.momentum_ == 0 && !d.centered_));
  const AdagradOptions a;
  CHECK((a.lr_ == 1e-2 && a.lr_decay_ == 0 && a.eps_ == 1e-10 && a.initial_accumulator_value_ == 0));
  for (const RMSpropOptions& o : {RMSpropOptions(0.01), RMSpropOptions(0.01).momentum(0.9),
                                  RMSpropOptions(0.02).centered(true).alpha(0.9),
                                  RMSpropOptions(0.01).centered(true).momentum(0.5).weight_decay(0.1).maximize(true)}) {
    for (DType dt : {DType::F64, DType::F32}) {
      INFO("RMSprop momentum " << o.momentum_ << " centered " << o.centered_ << " " << dtype_name(dt));
      Tensor param = make_param(dt);
      RMSprop opt({param}, o);
      RmspropRef ref{o.lr_, o.alpha_, o.eps_, o.weight_decay_, o.momentum_, o.centered_, o.maximize_, {}, {}, {}};
      compare_three_steps(param, opt, ref, dt == DType::F64 ? 1e-13 : 2e-6);
      CHECK(opt.state(param).buffers.contains("square_avg"));
      CHECK(opt.state(param).buffers.contains("momentum_buffer") == (o.momentum_ > 0));
      CHECK(opt.state(param).buffers.contains("grad_avg") == o.centered_);
    }
  }
  for (const AdagradOptions& o : {AdagradOptions(0.1), AdagradOptions(0.1).lr_decay(0.1).initial_accumulator_value(0.5),
                                  AdagradOptions(0.05).weight_decay(0.2).maximize(true)}) {
    for (DType dt : {DType::F64, DType::F32}) {
      INFO("Adagrad lr_decay " << o.lr_decay_ << " " << dtype_name(dt));
      Tensor param = make_param(dt);
      Adagrad opt({param}, o);
      // The accumulator exists from construction, as PyTorch's.
      REQUIRE(opt.has_state(param));
      CHECK(opt.state(param).buffers.at("sum").to_vector<double>() == Vec(kInit.size(), o.initial_accumulator_value_));
      AdagradRef ref{o.lr_, o.lr_decay_, o.weight_decay_, o.initial_accumulator_value_, o.eps_, o.maximize_, {}};
      compare_three_steps(param, opt, ref, dt == DType::F64 ? 1e-13 : 2e-6);
    }
  }
  Tensor p = make_param(DType::F32);
  CHECK_THROWS_WITH(RMSprop({p}, RMSpropOptions(0.1).alpha(-1)), Catch::Contains("Invalid alpha value"));
  CHECK_THROWS_WITH(Adagrad({p}, AdagradOptions(0.1).lr_decay(-1)), Catch::Contains("Invalid lr_decay value"));
}

TEST_CASE("ReduceLROnPlateau follows PyTorch's patience, threshold, cooldown and min_lr", "[optim][plateau]") {
  Tensor p = from_vector<float>({1.0f}).requires_grad_();
  Tensor q = from_vector<float>({1.0f}).requires_grad_();
  SGD opt({ParamGroup({p}), ParamGroup({q}, SGDOptions(0.5))}, SGDOptions(1.0));
  ReduceLROnPlateau plateau(opt, PlateauOptions().patience(1).factor(0.5).cooldown(1).min_lr({0.3, 0.0}));
  // Worked by hand from torch's step(): improvement resets the bad count; more than `patience` bad
  // steps reduce (not below min_lr), then `cooldown` steps ignore bad steps.
  struct Row { double metric; double lr0, lr1; int64_t bad; };
  const std::vector<Row> rows = {
      {1.0, 1.0, 0.5, 0},     // best = 1
      {1.0, 1.0, 0.5, 1},     // not better (relative threshold 1e-4)
      {0.99995, 0.5, 0.25, 0},  // 0.99995 > 1 * (1 - 1e-4): still bad -> 2 bad > patience: reduce, cooldown 1
      {2.0, 0.5, 0.25, 0},    // bad, but in cooldown: ignored
      {2.0, 0.5, 0.25, 1},    // bad 1
      {2.0, 0.3, 0.125, 0},   // bad 2: reduce; group 0 stops at min_lr 0.3
      {0.5, 0.3, 0.125, 0},   // better (cooldown eats nothing: count already 0)
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO("step " << i);
    plateau.step(rows[i].metric);
    CHECK(opt.param_groups()[0].lr() == Approx(rows[i].lr0));
    CHECK(opt.param_groups()[1].lr() == Approx(rows[i].lr1));
    CHECK(plateau.num_bad_epochs() == rows[i].bad);
  }
  CHECK(plateau.best() == 0.5);
  // State dict round trip; mode max with an absolute threshold.
  ReduceLROnPlateau copy(opt, PlateauOptions().patience(1).factor(0.5).cooldown(1).min_lr({0.3, 0.0}));
  copy.load_state_dict(plateau.state_dict());
  CHECK(copy.best() == 0.5);
  CHECK(copy.last_epoch() == 7);
  Tensor r = from_vector<float>({1.0f}).requires_grad_();
  SGD opt2({r}, SGDOptions(1.0));
  ReduceLROnPlateau up(opt2, PlateauOptions().mode(PlateauMode::Max).threshold(0.1).threshold_mode(ThresholdMode::Absolute).patience(0));
  CHECK(up.state_dict().find("best") == nullptr);  // infinite before the first step
  up.step(1.0);
  up.step(1.05);  // not above 1.0 + 0.1: bad, patience 0 -> reduce
  CHECK(opt2.param_groups()[0].lr() == Approx(0.1));
  up.step(1.2);  // better
  CHECK(opt2.param_groups()[0].lr() == Approx(0.1));
  CHECK(up.best() == 1.2);
  CHECK_THROWS_WITH(ReduceLROnPlateau(opt2, PlateauOptions().factor(1.0)), Catch::Contains("Factor should be < 1.0"));
}

TEST_CASE("SGD matches torch.optim.SGD for three steps", "[optim][sgd]") {
  struct Case {
    const char* name;
    SGDOptions opts;
  };
  std::vector<Case> cases = {
      {"plain", SGDOptions(0.1)},
      {"momentum", SGDOptions(0.1).momentum(0.9)},
      {"nesterov", SGDOptions(0.1).momentum(0.9).nesterov(true)},
      {"weight decay", SGDOptions(0.1).weight_decay(0.01)},
      {"dampening", SGDOptions(0.05).momentum(0.8).dampening(0.3)},
      {"everything", SGDOptions(0.05).momentum(0.7).weight_decay(0.1).nesterov(true)},
      {"maximize", SGDOptions(0.1).momentum(0.5).maximize(true)},
  };
  for (const auto& c : cases) {
    for (DType dt : {DType::F64, DType::F32}) {
      for (bool strided : {false, true}) {
        INFO(c.name << " " << dtype_name(dt) << (strided ? " (generic path)" : " (fused path)"));
        Tensor param = make_param(dt);
        SGD opt({param}, c.opts);
        SgdRef ref{c.opts.lr_, c.opts.momentum_, c.opts.dampening_, c.opts.weight_decay_, c.opts.nesterov_,
                   c.opts.maximize_, {}};
        compare_three_steps(param, opt, ref, dt == DType::F64 ? 1e-13 : 2e-6, strided);
        if (c.opts.momentum_ != 0) {
          const Vec buf = opt.state(param).buffers.at("momentum_buffer").to_vector<double>();
          for (size_t i = 0; i < buf.size(); ++i) CHECK(buf[i] == Approx(ref.buf[i]).margin(1e-6));
        } else {
          CHECK_FALSE(opt.state(param).buffers.contains("momentum_buffer"));
        }
        CHECK(opt.state(param).step == 3);
      }
    }
  }
}

TEST_CASE("SGD's first momentum step uses the gradient itself as the buffer", "[optim][sgd]") {
  Tensor p = from_vector<float>({1.0f}).requires_grad_();
  SGD opt({p}, SGDOptions(1.0).momentum(0.9).dampening(0.5));
  p.set_grad(from_vector<float>({2.0f}));
  opt.step();
  CHECK(p.item() == -1.0);  // buf = g = 2 (no dampening on the first step)
  p.set_grad(from_vector<float>({2.0f}));
  opt.step();
  CHECK(p.item() == Approx(-1.0 - (0.9 * 2 + 0.5 * 2)));
}

TEST_CASE("Adam, AdamW and amsgrad match torch.optim for three steps", "[optim][adam]") {
  struct Case {
    const char* name;
    AdamOptions opts;
    bool adamw;
    AdamWOptions wopts;
  };
  std::vector<Case> cases = {
      {"adam", AdamOptions(0.1), false, {}},
      {"adam betas eps", AdamOptions(0.05).betas({0.8, 0.99}).eps(1e-3), false, {}},
      {"adam l2", AdamOptions(0.1).weight_decay(0.1), false, {}},
      {"adam amsgrad", AdamOptions(0.1).amsgrad(true), false, {}},
      {"adam maximize", AdamOptions(0.1).maximize(true), false, {}},
      {"adamw", {}, true, AdamWOptions(0.1)},
      {"adamw wd amsgrad", {}, true, AdamWOptions(0.1).weight_decay(0.3).amsgrad(true).betas({0.5, 0.9})},
  };
  for (const auto& c : cases) {
    for (DType dt : {DType::F64, DType::F32}) {
      for (bool strided : {false, true}) {
        INFO(c.name << " " << dtype_name(dt) << (strided ? " (generic path)" : " (fused path)"));
        Tensor param = make_param(dt);
        const double tol = dt == DType::F64 ? 1e-12 : 3e-6;
        AdamRef ref;
        if (c.adamw) {
          const auto& o = c.wopts;
          ref = AdamRef{o.lr_, o.betas_.first, o.betas_.second, o.eps_, o.weight_decay_, o.amsgrad_, true, o.maximize_, {}, {}, {}, 0};
          AdamW opt({param}, o);
          compare_three_steps(param, opt, ref, tol, strided);
          CHECK(opt.state(param).step == 3);
          CHECK(opt.state(param).buffers.contains("max_exp_avg_sq") == o.amsgrad_);
        } else {
          const auto& o = c.opts;
          ref = AdamRef{o.lr_, o.betas_.first, o.betas_.second, o.eps_, o.weight_decay_, o.amsgrad_, false, o.maximize_, {}, {}, {}, 0};
          Adam opt({param}, o);
          compare_three_steps(param, opt, ref, tol, strided);
          const Vec m = opt.state(param).buffers.at("exp_avg").to_vector<double>();
          const Vec v = opt.state(param).buffers.at("exp_avg_sq").to_vector<double>();
          for (size_t i = 0; i < m.size(); ++i) {
            CHECK(m[i] == Approx(ref.m[i]).margin(1e-6));
            CHECK(v[i] == Approx(ref.v[i]).margin(1e-6));
          }
        }
      }
    }
  }
}

TEST_CASE("AdamW defaults to weight_decay 0.01, Adam to 0", "[optim][adam]") {
  CHECK(AdamWOptions().weight_decay_ == 0.01);
  CHECK(AdamOptions().weight_decay_ == 0.0);
  CHECK(AdamOptions().lr_ == 1e-3);
  CHECK(AdamOptions().betas_ == std::pair<double, double>{0.9, 0.999});
  CHECK(AdamOptions().eps_ == 1e-8);
  // AdamW decays even a parameter with zero gradient: p * (1 - lr * wd).
  Tensor p = from_vector<float>({2.0f}).requires_grad_();
  AdamW opt({p}, AdamWOptions(0.1));
  p.set_grad(zeros({1}));
  opt.step();
  CHECK(p.item() == Approx(2.0 * (1 - 0.1 * 0.01)));
}

TEST_CASE("low-precision parameters are updated in f32 and rounded once", "[optim][adam]") {
  for (DType dt : {DType::BF16, DType::F16}) {
    INFO(dtype_name(dt));
    Tensor param = make_param(dt);
    Adam opt({param}, AdamOptions(0.1));
    AdamRef ref;
    ref.lr = 0.1;
    compare_three_steps(param, opt, ref, dt == DType::BF16 ? 2e-2 : 3e-3);
    CHECK(opt.state(param).buffers.at("exp_avg").dtype() == dt);  // state in the parameter's dtype
  }
}

TEST_CASE("a large parameter (split across threads) updates like a small one", "[optim]") {
  const int64_t n = (int64_t{1} << 18) + 37;
  std::vector<float> init(n), grad(n);
  for (int64_t i = 0; i < n; ++i) {
    init[i] = std::sin(0.001 * i);
    grad[i] = std::cos(0.003 * i);
  }
  Tensor big = from_vector<float>(init).requires_grad_();
  Adam opt({big}, AdamOptions(0.01).amsgrad(true));
  big.set_grad(from_vector<float>(grad));
  opt.step();
  opt.step();
  // Element-wise reference on a few elements, through small one-element optimizers.
  for (int64_t i : {int64_t{0}, int64_t{12345}, n - 1}) {
    Tensor one = from_vector<float>({init[i]}).requires_grad_();
    Adam o1({one}, AdamOptions(0.01).amsgrad(true));
    one.set_grad(from_vector<float>({grad[i]}));
    o1.step();
    o1.step();
    CHECK(big.to_vector<float>()[i] == one.item<float>());
  }
}

TEST_CASE("param groups carry their own options, zero_grad clears all", "[optim]") {
  Tensor a = from_vector<float>({1.0f}).requires_grad_(), b = from_vector<float>({1.0f}).requires_grad_();
  SGD opt({ParamGroup({a}), ParamGroup({b}, SGDOptions(0.5))}, SGDOptions(0.1));
  REQUIRE(opt.param_groups().size() == 2);
  CHECK(opt.param_groups()[0].lr() == 0.1);
  CHECK(opt.param_groups()[1].lr() == 0.5);
  a.set_grad(ones({1}));
  b.set_grad(ones({1}));
  opt.step();
  CHECK(a.item() == Approx(0.9));
  CHECK(b.item() == Approx(0.5));
  CHECK(opt.parameters().size() == 2);
  opt.zero_grad(false);
  CHECK(a.grad().item() == 0.0);
  opt.zero_grad();
  CHECK_FALSE(a.grad().defined());
  // A parameter without gradient is skipped.
  opt.step();
  CHECK(a.item() == Approx(0.9));
  // add_param_group
  Tensor c = from_vector<float>({1.0f}).requires_grad_();
  opt.add_param_group(ParamGroup({c}));
  CHECK(opt.param_groups()[2].lr() == 0.1);
  CHECK_THROWS_WITH(opt.add_param_group(ParamGroup({a})), Catch::Contains("more than one parameter group"));
  CHECK_THROWS_WITH(opt.add_param_group(ParamGroup({from_vector<float>({1.0f})}, AdamOptions(0.1))),
                    Catch::Contains("options type"));
}

TEST_CASE("optimizers validate their arguments with PyTorch's messages", "[optim]") {
  Tensor p = ones({1}).requires_grad_();
  CHECK_THROWS_WITH(SGD({p}, SGDOptions(-1.0)), Catch::Contains("Invalid learning rate: -1"));
  CHECK_THROWS_WITH(SGD({p}, SGDOptions(0.1).momentum(-0.5)), Catch::Contains("Invalid momentum value"));
  CHECK_THROWS_WITH(SGD({p}, SGDOptions(0.1).nesterov(true)),
                    Catch::Contains("Nesterov momentum requires a momentum and zero dampening"));
  CHECK_THROWS_WITH(SGD({p}, SGDOptions(0.1).momentum(0.9).dampening(0.1).nesterov(true)), Catch::Contains("Nesterov"));
  CHECK_THROWS_WITH(Adam({p}, AdamOptions(0.1).betas({1.0, 0.9})), Catch::Contains("Invalid beta parameter at index 0"));
  CHECK_THROWS_WITH(Adam({p}, AdamOptions(0.1).betas({0.9, -0.1})), Catch::Contains("Invalid beta parameter at index 1"));
  CHECK_THROWS_WITH(Adam({p}, AdamOptions(0.1).eps(-1)), Catch::Contains("Invalid epsilon value"));
  CHECK_THROWS_WITH(AdamW({p}, AdamWOptions(0.1).weight_decay(-1)), Catch::Contains("Invalid weight_decay value"));
  Tensor x = ones({1}).requires_grad_();
  CHECK_THROWS_WITH(SGD({mul(x, 2.0)}, SGDOptions(0.1)), Catch::Contains("can't optimize a non-leaf Tensor"));
  CHECK_THROWS_WITH(SGD({x, x}, SGDOptions(0.1)), Catch::Contains("same parameter twice"));
}

// PyTorch checks the options when an optimizer is built, not at step: a rate a scheduler or the
// user sets later (negative: gradient ascent; OneCycleLR's linear anneal ends below 0) is used as is.
TEST_CASE("optimizers step with whatever rate was set after construction", "[optim]") {
  auto run = [](auto make) {
    Tensor a = from_vector<double>({1.0}).requires_grad_();
    auto opt = make(a);
    opt.param_groups()[0].options->set_lr(-0.5);
    a.set_grad(from_vector<double>({1.0}));
    opt.step();
    return a.item();
  };
  CHECK(run([](Tensor a) { return SGD({a}, SGDOptions(0.1)); }) == 1.5);
  CHECK(run([](Tensor a) { return SGD({a}, SGDOptions(0.1).momentum(0.9)); }) == 1.5);
  // Adam's first step moves by -lr * g / (|g| + eps) = 0.5 / (1 + 1e-8).
  const double adam = 1.0 + 0.5 / (1.0 + 1e-8);
  CHECK(run([](Tensor a) { return Adam({a}, AdamOptions(0.1)); }) == Approx(adam).epsilon(1e-12));
  CHECK(run([](Tensor a) { return AdamW({a}, AdamWOptions(0.1).weight_decay(0.0)); }) == Approx(adam).epsilon(1e-12));
  CHECK(run([](Tensor a) { return Adagrad({a}, AdagradOptions(0.1)); }) == Approx(1.5).epsilon(1e-9));
  CHECK(run([](Tensor a) { return RMSprop({a}, RMSpropOptions(0.1)); }) > 1.0);
}

namespace {
// Two identical parameter sets; A runs 2 steps, its state is transferred (through `transfer`) to a
// fresh optimizer B over a copy of A's parameters, then both run 3 more steps: they must agree
// bit for bit.
template <class Opt, class O>
void check_resume(const O& options, const std::function<StateDict(const StateDict&)>& transfer) {
  auto make = [] {
    return std::vector<Tensor>{from_vector<float>({0.5f, -1.5f, 2.0f}).requires_grad_(),
                               from_vector<float>({1.0f, 0.25f}, {1, 2}).requires_grad_()};
  };
  auto set_grads = [](std::vector<Tensor>& ps, int k) {
    for (size_t j = 0; j < ps.size(); ++j) {
      Vec p = ps[j].to_vector<double>();
      ps[j].set_grad(from_vector<double>(grad_at(p, k + static_cast<int>(j)), ps[j].shape()).to(DType::F32));
    }
  };
  std::vector<Tensor> pa = make();
  Opt a({ParamGroup({pa[0]}), ParamGroup({pa[1]}, O(options).lr(options.lr_ * 2))}, options);
  for (int k = 0; k < 2; ++k) {
    set_grads(pa, k);
    a.step();
  }
  std::vector<Tensor> pb = make();
  {
    NoGradGuard ng;
    for (size_t j = 0; j < pa.size(); ++j) pb[j].copy_(pa[j]);
  }
  Opt b({ParamGroup({pb[0]}), ParamGroup({pb[1]})}, O(0.777));
  b.load_state_dict(transfer(a.state_dict()));
  CHECK(b.param_groups()[1].lr() == a.param_groups()[1].lr());
  for (int k = 2; k < 5; ++k) {
    set_grads(pa, k);
    set_grads(pb, k);
    a.step();
    b.step();
    for (size_t j = 0; j < pa.size(); ++j) CHECK(pa[j].to_vector<float>() == pb[j].to_vector<float>());
  }
  CHECK(b.state(pb[0]).step == 5);
}
}  // namespace

TEST_CASE("optimizer state dicts round-trip and training continues identically", "[optim][state]") {
  auto same = [](const StateDict& s) { return s; };
  const std::string path = (std::filesystem::temp_directory_path() / "minidl_test_optim_ck.safetensors").string();
  auto through_file = [&](const StateDict& s) {
    Checkpoint ck;
    ck.put("optim", s);
    ck.save(path);
    return Checkpoint::load(path).state_dict("optim");
  };
  SECTION("SGD with momentum") {
    check_resume<SGD>(SGDOptions(0.1).momentum(0.9).nesterov(true), same);
    check_resume<SGD>(SGDOptions(0.1).momentum(0.9).weight_decay(0.01), through_file);
  }
  SECTION("Adam with amsgrad") {
    check_resume<Adam>(AdamOptions(0.05).amsgrad(true), same);
    check_resume<Adam>(AdamOptions(0.05).amsgrad(true).betas({0.8, 0.95}), through_file);
  }
  SECTION("AdamW") { check_resume<AdamW>(AdamWOptions(0.05), through_file); }
  SECTION("RMSprop centered with momentum") {
    check_resume<RMSprop>(RMSpropOptions(0.01).centered(true).momentum(0.9), same);
    check_resume<RMSprop>(RMSpropOptions(0.01).centered(true).momentum(0.9).weight_decay(0.1), through_file);
  }
  SECTION("Adagrad with lr decay") {
    check_resume<Adagrad>(AdagradOptions(0.1).lr_decay(0.05).initial_accumulator_value(0.2), through_file);
  }
  std::filesystem::remove(path);
}

TEST_CASE("optimizer state dict contents and load errors", "[optim][state]") {
  Tensor a = from_vector<float>({1, 2}).requires_grad_(), b = from_vector<float>({3.0f}).requires_grad_();
  Adam opt({ParamGroup({a}), ParamGroup({b}, AdamOptions(0.5))}, AdamOptions(0.1));
  a.set_grad(ones({2}));
  opt.step();
  StateDict sd = opt.state_dict();
  CHECK(sd.meta.at("optimizer").as_string() == "Adam");
  CHECK(sd.meta.at("param_groups").size() == 2);
  CHECK(sd.meta.at("param_groups")[1].at("lr").as_double() == 0.5);
  CHECK(sd.meta.at("param_groups")[1].at("params").as_vector<int64_t>() == std::vector<int64_t>{1});
  CHECK(sd.meta.at("param_groups")[0].at("betas").as_vector<double>() == std::vector<double>{0.9, 0.999});
  CHECK(sd.meta.at("state").at("0").at("step").as_int() == 1);
  CHECK_FALSE(sd.meta.at("state").contains("1"));  // b had no gradient: no state
  CHECK(sd.tensors.keys() == std::vector<std::string>{"state.0.exp_avg", "state.0.exp_avg_sq"});

  Adam one_group({a, b}, AdamOptions(0.1));
  CHECK_THROWS_WITH(one_group.load_state_dict(sd), Catch::Contains("different number of parameter groups"));
  Tensor c = from_vector<float>({1.0f}).requires_grad_();
  Adam other_sizes({ParamGroup({a, c}), ParamGroup({b})}, AdamOptions(0.1));
  CHECK_THROWS_WITH(other_sizes.load_state_dict(sd), Catch::Contains("doesn't match the size of optimizer's group"));
  SGD sgd({ParamGroup({a}), ParamGroup({b})}, SGDOptions(0.1));
  CHECK_THROWS_WITH(sgd.load_state_dict(sd), Catch::Contains("saved by Adam, not SGD"));
  // Shape check on state tensors.
  Tensor a3 = from_vector<float>({1, 2, 3}).requires_grad_();
  Adam wrong({ParamGroup({a3}), ParamGroup({b})}, AdamOptions(0.1));
  CHECK_THROWS_WITH(wrong.load_state_dict(sd), Catch::Contains("state tensor 'state.0.exp_avg' has shape [2]"));
  StateDict malformed = sd;
  malformed.tensors.insert("state.x.exp_avg", ones({2}));
  CHECK_THROWS_WITH(opt.load_state_dict(malformed), Catch::Contains("malformed parameter index 'x'"));
  StateDict unknown = sd;
  unknown.tensors.insert("state.9.exp_avg", ones({2}));
  CHECK_THROWS_WITH(opt.load_state_dict(unknown), Catch::Contains("names an unknown parameter"));
  // State follows the parameter's dtype.
  Tensor a64 = from_vector<double>({1, 2}).requires_grad_(), b64 = from_vector<double>({3.0}).requires_grad_();
  Adam d({ParamGroup({a64}), ParamGroup({b64})}, AdamOptions(0.1));
  d.load_state_dict(sd);
  CHECK(d.state(a64).buffers.at("exp_avg").dtype() == DType::F64);
  // Loading copies the state (no aliasing with the source optimizer).
  Adam copy({ParamGroup({from_vector<float>({1, 2}).requires_grad_()}), ParamGroup({b})}, AdamOptions(0.1));
  copy.load_state_dict(sd);
  CHECK(copy.state_dict().tensors["state.0.exp_avg"].raw_data() != sd.tensors["state.0.exp_avg"].raw_data());
}

// ---------------------------------------------------------------- schedulers

namespace {
std::vector<double> run_schedule(LRScheduler& s, int steps) {
  std::vector<double> lrs{s.get_last_lr()[0]};
  for (int i = 0; i < steps; ++i) {
    s.step();
    lrs.push_back(s.get_last_lr()[0]);
    CHECK(s.optimizer().param_groups()[0].lr() == lrs.back());  // the rate is applied
  }
  return lrs;
}
void check_sequence(const std::vector<double>& got, const std::function<double(int)>& expected) {
  for (size_t e = 0; e < got.size(); ++e) {
    INFO("epoch " << e);
    CHECK(got[e] == Approx(expected(static_cast<int>(e))).epsilon(1e-12).margin(1e-15));
  }
}
}  // namespace

TEST_CASE("StepLR, MultiStepLR and CosineAnnealingLR follow their closed forms", "[optim][sched]") {
  Tensor p = ones({1}).requires_grad_();
  {
    SGD opt({p}, SGDOptions(0.1));
    StepLR s(opt, 3, 0.5);
    CHECK(s.last_epoch() == 0);
    check_sequence(run_schedule(s, 10), [](int e) { return 0.1 * std::pow(0.5, e / 3); });
  }
  {
    SGD opt({p}, SGDOptions(0.1));
    MultiStepLR s(opt, {5, 2, 5}, 0.1);  // unsorted, with a repeated milestone (applies twice)
    check_sequence(run_schedule(s, 8), [](int e) { return 0.1 * (e < 2 ? 1 : e < 5 ? 0.1 : 0.001); });
  }
  {
    SGD opt({p}, SGDOptions(0.2));
    CosineAnnealingLR s(opt, 10, 0.01);
    check_sequence(run_schedule(s, 15), [](int e) {
      return 0.01 + (0.2 - 0.01) * (1 + std::cos(std::numbers::pi * e / 10)) / 2;
    });
    CHECK(s.get_last_lr()[0] == Approx(0.01 + 0.19 * (1 + std::cos(1.5 * std::numbers::pi)) / 2));
  }
}

TEST_CASE("LinearWarmup alone and wrapping a cosine schedule", "[optim][sched]") {
  Tensor p = ones({1}).requires_grad_();
  {
    SGD opt({p}, SGDOptions(0.3));
    LinearWarmup s(opt, LinearWarmupOptions(4).start_factor(0.25));
    check_sequence(run_schedule(s, 7), [](int e) { return e < 4 ? 0.3 * (0.25 + 0.75 * e / 4.0) : 0.3; });
  }
  {
    SGD opt({p}, SGDOptions(0.3));
    auto cosine = std::make_shared<CosineAnnealingLR>(opt, 6);
    LinearWarmup s(opt, LinearWarmupOptions(3), cosine);
    CHECK(s.base_lrs()[0] == 0.3);  // initial_lr recorded by the first scheduler
    check_sequence(run_schedule(s, 10), [](int e) {
      if (e < 3) return 0.3 * (1.0 / 3 + (2.0 / 3) * e / 3.0);
      return 0.3 * (1 + std::cos(std::numbers::pi * (e - 3) / 6)) / 2;
    });
  }
  SGD opt({p}, SGDOptions(0.3));
  SGD other({p}, SGDOptions(0.3));
  CHECK_THROWS_WITH(LinearWarmup(opt, LinearWarmupOptions(3), std::make_shared<StepLR>(other, 2)),
                    Catch::Contains("same optimizer"));
  CHECK_THROWS_WITH(LinearWarmup(opt, LinearWarmupOptions(0)), Catch::Contains("warmup_steps"));
}

TEST_CASE("OneCycleLR follows torch's phases for rate and momentum", "[optim][sched]") {
  Tensor p = ones({1}).requires_grad_();
  const double pi = std::numbers::pi;
  auto cos_anneal = [&](double start, double end, double pct) { return end + (start - end) / 2.0 * (std::cos(pi * pct) + 1); };
  {
    SGD opt({p}, SGDOptions(0.123));  // no momentum: cycle_momentum turns it on, as PyTorch
    OneCycleLR s(opt, OneCycleLROptions(1.0, 10));
    const double initial = 1.0 / 25, min_lr = initial / 1e4;
    CHECK(s.get_last_lr()[0] == Approx(initial));
    CHECK(static_cast<const SGDOptions&>(*opt.param_groups()[0].options).momentum_ == Approx(0.95));
    CHECK(opt.param_groups()[0].initial_lr == Approx(initial));
    // Phase 1 ends at step 0.3*10 - 1 = 2; phase 2 at 9.
    auto expected = [&](int e) {
      if (e <= 2) return cos_anneal(initial, 1.0, e / 2.0);
      return cos_anneal(1.0, min_lr, (e - 2) / 7.0);
    };
    check_sequence(run_schedule(s, 10), expected);  // step 10 is allowed (extrapolates)
    CHECK(s.momentum_at(2)[0] == Approx(0.85));
    CHECK(s.momentum_at(9)[0] == Approx(0.95));
    CHECK(s.momentum_at(1)[0] == Approx(cos_anneal(0.95, 0.85, 0.5)));
    CHECK_THROWS_WITH(s.step(), Catch::Contains("Tried to step 12 times. The specified number of total steps is 10"));
    CHECK(s.last_epoch() == 10);  // a refused step changes nothing
  }
  {
    // Three phases, linear annealing, on Adam (cycles beta1).
    Adam opt({p}, AdamOptions(0.1));
    OneCycleLR s(opt, OneCycleLROptions(2.0, 10).three_phase(true).anneal_strategy(AnnealStrategy::Linear));
    const double initial = 2.0 / 25, min_lr = initial / 1e4;
    auto lin = [](double a, double b, double pct) { return (b - a) * pct + a; };
    auto expected = [&](int e) {
      if (e <= 2) return lin(initial, 2.0, e / 2.0);
      if (e <= 4) return lin(2.0, initial, (e - 2) / 2.0);
      return lin(initial, min_lr, (e - 4) / 5.0);
    };
    check_sequence(run_schedule(s, 10), expected);
    CHECK(static_cast<const AdamOptions&>(*opt.param_groups()[0].options).betas_.first == Approx(0.95));
    CHECK(s.momentum_at(2)[0] == Approx(0.85));
    CHECK(s.momentum_at(3)[0] == Approx(0.90));
  }
  {
    SGD opt({p}, SGDOptions(0.1).momentum(0.5));
    OneCycleLR s(opt, OneCycleLROptions(1.0, 10).cycle_momentum(false).div_factor(10).final_div_factor(100));
    CHECK(s.get_last_lr()[0] == Approx(0.1));
    CHECK(static_cast<const SGDOptions&>(*opt.param_groups()[0].options).momentum_ == 0.5);
    for (int i = 0; i < 9; ++i) s.step();
    CHECK(s.get_last_lr()[0] == Approx(0.1 / 100));
  }
  {
    // RMSprop has a momentum, which PyTorch cycles (torch: momentum 0.95 at step 0, 0.85 at the
    // end of phase 1, rates 0.04, 0.52, 1 over steps 0-2 of OneCycleLR(max_lr 1, total_steps 10)).
    RMSprop opt({p}, RMSpropOptions(0.01));
    OneCycleLR s(opt, OneCycleLROptions(1.0, 10).anneal_strategy(AnnealStrategy::Linear));
    CHECK(static_cast<const RMSpropOptions&>(*opt.param_groups()[0].options).momentum_ == Approx(0.95));
    s.step();
    CHECK(s.get_last_lr()[0] == Approx(0.52));
    s.step();
    CHECK(s.get_last_lr()[0] == Approx(1.0));
    CHECK(static_cast<const RMSpropOptions&>(*opt.param_groups()[0].options).momentum_ == Approx(0.85));
  }
  {
    // pct_start 1 leaves the second phase no length: PyTorch divides by zero at step total_steps;
    // minidl refuses that step with a clear error instead of setting a NaN rate.
    SGD opt({p}, SGDOptions(0.1).momentum(0.9));
    OneCycleLR s(opt, OneCycleLROptions(1.0, 10).pct_start(1.0));
    for (int i = 0; i < 9; ++i) s.step();
    CHECK(s.get_last_lr()[0] == Approx(1.0));
    CHECK_THROWS_WITH(s.step(), Catch::Contains("OneCycleLR") && Catch::Contains("zero length"));
    CHECK(s.last_epoch() == 9);
  }
}

TEST_CASE("scheduler state dicts resume the schedule exactly", "[optim][sched]") {
  Tensor p = ones({1}).requires_grad_();
  SGD oa({p}, SGDOptions(0.3)), ob({p}, SGDOptions(0.3));
  auto ca = std::make_shared<CosineAnnealingLR>(oa, 20, 0.001);
  auto cb = std::make_shared<CosineAnnealingLR>(ob, 20, 0.001);
  LinearWarmup a(oa, LinearWarmupOptions(5), ca), b(ob, LinearWarmupOptions(5), cb);
  for (int i = 0; i < 7; ++i) a.step();
  Json state = Json::parse(a.state_dict().dump());  // through text, as in a checkpoint
  b.load_state_dict(state);
  CHECK(b.last_epoch() == 7);
  CHECK(b.get_last_lr() == a.get_last_lr());
  for (int i = 0; i < 5; ++i) {
    a.step();
    b.step();
    CHECK(a.get_last_lr() == b.get_last_lr());
    CHECK(oa.param_groups()[0].lr() == ob.param_groups()[0].lr());
  }
  StepLR step(oa, 2);
  CHECK_THROWS_WITH(step.load_state_dict(state), Catch::Contains("saved by LinearWarmup, not StepLR"));
}
