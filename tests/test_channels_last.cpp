// Channels-last images (MemoryFormat::ChannelsLast): the format API, element-wise ops that keep
// the format and walk it in memory order, batch norm on its rows of channels (against NCHW, and
// f64 gradient checks), and conv2d on oneDNN's NHWC kernels against the NCHW im2col path in f32,
// bf16 and f16, including the kernels' own fallback when oneDNN declines a channels-last call.
#include <catch2/catch.hpp>

#include <omp.h>

#include "gradcheck.h"
#include "ops/cpu/conv_dnnl.h"
#include "ops/kernels.h"
#include "random_values.h"

using namespace minidl;
using minidl::testing::GradCase;
using minidl::testing::max_abs_diff;
using minidl::testing::run_case;

namespace {

using minidl::testing::random_tensor;
Tensor random_tensor(const Shape& s, uint64_t seed, DType dt) { return cast(random_tensor(s, seed), dt); }

constexpr MemoryFormat kCL = MemoryFormat::ChannelsLast;

double max_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  return max_abs_diff(a, b);
}
double magnitude(const Tensor& t) { return max_abs_diff(t, zeros_like(t)); }

struct RestoreConvSettings {
  int threads = omp_get_max_threads();
  bool dnnl = kernels::cpu::dnnl_conv::enabled();
  ~RestoreConvSettings() {
    kernels::cpu::dnnl_conv::set_enabled(dnnl);
    omp_set_num_threads(threads);
  }
};

}  // namespace

TEST_CASE("memory formats: channels-last strides, density checks and copies", "[channels_last]") {
  CHECK(strides_for({2, 3, 4, 5}, kCL) == Shape{60, 1, 15, 3});
  CHECK(strides_for({2, 3, 4, 5}, MemoryFormat::Contiguous) == Shape{60, 20, 5, 1});
  const Tensor x = random_tensor({2, 3, 4, 5}, 1, DType::F32);
  CHECK(x.is_contiguous());
  CHECK_FALSE(x.is_contiguous(kCL));
  CHECK(x.suggest_memory_format() == MemoryFormat::Contiguous);

  const Tensor c = x.contiguous(kCL);
  CHECK(c.strides() == Shape{60, 1, 15, 3});
  CHECK(c.is_contiguous(kCL));
  CHECK_FALSE(c.is_contiguous());
  CHECK(c.suggest_memory_format() == kCL);
  CHECK(max_diff(c, x) == 0.0);                 // same elements at the same logical indices
  CHECK(c.contiguous(kCL).is_same(c));          // already dense: no copy
  CHECK(max_diff(c.contiguous(), x) == 0.0);

  // A tensor dense in both (one channel) suggests NCHW; an empty channels-last tensor is valid.
  const Tensor one = random_tensor({2, 1, 3, 3}, 2, DType::F32).contiguous(kCL);
  CHECK(one.is_contiguous());
  CHECK(one.is_contiguous(kCL));
  CHECK(one.suggest_memory_format() == MemoryFormat::Contiguous);
  CHECK(empty({0, 4, 2, 2}, TensorOptions().memory_format(kCL)).numel() == 0);

  // Differentiable like contiguous(): the gradient comes back in the input's layout and values.
  Tensor leaf = random_tensor({2, 3, 2, 2}, 3, DType::F64).requires_grad_();
  sum(mul(leaf.contiguous(kCL), 3.0)).backward();
  CHECK(max_diff(leaf.grad(), full_like(leaf, 3.0)) == 0.0);

  CHECK_THROWS_WITH(empty({2, 3, 4}, TensorOptions().memory_format(kCL)),
                    Catch::Contains("empty") && Catch::Contains("rank 4"));
  CHECK_THROWS_WITH(random_tensor({2, 3, 4}, 4, DType::F32).contiguous(kCL),
                    Catch::Contains("contiguous") && Catch::Contains("rank 4"));
}

