// CPU-vs-CUDA agreement of the kernel families the CNN models need (ops/cuda/pool.cu,
// batch_norm.cu, random.cu, index.cu, conv.cu): forward and backward through the ops and autograd,
// f32/f64/f16/bf16 (and integer/bool dtypes where the kernels take them), random inputs, tolerances
// from the dtype traits; then short LeNet-5 / ResNet-20 runs. Every case skips without a GPU (a
// failure under MINIDL_EXPECT_GPU=1; MINIDL_CUDA_TESTS_ON_CPU=1 runs them with the CPU standing in,
// which checks the harness but makes the comparisons trivial). tests/cuda_checks.h has the helpers.
#include <catch2/catch.hpp>

#include <cmath>
#include <optional>
#include <sstream>
#include <vector>

#include "cuda_checks.h"
#include "minidl.h"
#include "ops/kernels.h"

using namespace minidl;
using namespace minidl::cuda_test;

namespace {

Tensor on_device(const Tensor& t) { return kCuda.is_cuda() ? t.detach().to(kCuda) : t.detach().clone(); }

// |got - ref| <= bound * mag + tiny everywhere: ref an f64 result, mag the same computation over
// absolute values (the size of the terms summed), bound = rounding of the output plus k roundings
// in the accumulation type.
void check_by_magnitude(const Tensor& got, const Tensor& ref, const Tensor& mag, double bound, const std::string& what) {
  INFO(what << ": got " << got.meta_str());
  REQUIRE(got.shape() == ref.shape());
  const std::vector<double> g = got.to_vector<double>(), r = ref.to_vector<double>(), m = mag.to_vector<double>();
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double excess = std::fabs(g[i] - r[i]) / (bound * m[i] + 1e-30);
    if (!(excess <= worst)) {
      worst = excess;
      at = i;
    }
  }
  if (!g.empty()) INFO("worst element " << at << ": got " << g[at] << ", want " << r[at] << " (" << worst << "x the bound)");
  CHECK(worst <= 1.0);
}

double acc_eps(DType t) { return t == DType::F64 ? eps_of(DType::F64) : eps_of(DType::F32); }

// Forward and every gradient of f(inputs) with the output's gradient gy, on the inputs' device.
struct Grads {
  Tensor y;
  std::vector<Tensor> g;
};
template <class F>
Grads run_with_grads(F&& f, const std::vector<Tensor>& inputs, const Tensor& gy) {
  std::vector<Tensor> leaves;
  for (const Tensor& t : inputs) leaves.push_back(t.detach().clone().requires_grad_());
  Grads r;
  r.y = f(leaves);
  r.y.backward(gy);
  for (const Tensor& l : leaves) r.g.push_back(l.grad().defined() ? l.grad().to(Device::cpu()) : Tensor());
  r.y = r.y.detach().to(Device::cpu());
  return r;
}

}  // namespace

