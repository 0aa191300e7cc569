// The foreach kernel families (ops/foreach.h) against per-tensor references built from ordinary
// ops in f64: unscale-and-check (with per-tensor inf/NaN flags and counts), norms (p = 1, 2, inf,
// general p, per tensor and joint), the in-place multiply (by a double or a 0-dim tensor), and the
// SGD and Adam/AdamW steps. Lists mix sizes (empty, one element, several chunks) and a
// non-contiguous view; each dtype the kernels support is checked on the CPU and, when one is
// present, on the GPU. Tolerances come from the dtype traits: a result is computed in its compute
// type from the same rounded inputs as the f64 reference and rounded once. Also: a CUDA kernel
// exists for every CPU one in a CUDA build, lists mixing dtypes are grouped correctly, and bad
// arguments throw errors naming the op.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "framework/cuda.h"
#include "minidl.h"
#include "ops/foreach.h"
#include "ops/kernels.h"
#include "random_values.h"
#include "targets.h"

using namespace minidl;
using minidl::testing::random_tensor;

namespace {

const std::vector<DType> kFloating = {DType::F64, DType::F32, DType::F16, DType::BF16};

std::vector<Device> devices() {
  std::vector<Device> d = {Device::cpu()};
  if (cuda::is_available()) d.push_back(Device::cuda(0));
  return d;
}

// Shapes of one list: empty, one element, small, one and several 16384-element chunks, and a 2-D
// tensor (made a transposed, non-contiguous view where asked).
const std::vector<Shape> kShapes = {{0}, {1}, {7}, {300}, {20000}, {30, 20}};

double compute_eps(DType t) { return t == DType::F64 ? traits(DType::F64).eps : traits(DType::F32).eps; }

// Allowed error of a value stored in t and computed in t's compute type from the reference's own
// inputs: half an ulp of t, `slack` ulps of the compute type, and the subnormal spacing of t.
double tolerance(DType t, double ref, double slack = 32) {
  const DTypeTraits& tr = traits(t);
  return (0.5 * tr.eps + slack * compute_eps(t)) * std::abs(ref) + tr.eps * tr.min_normal;
}

// Values uniform in [lo, hi), rounded to dt, on dev. transposed: the last shape is a
// non-contiguous view.
std::vector<Tensor> make_list(DType dt, Device dev, uint64_t seed, double lo, double hi, bool transposed = false) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < kShapes.size(); ++i) {
    const bool t = transposed && kShapes[i].size() == 2;
    const Shape s = t ? Shape{kShapes[i][1], kShapes[i][0]} : kShapes[i];
    Tensor x = random_tensor(s, seed * 100 + i, lo, hi).to(dt).to(dev);
    out.push_back(t ? x.t() : x);
  }
  return out;
}

// An f64 CPU copy, never an alias (exact: every dtype here converts to f64 exactly).
Tensor f64(const Tensor& x) { return x.to(Device::cpu()).to(DType::F64).clone(); }
std::vector<Tensor> f64(const std::vector<Tensor>& xs) {
  std::vector<Tensor> out;
  for (const Tensor& x : xs) out.push_back(f64(x));
  return out;
}

void check_close(const Tensor& got, const Tensor& ref, const std::string& what, double slack = 32) {
  INFO(what << ": " << got.meta_str());
  REQUIRE(got.shape() == ref.shape());
  const std::vector<double> g = f64(got).contiguous().to_vector<double>(), r = ref.contiguous().to_vector<double>();
  for (size_t k = 0; k < g.size(); ++k) {
    if (std::isnan(r[k])) {
      CHECK(std::isnan(g[k]));
      continue;
    }
    if (std::abs(g[k] - r[k]) > tolerance(got.dtype(), r[k], slack)) {
      FAIL_CHECK("element " << k << ": got " << g[k] << ", expected " << r[k] << " +- " << tolerance(got.dtype(), r[k], slack));
      return;
    }
  }
}

std::string where(Device dev, DType dt) { return dev.str() + " " + dtype_name(dt); }

}  // namespace