TEST_CASE("clone keeps a channels-last tensor so; contiguous() and clone(Contiguous) give NCHW", "[channels_last]") {
  const Tensor x = random_tensor({2, 3, 4, 5}, 11, DType::F32);
  const Tensor c = x.contiguous(kCL);
  const Tensor kept = c.clone();  // PyTorch's clone(memory_format=torch.preserve_format)
  CHECK(kept.is_contiguous(kCL));
  CHECK_FALSE(kept.is_contiguous());
  CHECK_FALSE(kept.is_same(c));
  CHECK(max_diff(kept, x) == 0.0);
  for (const Tensor& nchw : {c.clone(MemoryFormat::Contiguous), c.contiguous()}) {
    CHECK(nchw.is_contiguous());
    CHECK(nchw.strides() == Shape{60, 20, 5, 1});
    CHECK(max_diff(nchw, x) == 0.0);
  }
  CHECK(x.clone().is_contiguous());
  CHECK(x.clone(kCL).is_contiguous(kCL));
  CHECK(max_diff(x.clone(kCL), x) == 0.0);
  // Other strides (a transpose) come back contiguous.
  const Tensor t = random_tensor({3, 4}, 12, DType::F32).transpose(0, 1);
  CHECK(t.clone().is_contiguous());
  CHECK(max_diff(t.clone(), t) == 0.0);
  CHECK_THROWS_WITH(random_tensor({2, 3, 4}, 13, DType::F32).clone(kCL), Catch::Contains("clone") && Catch::Contains("rank 4"));

  // Differentiable: the gradient reaches the input in its own layout.
  Tensor leaf = random_tensor({2, 3, 2, 2}, 14, DType::F64).requires_grad_();
  sum(mul(leaf.contiguous(kCL).clone(), 2.0)).backward();
  CHECK(leaf.grad().is_contiguous());
  CHECK(max_diff(leaf.grad(), full_like(leaf, 2.0)) == 0.0);
}

TEST_CASE("in-place add_ and mul_ on a channels-last clone keep its layout; a leaf's .grad is contiguous", "[channels_last][autograd]") {
  const Tensor x = random_tensor({2, 3, 4, 4}, 15, DType::F32);
  const Tensor other = random_tensor({2, 3, 4, 4}, 16, DType::F32);
  const Tensor y = x.contiguous(kCL).clone();
  y.add_(other, 2.0);
  y.mul_(3.0);
  y.mul_(other.contiguous(kCL));
  CHECK(y.is_contiguous(kCL));
  CHECK(max_diff(y, mul(mul(add(x, mul(other, 2.0)), 3.0), other)) == 0.0);
  // A strided view that is dense in neither layout is still refused, naming the op.
  const Tensor strided = random_tensor({4, 6}, 17, DType::F32).transpose(0, 1);
  CHECK_THROWS_WITH(strided.add_(strided), Catch::Contains("add_") && Catch::Contains("strided view"));
  CHECK_THROWS_WITH(strided.mul_(2.0), Catch::Contains("mul_") && Catch::Contains("strided view"));

  // .grad is contiguous whatever the layout of the leaf or of the incoming gradient (PyTorch lays
  // it out as the leaf; README), and accumulates in place across backward passes.
  for (bool leaf_channels_last : {false, true})
    for (bool grad_channels_last : {false, true}) {
      INFO("leaf " << (leaf_channels_last ? "channels-last" : "NCHW") << ", incoming gradient "
                   << (grad_channels_last ? "channels-last" : "NCHW"));
      Tensor leaf = (leaf_channels_last ? x.contiguous(kCL) : x.clone()).detach().requires_grad_();
      const Tensor w = grad_channels_last ? other.contiguous(kCL) : other;
      sum(mul(leaf, w)).backward();
      CHECK(leaf.grad().is_contiguous());
      CHECK(max_diff(leaf.grad(), other) == 0.0);
      sum(mul(leaf, w)).backward();
      CHECK(leaf.grad().is_contiguous());
      CHECK(max_diff(leaf.grad(), mul(other, 2.0)) == 0.0);
    }
  // So is a retained gradient of a channels-last non-leaf.
  Tensor leaf = x.contiguous(kCL).detach().requires_grad_();
  Tensor inner = mul(leaf, 2.0);
  REQUIRE(inner.is_contiguous(kCL));
  inner.retain_grad();
  mul(inner, 3.0).backward(other.contiguous(kCL));  // inner's gradient arrives channels-last
  CHECK(inner.grad().is_contiguous());
  CHECK(max_diff(inner.grad(), mul(other, 3.0)) == 0.0);
}