TEST_CASE("cuda: max pooling values, indices and gradients agree with the CPU", "[cuda][pool]") {
  MINIDL_REQUIRE_GPU();
  struct Case {
    Shape shape;
    Size2 k, s, p, d;
    bool ceil;
  };
  const std::vector<Case> cases = {
      {{4, 6, 28, 28}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},  // LeNet
      {{2, 3, 15, 17}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},  // overlapping, padded
      {{2, 3, 15, 17}, {3, 2}, {2, 1}, {1, 0}, {2, 1}, true},   // dilated, ceil mode
  };
  for (DType t : kFloat64)
    for (const Case& c : cases) {
      std::ostringstream what;
      what << shape_str(c.shape) << " k" << c.k[0] << "x" << c.k[1] << " " << dtype_name(t);
      Tensor x = randn_cpu(c.shape, t, 11);
      auto h = max_pool2d_with_indices(x, c.k, c.s, c.p, c.d, c.ceil);
      auto d = max_pool2d_with_indices(on_device(x), c.k, c.s, c.p, c.d, c.ceil);
      check_equal(d.values, h.values, "max_pool2d values " + what.str());
      check_equal(d.indices, h.indices, "max_pool2d indices " + what.str());
      Tensor gy = randn_cpu(h.values.shape(), t, 12);
      auto f = [&](const std::vector<Tensor>& in) { return max_pool2d(in[0], c.k, c.s, c.p, c.d, c.ceil); };
      Grads hg = run_with_grads(f, {x}, gy), dg = run_with_grads(f, {on_device(x)}, on_device(gy));
      // Overlapping windows add a few f32 values in another order, then round once.
      check_close(dg.g[0], hg.g[0], 2 * eps_of(t) + 4 * acc_eps(t), 4 * acc_eps(t), "max_pool2d grad " + what.str());
    }
  // NaN wins its window, as on the CPU.
  Tensor x = from_vector<float>({1, NAN, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4, 0, 0, 0, 0}, {1, 1, 4, 4});
  auto h = max_pool2d_with_indices(x, {2, 2});
  auto d = max_pool2d_with_indices(on_device(x), {2, 2});
  check_equal(d.values, h.values, "max_pool2d NaN values");
  check_equal(d.indices, h.indices, "max_pool2d NaN indices");
  CHECK(std::isnan(d.values.to_vector<float>()[0]));
}

TEST_CASE("cuda: average and adaptive pooling and their gradients agree with the CPU", "[cuda][pool]") {
  MINIDL_REQUIRE_GPU();
  for (DType t : kFloat64) {
    Tensor x = randn_cpu({3, 4, 13, 11}, t, 21);
    for (bool include_pad : {true, false}) {
      auto f = [&](const std::vector<Tensor>& in) { return avg_pool2d(in[0], {3, 3}, {2, 2}, {1, 1}, false, include_pad); };
      const std::string what = std::string("avg_pool2d count_include_pad=") + (include_pad ? "1 " : "0 ") + dtype_name(t);
      Tensor gy = randn_cpu(f({x}).shape(), t, 22);
      Grads h = run_with_grads(f, {x}, gy), d = run_with_grads(f, {on_device(x)}, on_device(gy));
      check_close(d.y, h.y, ew_rtol(t), 4 * acc_eps(t), what);
      check_close(d.g[0], h.g[0], 2 * eps_of(t) + 4 * acc_eps(t), 4 * acc_eps(t), what + " grad");
    }
    for (int64_t divisor : {5, -2}) {  // divisor_override: every window's divisor, ceil_mode windows too
      auto f = [&](const std::vector<Tensor>& in) { return avg_pool2d(in[0], {3, 3}, {2, 2}, {1, 1}, true, false, divisor); };
      const std::string what = "avg_pool2d divisor_override=" + std::to_string(divisor) + " " + dtype_name(t);
      Tensor gy = randn_cpu(f({x}).shape(), t, 24);
      Grads h = run_with_grads(f, {x}, gy), d = run_with_grads(f, {on_device(x)}, on_device(gy));
      check_close(d.y, h.y, ew_rtol(t), 4 * acc_eps(t), what);
      check_close(d.g[0], h.g[0], 2 * eps_of(t) + 4 * acc_eps(t), 4 * acc_eps(t), what + " grad");
    }
    for (Size2 out : {Size2{1, 1}, Size2{3, 4}, Size2{13, 11}, Size2{29, 30}}) {  // adaptive max: overlapping windows
      auto f = [&](const std::vector<Tensor>& in) { return adaptive_max_pool2d(in[0], out); };
      const std::string what = "adaptive_max_pool2d to " + std::to_string(out[0]) + "x" + std::to_string(out[1]) + " " + dtype_name(t);
      Tensor gy = randn_cpu(f({x}).shape(), t, 25);
      Grads h = run_with_grads(f, {x}, gy), d = run_with_grads(f, {on_device(x)}, on_device(gy));
      check_close(d.y, h.y, 0, 0, what);
      check_equal(adaptive_max_pool2d_with_indices(on_device(x), out).indices, adaptive_max_pool2d_with_indices(x, out).indices,
                  what + " indices");
      check_close(d.g[0], h.g[0], 2 * eps_of(t) + 4 * acc_eps(t), 4 * acc_eps(t), what + " grad");
    }
    for (Size2 out : {Size2{1, 1}, Size2{3, 4}, Size2{13, 11}}) {
      auto f = [&](const std::vector<Tensor>& in) { return adaptive_avg_pool2d(in[0], out); };
      const std::string what = "adaptive_avg_pool2d to " + std::to_string(out[0]) + "x" + std::to_string(out[1]) + " " + dtype_name(t);
      Tensor gy = randn_cpu(f({x}).shape(), t, 23);
      Grads h = run_with_grads(f, {x}, gy), d = run_with_grads(f, {on_device(x)}, on_device(gy));
      // The global window sums 143 values: both sides in f32 (f64) in the same order, rounded once.
      check_close(d.y, h.y, ew_rtol(t) + 16 * acc_eps(t), 16 * acc_eps(t), what);
      check_close(d.g[0], h.g[0], 2 * eps_of(t) + 4 * acc_eps(t), 4 * acc_eps(t), what + " grad");
    }
  }
}