// The CUDA backend fills its tables only where a GPU can be used (ops/cuda/runtime.cu).
TEST_CASE("foreach: every CPU kernel family has a CUDA kernel where CUDA runs", "[foreach][cuda]") {
  const auto& r = kernels::registry();
  for (DType dt : kFloating) {
    INFO(dtype_name(dt));
    CHECK(r.foreach_unscale.has(DeviceType::CPU, dt));
    CHECK(r.foreach_norm.has(DeviceType::CPU, dt));
    CHECK(r.foreach_scale.has(DeviceType::CPU, dt));
    CHECK(r.foreach_scale_by_tensor.has(DeviceType::CPU, dt));
    CHECK(r.foreach_sgd.has(DeviceType::CPU, dt));
    CHECK(r.foreach_adam.has(DeviceType::CPU, dt));
    // Without a GPU: reported as skipped, a failure under MINIDL_EXPECT_GPU=1 (tests/targets.h).
    if (!testing::runs_here(DeviceType::CUDA, std::string("foreach registry check, ") + dtype_name(dt))) continue;
    CHECK(r.foreach_unscale.has(DeviceType::CUDA, dt));
    CHECK(r.foreach_norm.has(DeviceType::CUDA, dt));
    CHECK(r.foreach_scale.has(DeviceType::CUDA, dt));
    CHECK(r.foreach_scale_by_tensor.has(DeviceType::CUDA, dt));
    CHECK(r.foreach_sgd.has(DeviceType::CUDA, dt));
    CHECK(r.foreach_adam.has(DeviceType::CUDA, dt));
  }
}

TEST_CASE("foreach unscale: multiplies every tensor and flags and counts inf/NaN per tensor", "[foreach][amp]") {
  const float inv = static_cast<float>(1.0 / 3000.0);  // not a power of two: the product rounds
  for (Device dev : devices())
    for (DType dt : kFloating) {
      std::vector<Tensor> g = make_list(dt, dev, 1, -1000, 1000, true);
      // Tensor 1 (one element) holds an inf; tensor 4 two NaNs and an inf, in its second chunk;
      // the transposed view a NaN.
      g[1].fill_(-INFINITY);
      g[4].slice(0, 17000, 17002).fill_(NAN);
      g[4].slice(0, 19999, 20000).fill_(INFINITY);
      g[5].select(0, 3).select(0, 2).fill_(NAN);
      const std::vector<Tensor> ref_in = f64(g);
      const std::vector<NonFiniteCount> counted = foreach_non_finite_check_and_unscale_(g, inv, true);
      REQUIRE(counted.size() == g.size());
      const int64_t want_inf[] = {0, 1, 0, 0, 1, 0}, want_nan[] = {0, 0, 0, 0, 2, 1};
      for (size_t i = 0; i < g.size(); ++i) {
        INFO(where(dev, dt) << " tensor " << i);
        CHECK(counted[i].found == (want_inf[i] + want_nan[i] > 0));
        CHECK(counted[i].inf == want_inf[i]);
        CHECK(counted[i].nan == want_nan[i]);
        check_close(g[i], mul(ref_in[i], static_cast<double>(inv)), "unscale " + where(dev, dt), 1);
      }
      // Without counting: flags only; a clean list reports nothing.
      const std::vector<NonFiniteCount> flags = foreach_non_finite_check_and_unscale_({g[0], g[2], g[4]}, 1.0f);
      CHECK_FALSE(flags[0].found);
      CHECK_FALSE(flags[1].found);
      CHECK(flags[2].found);
      CHECK(flags[2].inf + flags[2].nan == 0);
      for (const NonFiniteCount& c : foreach_non_finite_check_and_unscale_({g[2], g[3]}, inv)) CHECK_FALSE(c.found);
    }
}

TEST_CASE("foreach norm: per-tensor and joint p-norms match the f64 reduction ops", "[foreach][clip]") {
  for (Device dev : devices())
    for (DType dt : kFloating) {
      const std::vector<Tensor> x = make_list(dt, dev, 2, -3, 3, true);
      const std::vector<Tensor> r = f64(x);
      for (double p : {1.0, 2.0, 3.0, std::numeric_limits<double>::infinity()}) {
        INFO(where(dev, dt) << " p = " << p);
        auto reference = [&](const Tensor& a) -> double {
          if (a.numel() == 0) return 0.0;
          if (std::isinf(p)) return max(abs(a)).item();
          return std::pow(sum(pow(abs(a), p)).item(), 1.0 / p);
        };
        const std::vector<double> norms = foreach_norm(x, p);
        REQUIRE(norms.size() == x.size());
        for (size_t i = 0; i < x.size(); ++i) {
          const double want = reference(r[i]);
          CHECK(std::abs(norms[i] - want) <= 1e-12 * want);
        }
        std::vector<Tensor> flat;
        for (const Tensor& a : r) flat.push_back(a.contiguous().flatten());
        const double total = reference(cat(flat));
        CHECK(std::abs(foreach_total_norm(x, p).item() - total) <= 1e-12 * total);
      }
      // Non-finite values: NaN wins over everything, inf otherwise.
      std::vector<Tensor> bad = {x[3].clone(), x[4].clone()};
      bad[0].slice(0, 10, 11).fill_(INFINITY);
      bad[1].slice(0, 18000, 18001).fill_(NAN);
      for (double p : {1.0, 2.0, 3.0, std::numeric_limits<double>::infinity()}) {
        INFO(where(dev, dt) << " p = " << p);
        const std::vector<double> norms = foreach_norm(bad, p);
        CHECK(std::isinf(norms[0]));
        CHECK(std::isnan(norms[1]));
        CHECK(std::isnan(foreach_total_norm(bad, p).item()));
      }
    }
}