TEST_CASE("element-wise ops keep channels-last images so and compute the same values", "[channels_last]") {
  // 16 channels x 9 x 7 pixels x 2 images: above the parallel grain with the large shape, so the
  // memory-order loop is also split across threads.
  for (const Shape& shape : {Shape{2, 16, 9, 7}, Shape{4, 16, 32, 32}}) {
    INFO(shape_str(shape));
    const Tensor a = random_tensor(shape, 10, DType::F32), b = random_tensor(shape, 11, DType::F32);
    const Tensor ac = a.contiguous(kCL), bc = b.contiguous(kCL);
    const Tensor scale = random_tensor({shape[1], 1, 1}, 12, DType::F32);
    struct Case {
      const char* name;
      Tensor cl, ref;
    };
    const Case cases[] = {
        {"add", add(ac, bc), add(a, b)},
        {"add broadcast [C, 1, 1]", add(ac, scale), add(a, scale)},
        {"mul scalar", mul(ac, 0.5), mul(a, 0.5)},
        {"relu", relu(ac), relu(a)},
        {"exp", exp(ac), exp(a)},
        {"cast to bf16", cast(ac, DType::BF16), cast(a, DType::BF16)},
        {"cast to f16", cast(ac, DType::F16), cast(a, DType::F16)},
    };
    for (const Case& c : cases) {
      INFO(c.name);
      CHECK(c.cl.suggest_memory_format() == kCL);
      CHECK(max_diff(c.cl, c.ref) == 0.0);  // element by element: the same arithmetic
    }
    // Mixed layouts: the first full-shape operand decides; values are the same either way.
    const Tensor mixed = add(a, bc);
    CHECK(mixed.suggest_memory_format() == MemoryFormat::Contiguous);
    CHECK(max_diff(mixed, add(a, b)) == 0.0);
    // Gradients through a channels-last chain equal those through NCHW.
    Tensor la = a.clone().requires_grad_(), lb = ac.detach().clone().requires_grad_();
    sum(mul(relu(la), scale)).backward();
    sum(mul(relu(lb.contiguous(kCL)), scale)).backward();
    CHECK(max_diff(la.grad(), lb.grad()) == 0.0);
  }
}