TEST_CASE("cuda: batch norm (and batch_norm_relu, batch_norm_add_relu) training and eval, forward, running stats and backward agree with the CPU", "[cuda][norm]") {
  MINIDL_REQUIRE_GPU();
  const char* names[] = {"batch_norm ", "batch_norm_relu ", "batch_norm_add_relu "};
  for (DType t : kFloat64)
    // The last shape splits each channel's 21760 elements among ~21 blocks (batch_norm.cu), in parts
    // that start mid-row.
    for (const Shape& shape : {Shape{8, 5, 6, 7}, Shape{64, 5}, Shape{64, 5, 20, 17}})
    for (int variant = 0; variant < 3; ++variant) {
      const std::string what = names[variant] + shape_str(shape) + " " + dtype_name(t);
      // A mean far from 0: the shifted sums must not cancel.
      Tensor x = cast(add(randn_cpu(shape, DType::F32, 31, 2.0), 10.0), t);
      Tensor w = randn_cpu({5}, DType::F32, 32), b = randn_cpu({5}, DType::F32, 33);
      Tensor residual = randn_cpu(shape, t, 35);
      Tensor gy = randn_cpu(shape, t, 34);
      for (bool training : {true, false}) {
        Tensor hm = zeros({5}), hv = ones({5});
        Tensor dm = on_device(hm), dv = on_device(hv);
        auto make = [&](Tensor& rm, Tensor& rv) {
          return [&, training, variant](const std::vector<Tensor>& in) {
            if (variant == 2) return batch_norm_add_relu(in[0], in[3], rm, rv, in[1], in[2], training, 0.1, 1e-5);
            return (variant == 1 ? batch_norm_relu : batch_norm)(in[0], rm, rv, in[1], in[2], training, 0.1, 1e-5);
          };
        };
        Grads h = run_with_grads(make(hm, hv), {x, w, b, residual}, gy);
        Grads d = run_with_grads(make(dm, dv), {on_device(x), on_device(w), on_device(b), on_device(residual)}, on_device(gy));
        const std::string mode = training ? " training" : " eval";
        // Normalized values are O(1): the output rounds once into t after f32 (f64) arithmetic.
        const double tol = 2 * eps_of(t) + 64 * acc_eps(t);
        check_close(d.y, h.y, tol, tol, what + mode + " output");
        check_close(dm, hm, 64 * acc_eps(t), 64 * acc_eps(t), what + mode + " running mean");
        check_close(dv, hv, 64 * acc_eps(t), 64 * acc_eps(t), what + mode + " running var");
        const double M = static_cast<double>(x.numel() / 5);
        const double gtol = 2 * eps_of(t) + 8 * std::sqrt(M) * acc_eps(t) * 4;
        check_close(d.g[0], h.g[0], gtol, gtol, what + mode + " grad x");
        check_close(d.g[1], h.g[1], gtol, gtol * std::sqrt(M), what + mode + " grad weight");
        check_close(d.g[2], h.g[2], gtol, gtol * std::sqrt(M), what + mode + " grad bias");
        if (variant == 2) check_close(d.g[3], h.g[3], 0, 0, what + mode + " grad residual (gy where the output is > 0)");
      }
    }
}