TEST_CASE("foreach mul_: every tensor times one scalar", "[foreach][clip]") {
  for (Device dev : devices())
    for (DType dt : kFloating) {
      const std::vector<Tensor> x = make_list(dt, dev, 3, -5, 5, true);
      const std::vector<Tensor> r = f64(x);
      foreach_mul_(x, 0.37);
      for (size_t i = 0; i < x.size(); ++i) check_close(x[i], mul(r[i], 0.37), "mul_ " + where(dev, dt), 1);
    }
}

TEST_CASE("foreach mul_ by a 0-dim tensor: the scalar in each tensor's dtype, read where the tensors are", "[foreach][clip]") {
  for (Device dev : devices())
    for (DType dt : kFloating) {
      const std::vector<Tensor> x = make_list(dt, dev, 4, -5, 5, true);
      const std::vector<Tensor> r = f64(x);
      // As t.mul_(s): the f64 scalar is rounded to t's dtype first (0.37 in f16/bf16 is not 0.37).
      const double used = scalar_tensor(0.37, DType::F64).to(dt).item();
      foreach_mul_(x, scalar_tensor(0.37, TensorOptions(DType::F64).device(dev)));
      for (size_t i = 0; i < x.size(); ++i) check_close(x[i], mul(r[i], used), "mul_ by a tensor " + where(dev, dt), 1);
    }
  // Two dtype groups and a scalar on the CPU: each group gets it in its own dtype and on its device.
  for (Device dev : devices()) {
    const std::vector<Tensor> x = {random_tensor({50}, 70, -2, 2).to(DType::BF16).to(dev),
                                   random_tensor({20}, 71, -2, 2).to(DType::F32).to(dev)};
    const std::vector<Tensor> r = f64(x);
    foreach_mul_(x, scalar_tensor(1.0 / 3.0, DType::F64));
    check_close(x[0], mul(r[0], scalar_tensor(1.0 / 3.0).to(DType::BF16).item()), "bf16 group " + dev.str(), 1);
    check_close(x[1], mul(r[1], static_cast<double>(1.0f / 3.0f)), "f32 group " + dev.str(), 1);
  }
}

namespace {
// torch.optim.SGD's update in f64 ops on CPU copies of the state before the step.
struct SgdReference {
  Tensor p, buf;
  SgdReference(const Tensor& p0, const Tensor& g0, const Tensor& buf0, bool first, const SgdHyper& h) {
    const Tensor g = f64(g0);
    p = f64(p0);
    Tensor d = h.maximize ? neg(g) : g;
    if (h.weight_decay != 0.0) d = add(d, p, h.weight_decay);
    if (h.momentum != 0.0) {
      buf = first ? d : add(mul(f64(buf0), h.momentum), d, 1.0 - h.dampening);
      d = h.nesterov ? add(d, buf, h.momentum) : buf;
    }
    p = add(p, d, -h.lr);
  }
};
}  // namespace