TEST_CASE("batch norm on channels-last input matches NCHW, in its layout", "[channels_last][norm]") {
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
    for (bool relu_fused : {false, true})
      for (bool training : {true, false}) {
        INFO(dtype_name(dt) << (relu_fused ? " batch_norm_relu" : " batch_norm") << (training ? " train" : " eval"));
        const Shape shape{4, 16, 6, 5};
        auto run = [&](MemoryFormat f) {
          Tensor x = random_tensor(shape, 20, dt).contiguous(f).requires_grad_();
          Tensor w = random_tensor({16}, 21, DType::F32).requires_grad_(), b = random_tensor({16}, 22, DType::F32).requires_grad_();
          Tensor rm = random_tensor({16}, 23, DType::F32), rv = add(random_tensor({16}, 24, DType::F32), 2.0);
          Tensor y = relu_fused ? batch_norm_relu(x, rm, rv, cast(w, dt), cast(b, dt), training, 0.1, 1e-5)
                                : batch_norm(x, rm, rv, cast(w, dt), cast(b, dt), training, 0.1, 1e-5);
          y.backward(random_tensor(shape, 25, dt).contiguous(f));
          return std::vector<Tensor>{y.detach(), x.grad(), w.grad(), b.grad(), rm, rv};
        };
        const auto cl = run(kCL), ref = run(MemoryFormat::Contiguous);
        CHECK(cl[0].suggest_memory_format() == kCL);
        const char* what[] = {"y", "x grad", "w grad", "b grad", "running mean", "running var"};
        for (size_t i = 0; i < cl.size(); ++i) {
          INFO(what[i]);
          // Statistics sum in f64 in another order; low-precision results may round one ulp apart.
          const double ulp = traits(cl[i].dtype()).eps;
          CHECK(max_diff(cl[i], ref[i]) <= 64 * traits(DType::F32).eps * (1 + magnitude(ref[i])) + ulp * magnitude(ref[i]));
        }
      }
}

TEST_CASE("batch norm on channels-last input: f64 gradient checks (first and second order)", "[channels_last][norm][grad]") {
  for (bool relu_fused : {false, true}) {
    GradCase c{relu_fused ? "batch_norm_relu channels-last" : "batch_norm channels-last",
               {{3, 4, 3, 2}, {4}, {4}},
               [relu_fused](const std::vector<Tensor>& in) {
                 const Tensor x = in[0].contiguous(kCL);
                 return relu_fused ? batch_norm_relu(x, Tensor(), Tensor(), in[1], in[2], true, 0.1, 1e-5)
                                   : batch_norm(x, Tensor(), Tensor(), in[1], in[2], true, 0.1, 1e-5);
               }};
    c.tol = 1e-4;
    INFO(c.name);
    CHECK(run_case(c) == "");
  }
}

namespace {
namespace dc = kernels::cpu::dnnl_conv;

struct ClConv {
  const char* name;
  Shape x, w;
  Size2 stride, pad;
};
// Layers of the zoo's CIFAR models: 3 -> 8 (a first layer), 8 -> 16 3x3, a strided 3x3 and a 1x1
// shortcut, 16 -> 16 with 16 channels a block.
const ClConv kClConvs[] = {
    {"3 -> 8 3x3", {4, 3, 10, 9}, {8, 3, 3, 3}, {1, 1}, {1, 1}},
    {"8 -> 16 3x3", {4, 8, 9, 9}, {16, 8, 3, 3}, {1, 1}, {1, 1}},
    {"16 -> 16 3x3 stride 2", {4, 16, 9, 8}, {16, 16, 3, 3}, {2, 2}, {1, 1}},
    {"16 -> 32 1x1 stride 2", {4, 16, 8, 8}, {32, 16, 1, 1}, {2, 2}, {0, 0}},
};

// y, x.grad, w.grad, b.grad of one conv with a fixed output gradient, on oneDNN with a
// channels-last input or on the im2col path (NCHW).
std::vector<Tensor> conv_passes(const ClConv& c, DType dt, bool dnnl) {
  dc::set_enabled(dnnl);
  Tensor x = random_tensor(c.x, 30, dt).contiguous(dnnl ? kCL : MemoryFormat::Contiguous).detach().requires_grad_();
  Tensor w = random_tensor(c.w, 31, dt).requires_grad_();
  Tensor b = random_tensor({c.w[0]}, 32, dt).requires_grad_();
  Tensor y = conv2d(x, w, b, c.stride, c.pad);
  y.backward(random_tensor(y.shape(), 33, dt));
  return {y.detach(), x.grad(), w.grad(), b.grad()};
}
}  // namespace