TEST_CASE("cuda: batch norm with eps 0 (a constant channel) and BatchNorm2d without running statistics agree with the CPU", "[cuda][norm]") {
  MINIDL_REQUIRE_GPU();
  for (DType t : kFloat64) {
    const std::string name = dtype_name(t);
    // Channel 2 constant: invstd 0 there (PyTorch's rule for eps 0), so its output is the bias.
    Tensor x = cast(add(randn_cpu({6, 4, 5, 3}, DType::F32, 51, 2.0), 10.0), t);
    x.select(1, 2).fill_(3.0);
    Tensor w = randn_cpu({4}, DType::F32, 52), b = randn_cpu({4}, DType::F32, 53), gy = randn_cpu(x.shape(), t, 54);
    auto f = [](const std::vector<Tensor>& in) { return batch_norm(in[0], Tensor(), Tensor(), in[1], in[2], true, 0.1, 0.0); };
    Grads h = run_with_grads(f, {x, w, b}, gy), d = run_with_grads(f, {on_device(x), on_device(w), on_device(b)}, on_device(gy));
    const double tol = 2 * eps_of(t) + 64 * acc_eps(t), gtol = 2 * eps_of(t) + 8 * std::sqrt(90.0) * acc_eps(t) * 4;
    check_close(d.y, h.y, tol, tol, name + " eps 0 output");
    check_close(d.y.select(1, 2), b.select(0, 2).to(t).expand({6, 5, 3}).contiguous(), 0, 0, name + " constant channel = bias");
    check_close(d.g[0], h.g[0], gtol, gtol, name + " eps 0 grad x");
    check_close(d.g[0].select(1, 2), zeros({6, 5, 3}, t), 0, 0, name + " constant channel grad x");
    check_close(d.g[1], h.g[1], gtol, gtol * std::sqrt(90.0), name + " eps 0 grad weight");
    // The module without running statistics normalizes with batch statistics in eval mode too.
    nn::BatchNorm2d hb(4, 1e-5, 0.1, true, false), db(4, 1e-5, 0.1, true, false);
    hb.to(t);
    db.to(kCuda, t);
    hb.eval();
    db.eval();
    check_close(db.forward(on_device(x)).to(Device::cpu()), hb.forward(x), tol, tol, name + " BatchNorm2d eval, no running stats");
  }
}

TEST_CASE("cuda: BatchNorm2d modules with running statistics count batches and track the CPU's statistics", "[cuda][norm]") {
  MINIDL_REQUIRE_GPU();
  // Training a module with running statistics bumps num_batches_tracked, a buffer that lives on the
  // module's device; momentum None averages over the count (read on the host, as PyTorch).
  for (std::optional<double> momentum : {std::optional<double>(0.1), std::optional<double>()}) {
    const std::string what = momentum ? "momentum 0.1" : "momentum None";
    nn::BatchNorm2d hb(4, 1e-5, momentum), db(4, 1e-5, momentum);
    db.to(kCuda);
    for (uint64_t step = 0; step < 3; ++step) {
      Tensor x = add(randn_cpu({6, 4, 5, 3}, DType::F32, 71 + step, 2.0), 1.0);
      Tensor dy = db.forward(on_device(x)), hy = hb.forward(x);
      check_close(dy, hy, 1e-5, 1e-5, what + " training output");
    }
    CHECK(db.num_batches_tracked.device() == kCuda);
    CHECK(db.num_batches_tracked.item_int() == 3);
    check_close(db.running_mean, hb.running_mean, 1e-5, 1e-6, what + " running mean");
    check_close(db.running_var, hb.running_var, 1e-5, 1e-6, what + " running var");
    hb.eval();
    db.eval();
    Tensor x = randn_cpu({2, 4, 5, 3}, DType::F32, 79);
    check_close(db.forward(on_device(x)), hb.forward(x), 1e-5, 1e-5, what + " eval output");
  }
}