TEST_CASE("foreach sgd_: momentum, dampening, nesterov, weight decay and maximize match the op reference",
          "[foreach][optim]") {
  std::vector<SgdHyper> variants;
  variants.push_back({0.1, 0.0, 0.0, 0.0, false, false});
  variants.push_back({0.1, 0.9, 0.0, 0.01, false, false});
  variants.push_back({0.1, 0.9, 0.3, 0.0, false, true});
  variants.push_back({0.05, 0.8, 0.0, 0.01, true, false});
  variants.push_back({0.05, 0.8, 0.0, 0.01, true, true});
  for (Device dev : devices())
    for (DType dt : kFloating)
      for (size_t v = 0; v < variants.size(); ++v) {
        const SgdHyper& h = variants[v];
        // Positive parameters, gradients and buffers: no cancellation, so a relative bound holds.
        std::vector<Tensor> p = make_list(dt, dev, 10 + v, 1, 2, true);
        std::vector<Tensor> bufs;
        if (h.momentum != 0.0)
          for (const Tensor& x : p) bufs.push_back(empty(x.shape(), TensorOptions(dt).device(dev)));
        for (int step = 0; step < 2; ++step) {
          const bool first = step == 0;
          const std::vector<Tensor> g = make_list(dt, dev, 20 + 2 * v + step, 0.5, 1);
          std::vector<SgdReference> ref;
          for (size_t i = 0; i < p.size(); ++i) ref.emplace_back(p[i], g[i], bufs.empty() ? Tensor() : bufs[i], first, h);
          foreach_sgd_(p, g, bufs, first, h);
          for (size_t i = 0; i < p.size(); ++i) {
            std::ostringstream what;
            what << "sgd variant " << v << " step " << step << " " << where(dev, dt) << " tensor " << i;
            check_close(p[i], ref[i].p, what.str() + " param");
            if (!bufs.empty()) check_close(bufs[i], ref[i].buf, what.str() + " momentum_buffer");
          }
        }
      }
}

namespace {
// torch.optim.Adam / AdamW's update in f64 ops on CPU copies of the state before the step.
struct AdamReference {
  Tensor p, m, v, vmax;
  AdamReference(const AdamLists& l, size_t i, const AdamHyper& h) {
    const Tensor g0 = f64(l.grads[i]);
    p = f64(l.params[i]);
    m = f64(l.exp_avg[i]);
    v = f64(l.exp_avg_sq[i]);
    Tensor g = h.maximize ? neg(g0) : g0;
    if (h.decoupled) p = mul(p, 1.0 - h.lr * h.weight_decay);
    else if (h.weight_decay != 0.0) g = add(g, p, h.weight_decay);
    m = add(m, sub(g, m), 1.0 - h.beta1);
    v = add(mul(v, h.beta2), mul(g, g), 1.0 - h.beta2);
    Tensor used = v;
    if (h.amsgrad) used = vmax = maximum(f64(l.max_exp_avg_sq[i]), v);
    const double step = static_cast<double>(l.steps[i]);
    const double bc1 = 1.0 - std::pow(h.beta1, step), bc2_sqrt = std::sqrt(1.0 - std::pow(h.beta2, step));
    p = add(p, div(m, add(div(sqrt(used), bc2_sqrt), h.eps)), -(h.lr / bc1));
  }
};
}  // namespace

TEST_CASE("foreach adam_: Adam and AdamW with amsgrad, maximize and per-tensor step counts match the op reference",
          "[foreach][optim]") {
  std::vector<AdamHyper> variants;
  variants.push_back({1e-2, 0.9, 0.999, 1e-8, 0.0, false, false, false});
  variants.push_back({1e-2, 0.9, 0.999, 1e-8, 0.01, true, false, false});
  variants.push_back({1e-2, 0.8, 0.99, 1e-6, 0.01, false, true, true});
  variants.push_back({1e-2, 0.2, 0.99, 1e-8, 0.05, true, false, true});  // beta1 < 0.5: lerp's other form
  for (Device dev : devices())
    for (DType dt : kFloating)
      for (size_t k = 0; k < variants.size(); ++k) {
        const AdamHyper& h = variants[k];
        AdamLists l;
        l.params = make_list(dt, dev, 40 + k, 1, 2, true);
        for (const Tensor& x : l.params) {
          l.exp_avg.push_back(zeros(x.shape(), TensorOptions(dt).device(dev)));
          l.exp_avg_sq.push_back(zeros(x.shape(), TensorOptions(dt).device(dev)));
          if (h.amsgrad) l.max_exp_avg_sq.push_back(zeros(x.shape(), TensorOptions(dt).device(dev)));
        }
        // Tensor 2 starts one step later than the others: its bias corrections differ.
        for (int step = 0; step < 3; ++step) {
          AdamLists now = l;
          now.grads = make_list(dt, dev, 50 + 3 * k + step, 0.5, 1);
          for (size_t i = 0; i < l.params.size(); ++i) now.steps.push_back(i == 2 ? step : step + 1);
          if (step == 0) {  // tensor 2 has no step yet: leave it out
            for (auto* list : {&now.params, &now.grads, &now.exp_avg, &now.exp_avg_sq, &now.max_exp_avg_sq})
              if (!list->empty()) list->erase(list->begin() + 2);
            now.steps.erase(now.steps.begin() + 2);
          }
          std::vector<AdamReference> ref;
          for (size_t i = 0; i < now.params.size(); ++i) ref.emplace_back(now, i, h);
          foreach_adam_(now, h);
          for (size_t i = 0; i < now.params.size(); ++i) {
            std::ostringstream what;
            what << "adam variant " << k << " step " << step << " " << where(dev, dt) << " tensor " << i;
            check_close(now.params[i], ref[i].p, what.str() + " param");
            check_close(now.exp_avg[i], ref[i].m, what.str() + " exp_avg");
            check_close(now.exp_avg_sq[i], ref[i].v, what.str() + " exp_avg_sq");
            if (h.amsgrad) check_close(now.max_exp_avg_sq[i], ref[i].vmax, what.str() + " max_exp_avg_sq");
          }
        }
      }
}