TEST_CASE("conv2d on oneDNN takes channels-last images and matches the NCHW im2col path", "[channels_last][conv][dnnl]") {
  if (!dc::compiled()) {
    WARN("built without oneDNN: convolutions keep NCHW images");
    return;
  }
  const RestoreConvSettings restore;
  for (int threads : {2, 1}) {
    omp_set_num_threads(threads);
    for (const ClConv& c : kClConvs)
      for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
        INFO(c.name << ", " << dtype_name(dt) << ", threads " << threads);
        const int64_t before = dc::calls();
        const auto on = conv_passes(c, dt, true);
        CHECK(dc::calls() - before == 2);  // the forward, then both gradients in one call
        CHECK(on[0].suggest_memory_format() == kCL);
        const auto off = conv_passes(c, dt, false);
        CHECK(off[0].suggest_memory_format() == MemoryFormat::Contiguous);
        const char* what[] = {"y", "x grad", "w grad", "b grad"};
        for (size_t i = 0; i < on.size(); ++i) {
          INFO(what[i]);
          CHECK(on[i].dtype() == dt);
          const double scale = magnitude(off[i]);
          if (dt == DType::F32)  // the same f32 sums in two orders
            CHECK(max_diff(on[i], off[i]) < 256 * traits(dt).eps * (1 + scale));
          else  // each side rounds an f32 result once, plus the sums' order
            CHECK(max_diff(on[i], off[i]) <= 2 * traits(dt).eps * (1 + scale));
        }
      }
  }
  omp_set_num_threads(2);
  dc::set_enabled(true);
  const Tensor w = random_tensor({8, 8, 3, 3}, 35, DType::F32);
  // An NCHW input gives an NCHW result, as PyTorch's (oneDNN then runs on its blocked layout).
  CHECK(conv2d(random_tensor({4, 8, 6, 6}, 34, DType::F32), w).suggest_memory_format() == MemoryFormat::Contiguous);
  // A batch below the thread count stays on the im2col path, and so in NCHW.
  const Tensor y = conv2d(random_tensor({1, 8, 6, 6}, 34, DType::F32).contiguous(kCL), w);
  CHECK(y.suggest_memory_format() == MemoryFormat::Contiguous);
}

TEST_CASE("the CPU conv kernels given channels-last images without oneDNN run im2col through NCHW copies", "[channels_last][conv]") {
  const RestoreConvSettings restore;
  dc::set_enabled(false);
  const auto& k = kernels::registry();
  kernels::Conv2dGeometry g;
  g.N = 2, g.C = 8, g.H = 7, g.W = 6, g.O = 16, g.kH = 3, g.kW = 3, g.OH = 7, g.OW = 6, g.ph = 1, g.pw = 1;
  for (DType dt : {DType::F32, DType::BF16}) {
    INFO(dtype_name(dt));
    const Tensor x = random_tensor({g.N, g.C, g.H, g.W}, 40, dt), w = random_tensor({g.O, g.C, 3, 3}, 41, dt);
    const Tensor gy = random_tensor({g.N, g.O, g.OH, g.OW}, 42, dt);
    auto run = [&](MemoryFormat f) {
      auto image = [&](const Shape& s) { return empty(s, TensorOptions(dt).memory_format(f)); };
      Tensor y = image(gy.shape()), gx = image(x.shape()), gw = empty(w.shape(), dt), gb = empty({g.O}, dt);
      k.conv2d.get(Device::cpu(), dt)(y, x.contiguous(f), w, Tensor(), g);
      k.conv2d_backward.get(Device::cpu(), dt)(gx, gw, gb, x.contiguous(f), gy.contiguous(f), w, g);
      return std::vector<Tensor>{y, gx, gw, gb};
    };
    const auto cl = run(kCL), ref = run(MemoryFormat::Contiguous);
    CHECK(cl[0].suggest_memory_format() == kCL);
    for (size_t i = 0; i < cl.size(); ++i) CHECK(max_diff(cl[i], ref[i]) == 0.0);  // the same kernel on the same values
  }
}