TEST_CASE("cuda: batch_norm_add_relu with channels-last x or residual agrees with the CPU's NCHW result", "[cuda][norm][channels_last]") {
  MINIDL_REQUIRE_GPU();
  // The CUDA kernels take NCHW: a channels-last x or shortcut is copied to it first, whichever of
  // the two comes channels-last.
  constexpr MemoryFormat kCL = MemoryFormat::ChannelsLast;
  const Shape shape{8, 5, 6, 7};
  Tensor x = add(randn_cpu(shape, DType::F32, 41, 2.0), 10.0);
  Tensor residual = randn_cpu(shape, DType::F32, 42), gy = randn_cpu(shape, DType::F32, 43);
  Tensor w = randn_cpu({5}, DType::F32, 44), b = randn_cpu({5}, DType::F32, 45);
  Tensor hm = zeros({5}), hv = ones({5});
  auto f = [](Tensor& rm, Tensor& rv) {
    return [&](const std::vector<Tensor>& in) { return batch_norm_add_relu(in[0], in[3], rm, rv, in[1], in[2], true, 0.1, 1e-5); };
  };
  const Grads h = run_with_grads(f(hm, hv), {x, w, b, residual}, gy);
  for (int layout = 1; layout < 4; ++layout) {
    const bool x_cl = layout & 1, r_cl = layout & 2;
    const std::string what = std::string("x ") + (x_cl ? "channels-last" : "NCHW") + ", residual " + (r_cl ? "channels-last" : "NCHW");
    Tensor dx = on_device(x), dr = on_device(residual);
    if (x_cl) dx = dx.contiguous(kCL);
    if (r_cl) dr = dr.contiguous(kCL);
    Tensor dm = on_device(zeros({5})), dv = on_device(ones({5}));
    const Grads d = run_with_grads(f(dm, dv), {dx, on_device(w), on_device(b), dr}, on_device(gy));
    const double tol = 2 * eps_of(DType::F32) + 64 * acc_eps(DType::F32);
    check_close(d.y, h.y, tol, tol, what + " output");
    const double gtol = 2 * eps_of(DType::F32) + 8 * std::sqrt(8.0 * 6 * 7) * acc_eps(DType::F32) * 4;
    check_close(d.g[0], h.g[0], gtol, gtol, what + " grad x");
    check_close(d.g[3], h.g[3], 0, 0, what + " grad residual");
    check_close(dm, hm, 64 * acc_eps(DType::F32), 64 * acc_eps(DType::F32), what + " running mean");
  }
}

TEST_CASE("cuda: random fills draw the CPU's numbers for the same seed and offset", "[cuda][random]") {
  MINIDL_REQUIRE_GPU();
  const Shape shape{3, 1001};  // not a multiple of 4: the last Philox block is partial
  for (DType t : kFloat64) {
    const std::string name = dtype_name(t);
    Generator hg(1234), dg(1234);
    hg.reserve(5);  // a non-zero offset
    dg.reserve(5);
    // Uniform: f16/bf16/f64 are exact; f32 rounds lo + span * u twice on both sides.
    Tensor hu = rand(shape, TensorOptions(t), &hg), du = rand(shape, TensorOptions(t).device(kCuda), &dg);
    check_close(du, hu, t == DType::F32 ? eps_of(t) : 0.0, 0, "rand " + name);
    // Normal: Box-Muller through each side's log, sqrt, sin and cos.
    Tensor hn = randn(shape, TensorOptions(t), &hg), dn = randn(shape, TensorOptions(t).device(kCuda), &dg);
    check_close(dn, hn, is_low_precision(t) ? eps_of(t) : 1e3 * eps_of(t), is_low_precision(t) ? eps_of(t) : 1e3 * eps_of(t),
                "randn " + name);
    // Dropout masks: exact.
    Tensor ones_h = ones(shape, TensorOptions(t));
    check_equal(dropout(on_device(ones_h), 0.3, true, &dg), dropout(ones_h, 0.3, true, &hg), "dropout mask " + name);
    CHECK(hg.offset() == dg.offset());
  }
  for (DType t : {DType::I64, DType::I32, DType::U8}) {
    Generator hg(99), dg(99);
    check_equal(randint(0, 200, {4097}, TensorOptions(t).device(kCuda), &dg), randint(0, 200, {4097}, TensorOptions(t), &hg),
                std::string("randint ") + dtype_name(t));
  }
  // A range above 2^32 takes 64-bit draws.
  Generator hg(5), dg(5);
  check_equal(randint(-(int64_t{1} << 40), int64_t{1} << 40, {1001}, TensorOptions(DType::I64).device(kCuda), &dg),
              randint(-(int64_t{1} << 40), int64_t{1} << 40, {1001}, TensorOptions(DType::I64), &hg), "randint 64-bit");
}