TEST_CASE("foreach: a list mixing dtypes is grouped and every tensor keeps its own result", "[foreach]") {
  for (Device dev : devices()) {
    std::vector<Tensor> x;
    for (DType dt : {DType::F32, DType::BF16, DType::F64, DType::F32, DType::F16, DType::BF16})
      x.push_back(random_tensor({50}, 60 + x.size(), -2, 2).to(dt).to(dev));
    x[3].slice(0, 4, 5).fill_(NAN);
    const std::vector<Tensor> r = f64(x);
    const std::vector<NonFiniteCount> c = foreach_non_finite_check_and_unscale_(x, 0.25f, true);
    for (size_t i = 0; i < x.size(); ++i) {
      INFO(dev.str() << " tensor " << i);
      CHECK(c[i].found == (i == 3));
      CHECK(c[i].nan == (i == 3 ? 1 : 0));
      check_close(x[i], mul(r[i], 0.25), "mixed unscale", 1);
    }
    const std::vector<double> norms = foreach_norm({x[0], x[1], x[2]}, 1.0);
    for (size_t i = 0; i < 3; ++i) CHECK(std::abs(norms[i] - sum(abs(f64(x[i]))).item()) <= 1e-12 * norms[i]);
  }
}

TEST_CASE("foreach: bad arguments throw errors naming the op", "[foreach][errors]") {
  const Tensor a = ones({3}), b = ones({4});
  auto throws_naming = [](const std::function<void()>& f, const std::string& op) {
    try {
      f();
      FAIL("expected an error from " << op);
    } catch (const Error& e) {
      CHECK_THAT(e.what(), Catch::Contains(op));
    }
  };
  throws_naming([&] { foreach_mul_({ones({2}, TensorOptions(DType::I64))}, 2.0); }, "foreach_mul_");
  throws_naming([&] { foreach_mul_({a}, ones({1})); }, "foreach_mul_");                      // not 0-dim
  throws_naming([&] { foreach_mul_({a}, scalar_tensor(2, DType::I64)); }, "foreach_mul_");  // not floating
  throws_naming([&] { foreach_mul_({a}, Tensor()); }, "foreach_mul_");
  throws_naming([&] { foreach_norm({a}, 0.0); }, "foreach_norm");
  throws_naming([&] { foreach_non_finite_check_and_unscale_({Tensor()}, 1.0f); }, "foreach_non_finite_check_and_unscale_");
  const SgdHyper momentum{0.1, 0.9, 0.0, 0.0, false, false};
  throws_naming([&] { foreach_sgd_({a}, {b}, {a.clone()}, true, momentum); }, "foreach_sgd_");  // shapes differ
  throws_naming([&] { foreach_sgd_({a}, {a}, {}, true, momentum); }, "foreach_sgd_");           // no buffers
  throws_naming([&] { foreach_sgd_({a}, {a.to(DType::F64)}, {}, true, SgdHyper{}); }, "foreach_sgd_");
  AdamLists l{{a.clone()}, {a}, {zeros({3})}, {zeros({3})}, {}, {}};
  throws_naming([&] { foreach_adam_(l, AdamHyper{}); }, "foreach_adam_");  // no step counts
}