TEST_CASE("the CPU prefers channels-last only where oneDNN runs a convolution", "[channels_last][conv]") {
  const RestoreConvSettings restore;
  omp_set_num_threads(2);
  const auto& table = kernels::registry().conv2d_channels_last;
  kernels::Conv2dGeometry g;
  g.N = 4, g.C = 16, g.H = 8, g.W = 8, g.O = 16, g.kH = 3, g.kW = 3, g.OH = 8, g.OW = 8, g.ph = 1, g.pw = 1;
  const auto prefers = [&](const kernels::Conv2dGeometry& geo, DType dt) { return table.get(Device::cpu(), dt)(geo); };
  CHECK_FALSE(prefers(g, DType::F64));  // never on oneDNN
  dc::set_enabled(true);
  CHECK(prefers(g, DType::F32) == dc::compiled());
  kernels::Conv2dGeometry lenet = g;  // 6 channels: NCHW (and oneDNN's blocked layout)
  lenet.O = 6;
  CHECK_FALSE(prefers(lenet, DType::F32));
  kernels::Conv2dGeometry grouped = g;
  grouped.groups = 2;
  CHECK_FALSE(prefers(grouped, DType::F32));
  kernels::Conv2dGeometry small_batch = g;
  small_batch.N = 1;
  CHECK_FALSE(prefers(small_batch, DType::F32));
  dc::set_enabled(false);
  CHECK_FALSE(prefers(g, DType::F32));
}

TEST_CASE("batch norm over rows of more channels than a conversion block matches the formula", "[channels_last][norm]") {
  // 300 channels a row: runs cross the 256-value blocks f16/bf16 are widened in, and f32 rows are
  // longer than a block.
  for (DType dt : {DType::F32, DType::BF16}) {
    INFO(dtype_name(dt));
    const Tensor x = random_tensor({40, 300}, 60, dt), w = random_tensor({300}, 61, DType::F32);
    const Tensor b = random_tensor({300}, 62, DType::F32);
    const Tensor y = batch_norm(x, Tensor(), Tensor(), cast(w, dt), cast(b, dt), true, 0.1, 1e-5);
    const Tensor xd = cast(x, DType::F64), mu = mean(xd, {0}, true), xm = sub(xd, mu);
    const Tensor ref = add(mul(mul(xm, rsqrt(add(mean(mul(xm, xm), {0}, true), 1e-5))), cast(w, DType::F64)), cast(b, DType::F64));
    CHECK(max_diff(y, ref) <= 16 * traits(dt).eps * (1 + magnitude(ref)));
  }
}

TEST_CASE("batch norm rows in tiles of 8 channels and a remainder, over many chunks: values and gradients", "[channels_last][norm]") {
  // 20 channels a row: two tiles of 8 summed in vectors and 4 one by one; 601 rows are three of the
  // row kernels' chunks of about 4096 values, the last 193 rows long (not a multiple of the four
  // rows the vector sums take at a time). The reference is the formula in f64 ops, its
  // gradients by autograd through mean, rsqrt and the rest (other kernels entirely).
  const int outer = omp_get_max_threads();
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    for (DType dt : {DType::F32, DType::BF16, DType::F64})
      for (bool relu : {false, true}) {
        INFO(dtype_name(dt) << (relu ? " batch_norm_relu" : " batch_norm") << ", threads " << threads);
        const Tensor x0 = random_tensor({601, 20}, 80, dt), gy = random_tensor({601, 20}, 81, dt);
        const Tensor w0 = random_tensor({20}, 82, DType::F64), b0 = random_tensor({20}, 83, DType::F64);
        const DType pt = dt == DType::F64 ? DType::F64 : DType::F32;
        Tensor x = x0.detach().requires_grad_(), w = cast(w0, pt).requires_grad_(), b = cast(b0, pt).requires_grad_();
        Tensor y = relu ? batch_norm_relu(x, Tensor(), Tensor(), w, b, true, 0.1, 1e-5)
                        : batch_norm(x, Tensor(), Tensor(), w, b, true, 0.1, 1e-5);
        y.backward(gy);
        Tensor xd = cast(x0, DType::F64).requires_grad_(), wd = w0.detach().requires_grad_(), bd = b0.detach().requires_grad_();
        Tensor xm = sub(xd, mean(xd, {0}, true));
        Tensor ref = add(mul(mul(xm, rsqrt(add(mean(mul(xm, xm), {0}, true), 1e-5))), wd), bd);
        if (relu) ref = minidl::relu(ref);
        ref.backward(cast(gy, DType::F64));
        const double eps = traits(dt).eps;
        CHECK(max_diff(y, ref) <= 16 * eps * (1 + magnitude(ref)));
        CHECK(max_diff(x.grad(), xd.grad()) <= 64 * eps * (1 + magnitude(xd.grad())));
        CHECK(max_diff(w.grad(), wd.grad()) <= 64 * eps * (1 + magnitude(wd.grad())));
        CHECK(max_diff(b.grad(), bd.grad()) <= 64 * eps * (1 + magnitude(bd.grad())));
      }
  }
  omp_set_num_threads(outer);
}