TEST_CASE("cuda: index_select, gather and their scatter gradients agree with the CPU", "[cuda][index]") {
  MINIDL_REQUIRE_GPU();
  // Repeated indices: the gradients add several values into one row (atomics on CUDA).
  Tensor rows = from_vector<int64_t>({3, 0, 3, 3, 1, 6, 0, 3});
  Tensor cols = cast(mul(rand({5, 7, 4}, {}, nullptr), 6.999), DType::I64);  // gather along dim 1 of [5, 7, 4]
  for (DType t : kFloat64) {
    const std::string name = dtype_name(t);
    Tensor x = randn_cpu({7, 9}, t, 41);
    Tensor gy = randn_cpu({8, 9}, t, 42);
    auto sel = [&](const std::vector<Tensor>& in) { return index_select(in[0], 0, in[0].device().is_cuda() ? on_device(rows) : rows); };
    Grads h = run_with_grads(sel, {x}, gy), d = run_with_grads(sel, {on_device(x)}, on_device(gy));
    check_equal(d.y, h.y, "index_select " + name);
    // Up to 4 values per row, against the f64 sum: CUDA adds in f32 and rounds once; the CPU rounds
    // after each add (at most 2 eps of the magnitude summed, the bound used here).
    auto f64 = [](const Tensor& v) { return cast(v, DType::F64); };
    auto a64 = [](const Tensor& v) { return abs(cast(v, DType::F64)); };
    Tensor ref = run_with_grads(sel, {f64(x)}, f64(gy)).g[0], mag = run_with_grads(sel, {a64(x)}, a64(gy)).g[0];
    check_by_magnitude(d.g[0], ref, mag, 2 * eps_of(t) + 4 * acc_eps(t), "index_select grad (index_add) " + name);

    Tensor xg = randn_cpu({5, 7, 4}, t, 43);
    Tensor gg = randn_cpu({5, 7, 4}, t, 44);
    auto gat = [&](const std::vector<Tensor>& in) { return gather(in[0], 1, in[0].device().is_cuda() ? on_device(cols) : cols); };
    Grads hg = run_with_grads(gat, {xg}, gg), dg = run_with_grads(gat, {on_device(xg)}, on_device(gg));
    check_equal(dg.y, hg.y, "gather " + name);
    Tensor gref = run_with_grads(gat, {f64(xg)}, f64(gg)).g[0], gmag = run_with_grads(gat, {a64(xg)}, a64(gg)).g[0];
    check_by_magnitude(dg.g[0], gref, gmag, 2 * eps_of(t) + 8 * acc_eps(t), "gather grad (scatter_add) " + name);
    // gather from a transposed (strided) input.
    Tensor xt = randn_cpu({4, 7, 5}, t, 45).transpose(0, 2);
    check_equal(gather(on_device(randn_cpu({4, 7, 5}, t, 45)).transpose(0, 2), 1, on_device(cols)), gather(xt, 1, cols),
                "gather strided " + name);
  }
  // Integer and bool kernels (no autograd): index_select, and index_add / scatter_add through the registry.
  for (DType t : {DType::I64, DType::I32, DType::U8, DType::Bool}) {
    const std::string name = dtype_name(t);
    Tensor x = cast(mul(rand({7, 9}), 5.0), t);
    check_equal(index_select(on_device(x), 0, on_device(rows)), index_select(x, 0, rows), "index_select " + name);
    Tensor src = cast(mul(rand({8, 9}), 3.0), t);
    Tensor hout = zeros({7, 9}, TensorOptions(t)), dout = zeros({7, 9}, TensorOptions(t).device(kCuda));
    R().index_add.get(Device::cpu(), t)(hout, 0, rows, src);
    R().index_add.get(kCuda, t)(dout, 0, on_device(rows), on_device(src));
    check_equal(dout, hout, "index_add " + name);
    Tensor s2 = cast(mul(rand({5, 7, 4}), 3.0), t);
    Tensor hs = zeros({5, 7, 4}, TensorOptions(t)), ds = zeros({5, 7, 4}, TensorOptions(t).device(kCuda));
    R().scatter_add.get(Device::cpu(), t)(hs, 1, cols, s2);
    R().scatter_add.get(kCuda, t)(ds, 1, on_device(cols), on_device(s2));
    check_equal(ds, hs, "scatter_add " + name);
  }
}