TEST_CASE("max pooling keeps channels-last images so and matches NCHW pooling", "[channels_last][pool]") {
  struct PoolCase {
    const char* name;
    Size2 kernel, stride, padding, dilation;
    bool ceil_mode;
  };
  const PoolCase cases[] = {
      {"2x2 stride 2", {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
      {"3x3 stride 2 pad 1", {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
      {"3x2 stride 1, dilation 2x1, ceil", {3, 2}, {1, 2}, {1, 0}, {2, 1}, true},
  };
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
    for (const PoolCase& c : cases) {
      INFO(c.name << ", " << dtype_name(dt));
      Tensor base = random_tensor({3, 16, 9, 7}, 70, dt);
      {  // ties (a repeated value) and NaN: the first maximum wins, a NaN takes over
        NoGradGuard ng;
        base = base.contiguous();
        base.narrow(2, 0, 2).fill_(0.5);
        base.narrow(3, 3, 1).narrow(2, 4, 1).fill_(std::nan(""));
      }
      auto run = [&](MemoryFormat f) {
        Tensor x = base.contiguous(f).detach().requires_grad_();
        MaxPoolResult r = max_pool2d_with_indices(x, c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode);
        r.values.backward(random_tensor(r.values.shape(), 71, dt).contiguous(f));
        return std::vector<Tensor>{r.values.detach(), r.indices, x.grad()};
      };
      const auto cl = run(kCL), ref = run(MemoryFormat::Contiguous);
      CHECK(cl[0].suggest_memory_format() == kCL);
      CHECK(cl[1].suggest_memory_format() == kCL);
      // Maxima and their positions are picked, not computed: equal, NaN where NaN. Gradients are
      // sums of the same values per input pixel in the same order.
      for (size_t i = 0; i < cl.size(); ++i) {
        const std::vector<double> a = cl[i].to_vector<double>(), b = ref[i].to_vector<double>();
        REQUIRE(a.size() == b.size());
        size_t differ = 0;
        for (size_t k = 0; k < a.size(); ++k) differ += !(a[k] == b[k] || (std::isnan(a[k]) && std::isnan(b[k])));
        CHECK(differ == 0);
      }
    }
}

TEST_CASE("max pooling on channels-last input: f64 gradient checks (first and second order)", "[channels_last][pool][grad]") {
  GradCase c{"max_pool2d channels-last 3x3 stride 2 pad 1", {{2, 3, 5, 4}}, [](const std::vector<Tensor>& in) {
               return max_pool2d(in[0].contiguous(kCL), {3, 3}, {2, 2}, {1, 1});
             }};
  CHECK(run_case(c) == "");
}