TEST_CASE("cuda: cuDNN conv2d forward, input and weight gradients against an f64 reference", "[cuda][conv]") {
  MINIDL_REQUIRE_GPU();
  struct Case {
    const char* name;
    Shape x, w;
    Size2 s, p, d;
    int64_t groups;
    bool same;  // padding="same" (an even kernel pads asymmetrically)
  };
  const std::vector<Case> cases = {
      {"lenet conv1", {4, 1, 28, 28}, {6, 1, 5, 5}, {1, 1}, {2, 2}, {1, 1}, 1, false},
      {"lenet conv2", {4, 6, 14, 14}, {16, 6, 5, 5}, {1, 1}, {0, 0}, {1, 1}, 1, false},
      {"resnet 3x3 stride 2", {2, 16, 16, 16}, {32, 16, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, false},
      {"1x1 projection", {2, 16, 8, 8}, {32, 16, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1, false},
      {"dilated, grouped", {2, 4, 11, 13}, {6, 2, 3, 3}, {1, 2}, {2, 1}, {2, 1}, 2, false},
      {"same, even kernel", {2, 3, 9, 10}, {5, 3, 4, 2}, {1, 1}, {0, 0}, {1, 1}, 1, true},
  };
  for (DType t : kFloat64)
    for (const Case& c : cases) {
      const std::string what = std::string(c.name) + " " + dtype_name(t);
      Tensor x = randn_cpu(c.x, t, 51), w = randn_cpu(c.w, t, 52, 0.3), b = randn_cpu({c.w[0]}, t, 53);
      auto f = [&](const std::vector<Tensor>& in) {
        return c.same ? conv2d(in[0], in[1], in[2], c.s, ConvPadding::Same, c.d, c.groups)
                      : conv2d(in[0], in[1], in[2], c.s, c.p, c.d, c.groups);
      };
      Tensor gy = randn_cpu(f({x, w, b}).shape(), t, 54);
      auto f64 = [](const Tensor& v) { return cast(v, DType::F64); };
      auto a64 = [](const Tensor& v) { return abs(cast(v, DType::F64)); };
      Grads ref = run_with_grads(f, {f64(x), f64(w), f64(b)}, f64(gy));
      Grads mag = run_with_grads(f, {a64(x), a64(w), a64(b)}, a64(gy));
      Grads d = run_with_grads(f, {on_device(x), on_device(w), on_device(b)}, on_device(gy));
      const int64_t k_fwd = c.w[1] * c.w[2] * c.w[3];
      const int64_t k_data = c.w[0] / c.groups * c.w[2] * c.w[3];
      const int64_t k_filter = gy.numel() / gy.size(1);
      auto bound = [&](int64_t k) { return 2 * eps_of(t) + static_cast<double>(k) * acc_eps(t); };
      check_by_magnitude(d.y, ref.y, mag.y, bound(k_fwd + 1), what + " forward");
      check_by_magnitude(d.g[0], ref.g[0], mag.g[0], bound(k_data), what + " input grad");
      check_by_magnitude(d.g[1], ref.g[1], mag.g[1], bound(k_filter), what + " weight grad");
      check_by_magnitude(d.g[2], ref.g[2], mag.g[2], bound(k_filter), what + " bias grad");
    }
}

TEST_CASE("cuda: LeNet-5 and ResNet-20 steps on CUDA track the CPU, and fp16/bf16 autocast LeNet learns", "[cuda][train]") {
  MINIDL_REQUIRE_GPU();
  // ResNet-20: one training step (forward, backward through conv, batch norm, pooling) from the same weights.
  {
    manual_seed(3);
    auto hm = nn::models::make_model("resnet20");
    manual_seed(3);
    auto dm = nn::models::make_model("resnet20");
    dm->to(kCuda);
    Tensor x = randn_cpu({8, 3, 32, 32}, DType::F32, 61);
    Tensor y = from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7});
    Tensor hl = cross_entropy(hm->forward(x), y), dl = cross_entropy(dm->forward(on_device(x)), on_device(y));
    CHECK(dl.item() == Approx(hl.item()).epsilon(1e-4));
    hl.backward();
    dl.backward();
    auto hp = hm->parameters(), dp = dm->parameters();
    REQUIRE(hp.size() == dp.size());
    for (size_t i = 0; i < hp.size(); ++i)
      check_close(dp[i].grad(), hp[i].grad(), 1e-3, 1e-4, "resnet20 gradient of parameter " + std::to_string(i));
  }
  // LeNet-5 on an easy synthetic problem: class c brightens an 8x4 patch at a place of its own.
  std::vector<float> pix = randn_cpu({256, 1, 28, 28}, DType::F32, 62, 0.3).to_vector<float>();
  std::vector<int64_t> labels(256);
  for (int64_t i = 0; i < 256; ++i) {
    const int64_t c = i % 10;
    labels[static_cast<size_t>(i)] = c;
    for (int64_t r = 0; r < 8; ++r)
      for (int64_t q = 0; q < 4; ++q) pix[static_cast<size_t>(i * 784 + (2 + 12 * (c / 5) + r) * 28 + 2 + 5 * (c % 5) + q)] += 2.0f;
  }
  Tensor x = from_vector<float>(pix, {256, 1, 28, 28});
  Tensor y = from_vector<int64_t>(labels);
  Tensor dx = on_device(x), dy = on_device(y);
  for (DType amp_dtype : {DType::F16, DType::BF16}) {
    manual_seed(7);
    auto m = nn::models::make_model("lenet");
    m->to(kCuda);
    optim::SGD opt(m->parameters(), optim::SGDOptions(0.02).momentum(0.9));
    amp::GradScaler scaler(kCuda, amp::GradScalerOptions().enabled_(amp_dtype == DType::F16));
    double first = 0, last = 0;
    for (int epoch = 0; epoch < 20; ++epoch)
      for (int64_t b = 0; b < 256; b += 64) {
        opt.zero_grad();
        Tensor loss;
        {
          amp::autocast scope(kCuda.type, amp_dtype);
          loss = cross_entropy(m->forward(dx.slice(0, b, b + 64)), dy.slice(0, b, b + 64));
        }
        scaler.scale(loss).backward();
        scaler.step(opt);
        scaler.update();
        if (epoch == 0 && b == 0) first = loss.item();
        if (epoch == 19) last += loss.item() / 4;  // the last epoch's mean
      }
    INFO("LeNet-5 autocast " << dtype_name(amp_dtype) << ": first loss " << first << ", last " << last);
    CHECK(last < 0.5 * first);
  }
}
