// The CPU kernel sets (ops/cpu_isa.h): which one runs, and every set this CPU can run against the
// baseline set and against double-precision references. The rest of the suite runs on the active
// set; tests/CMakeLists.txt runs the kernel-heavy test programs again capped at lower sets.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "framework/cpu_features.h"
#include "framework/half.h"
#include "ops/cpu/conv_dnnl.h"
#include "ops/cpu/matmul_dnnl.h"
#include "ops/cpu_isa.h"
#include "ops/kernels.h"
#include "ops/ops.h"

using namespace minidl;
namespace K = minidl::kernels;

namespace {

// The compiled sets this CPU runs, lowest first.
std::vector<K::CpuIsa> runnable_sets() {
  std::vector<K::CpuIsa> out;
  for (K::CpuIsa isa : K::compiled_cpu_isas())
    if (isa <= K::best_cpu_isa()) out.push_back(isa);
  return out;
}

K::Registry tables_of(K::CpuIsa isa) {
  K::Registry r;
  K::register_cpu_kernels(r, isa);
  return r;
}

std::vector<float> random_floats(size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// f32 values that exercise every branch of the f16/bf16 narrowing: subnormals of both formats,
// rounding ties, overflow, infinities, NaNs of both signs, and values around 1.
std::vector<float> conversion_inputs() {
  std::vector<float> v = random_floats(700, 11);
  const float specials[] = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65520.0f, 1e5f, -1e5f, 6e-8f, 3e-5f, -6.1e-5f,
                            1e-40f, -1e-40f, 1.17549435e-38f, 3.4028235e38f, 1.0f + 0x1p-8f, 1.0f + 0x1p-11f,
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN()};
  for (float s : specials) v.push_back(s);
  for (int i = 0; i < 64; ++i) v.push_back(std::ldexp(1.0f + i / 64.0f, -140 + i));  // f32 subnormals up to normals
  return v;
}

std::vector<uint16_t> bits16(const Tensor& t) {
  std::vector<uint16_t> out(static_cast<size_t>(t.numel()));
  std::memcpy(out.data(), t.raw_data(), out.size() * 2);
  return out;
}

std::vector<uint32_t> bits32(const Tensor& t) {
  std::vector<uint32_t> out(static_cast<size_t>(t.numel()));
  std::memcpy(out.data(), t.raw_data(), out.size() * 4);
  return out;
}

}  // namespace

TEST_CASE("the active CPU kernel set is compiled, runs on this CPU and honours MINIDL_MAX_CPU_ISA", "[cpu_isa]") {
  const std::vector<K::CpuIsa> compiled = K::compiled_cpu_isas();
  const K::CpuIsa active = K::active_cpu_isa();
  CHECK(std::find(compiled.begin(), compiled.end(), active) != compiled.end());
  CHECK(active <= K::best_cpu_isa());
  const std::string description = K::cpu_kernels_description();
  CHECK(description.rfind(K::cpu_isa_name(active), 0) == 0);
  if (!cpu_features().model.empty()) CHECK(description.find(cpu_features().model) != std::string::npos);
  if (K::cpu_isa_dispatch()) {
    CHECK(compiled.size() == 3);
    const char* env = std::getenv("MINIDL_MAX_CPU_ISA");
    std::string cap = env ? env : "";
    std::transform(cap.begin(), cap.end(), cap.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    K::CpuIsa expected = K::best_cpu_isa();
    for (K::CpuIsa isa : compiled)
      if (cap == K::cpu_isa_name(isa)) expected = std::min(expected, isa);
    CHECK(active == expected);
  }
  // The levels nest: a CPU with x86-64-v4 has v3.
  if (cpu_features().x86_64_v4) CHECK(cpu_features().x86_64_v3);
  if (cpu_features().avx512_bf16) CHECK(cpu_features().x86_64_v4);
}

TEST_CASE("a kernel set this build lacks or this CPU cannot run is refused with a clear error", "[cpu_isa]") {
  int refused = 0;
  for (K::CpuIsa isa : {K::CpuIsa::Baseline, K::CpuIsa::Avx2, K::CpuIsa::Avx512}) {
    const std::vector<K::CpuIsa> compiled = K::compiled_cpu_isas();
    const bool is_compiled = std::find(compiled.begin(), compiled.end(), isa) != compiled.end();
    if (is_compiled && isa <= K::best_cpu_isa()) continue;
    K::Registry r;
    const std::string why = is_compiled ? "this CPU cannot run the " : "this build holds no ";
    CHECK_THROWS_WITH(K::register_cpu_kernels(r, isa), Catch::Contains("register_cpu_kernels") && Catch::Contains(why + K::cpu_isa_name(isa)));
    ++refused;
  }
  // Only a run-time-choice build on an AVX-512 CPU runs every set.
  if (!(K::cpu_isa_dispatch() && K::best_cpu_isa() == K::CpuIsa::Avx512)) CHECK(refused > 0);
}

TEST_CASE("every CPU kernel set fills the same tables", "[cpu_isa]") {
  const std::vector<K::CpuIsa> sets = runnable_sets();
  const K::Registry base = tables_of(sets.front());
  for (K::CpuIsa isa : sets) {
    const K::Registry r = tables_of(isa);
    std::vector<bool> a, b;
    K::for_each_table(base, [&](const char*, const auto& t) {
      for (int d = 0; d < kNumDTypes; ++d) a.push_back(t.has(DeviceType::CPU, static_cast<DType>(d)));
    });
    K::for_each_table(r, [&](const char*, const auto& t) {
      for (int d = 0; d < kNumDTypes; ++d) b.push_back(t.has(DeviceType::CPU, static_cast<DType>(d)));
    });
    INFO("set " << K::cpu_isa_name(isa));
    CHECK(a == b);
    CHECK(std::count(b.begin(), b.end(), true) > 50);
  }
}

TEST_CASE("every CPU kernel set converts f16/bf16 bit for bit like the scalar conversion, at every tail length", "[cpu_isa]") {
  const std::vector<float> values = conversion_inputs();
  for (K::CpuIsa isa : runnable_sets()) {
    const K::Registry r = tables_of(isa);
    INFO("set " << K::cpu_isa_name(isa));
    for (DType low : {DType::F16, DType::BF16}) {
      INFO("dtype " << dtype_name(low));
      // Lengths around the vector widths (8, 16, 32) and the kernels' 256-element blocks.
      const std::vector<int64_t> lengths = {1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 255, 256, 257, static_cast<int64_t>(values.size())};
      for (int64_t n : lengths) {
        INFO("n " << n);
        const std::vector<float> head(values.end() - n, values.end());  // the specials are at the end
        // The reference: Eigen's scalar conversions (round to nearest even, subnormals kept, NaN
        // quieted with its sign), element by element.
        std::vector<uint16_t> want(static_cast<size_t>(n));
        std::vector<uint32_t> want_wide(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          float back;
          if (low == DType::F16) {
            const half h(head[i]);
            std::memcpy(&want[i], &h, 2);
            back = static_cast<float>(h);
          } else {
            const bfloat16 h(head[i]);
            std::memcpy(&want[i], &h, 2);
            back = static_cast<float>(h);
          }
          std::memcpy(&want_wide[i], &back, 4);
        }
        Tensor narrow = empty({n}, low);
        r.copy.get(Device::cpu(), low)(narrow, from_vector(head));
        CHECK(bits16(narrow) == want);
        Tensor wide = empty({n}, DType::F32);
        r.copy.get(Device::cpu(), DType::F32)(wide, narrow);
        CHECK(bits32(wide) == want_wide);
      }
    }
  }
}

TEST_CASE("every CPU kernel set multiplies matrices within the f32 rounding bound of a double reference", "[cpu_isa]") {
  const int64_t m = 37, k = 129, n = 45;  // not multiples of any register block
  const std::vector<float> av = random_floats(m * k, 3), bv = random_floats(k * n, 4);
  const Tensor a = from_vector(av, {m, k}), b = from_vector(bv, {k, n});
  const double eps = std::numeric_limits<float>::epsilon();
  for (K::CpuIsa isa : runnable_sets()) {
    const K::Registry r = tables_of(isa);
    INFO("set " << K::cpu_isa_name(isa));
    for (bool transposed_b : {false, true}) {
      const Tensor bb = transposed_b ? from_vector(bv, {n, k}).t() : b;
      const std::vector<float> bt = bb.contiguous().to_vector<float>();
      Tensor c = zeros({m, n});
      r.gemm.get(Device::cpu(), DType::F32)(c, a, bb, 1.0, 0.0);
      const std::vector<float> cv = c.to_vector<float>();
      int bad = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double ref = 0, mag = 0;
          for (int64_t p = 0; p < k; ++p) {
            ref += static_cast<double>(av[i * k + p]) * bt[p * n + j];
            mag += std::fabs(static_cast<double>(av[i * k + p]) * bt[p * n + j]);
          }
          // Any summation order: |error| <= k * eps * sum |a_ip b_pj| (first-order bound).
          if (std::fabs(cv[i * n + j] - ref) > k * eps * mag) ++bad;
        }
      CHECK(bad == 0);
    }
  }
}

// The f16/bf16 GEMM widens its operands while Eigen packs them (ops/cpu/widening_gemm.h): the packed
// panels, the kernel and so the sums are those of the f32 GEMM on the widened operands, bit for bit.
// Shapes: register-block remainders; a depth over Eigen's k-block and rows over its m-block (several
// packed panels of each operand); a product big enough to be split across threads; a 10-column
// result (computed column-major); a result narrowed with streaming stores (slabs from 32 KiB) whose
// rows start off 16-byte boundaries and end in partial stores (131 columns of 2 bytes); every storage
// order of both operands; an accumulating call (beta 1).
TEST_CASE("every CPU kernel set multiplies f16/bf16 matrices bit for bit as the f32 GEMM multiplies their widening", "[cpu_isa]") {
  struct Shape {
    int64_t m, k, n;
  };
  const Shape shapes[] = {{37, 129, 45}, {13, 1100, 29}, {700, 300, 96}, {300, 64, 131}, {257, 64, 10}, {1, 7, 1}};
  unsigned seed = 40;
  // The widening path and Eigen's f32 GEMM themselves: bf16 products on oneDNN's bf16 matmul
  // (AVX512_BF16 CPUs) and f32 ones on its f32 matmul (AVX-512) sum in other orders and are checked
  // against them in test_low_precision and test_ops_reference.
  struct OnEigen {
    bool f32_was = kernels::cpu::dnnl_matmul::set_f32(false);
    OnEigen() { kernels::cpu::dnnl_conv::set_native_bf16(false); }
    ~OnEigen() { kernels::cpu::dnnl_conv::set_native_bf16(true), kernels::cpu::dnnl_matmul::set_f32(f32_was); }
  } on_eigen;
  for (K::CpuIsa isa : runnable_sets()) {
    const K::Registry r = tables_of(isa);
    for (DType dt : {DType::F16, DType::BF16}) {
      for (const Shape& s : shapes) {
        for (int orders = 0; orders < 4; ++orders) {
          const bool a_cols = orders & 1, b_cols = orders & 2;
          INFO("set " << K::cpu_isa_name(isa) << " " << dtype_name(dt) << " " << s.m << "x" << s.k << "x" << s.n
                      << " a " << (a_cols ? "column" : "row") << "-major, b " << (b_cols ? "column" : "row") << "-major");
          const Tensor a = a_cols ? from_vector(random_floats(s.m * s.k, seed++), {s.k, s.m}).to(dt).t()
                                  : from_vector(random_floats(s.m * s.k, seed++), {s.m, s.k}).to(dt);
          const Tensor b = b_cols ? from_vector(random_floats(s.k * s.n, seed++), {s.n, s.k}).to(dt).t()
                                  : from_vector(random_floats(s.k * s.n, seed++), {s.k, s.n}).to(dt);
          const Tensor c0 = from_vector(random_floats(s.m * s.n, seed++), {s.m, s.n}).to(dt);
          for (double beta : {0.0, 1.0}) {
            Tensor low = c0.clone(), wide = c0.to(DType::F32);
            r.gemm.get(Device::cpu(), dt)(low, a, b, 0.5, beta);
            r.gemm.get(Device::cpu(), DType::F32)(wide, a.to(DType::F32), b.to(DType::F32), 0.5, beta);
            CHECK(bits16(low) == bits16(wide.to(dt)));
          }
        }
      }
    }
  }
}

TEST_CASE("every CPU kernel set's exp, tanh, sigmoid and gelu agree with double references", "[cpu_isa]") {
  std::vector<float> xv = random_floats(1000, 5, 4.0f);
  for (int64_t len : {int64_t{1000}, int64_t{13}}) {
    const std::vector<float> head(xv.begin(), xv.begin() + len);
    const Tensor x = from_vector(head);
    struct Case {
      K::UnaryOp op;
      double (*ref)(double);
      double tol_eps;  // relative tolerance in f32 epsilons (vectorized approximations, not libm)
    };
    const Case cases[] = {
        {K::UnaryOp::Exp, [](double v) { return std::exp(v); }, 8},
        {K::UnaryOp::Tanh, [](double v) { return std::tanh(v); }, 8},
        {K::UnaryOp::Sigmoid, [](double v) { return 1 / (1 + std::exp(-v)); }, 8},
        {K::UnaryOp::Gelu, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, 16},
        // The tanh approximation, whose 1 + tanh(z) cancels for negative inputs unless computed as a
        // sigmoid (1e-3 relative error at -4 in f32 before).
        {K::UnaryOp::GeluTanh, [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }, 16},
    };
    const double eps = std::numeric_limits<float>::epsilon();
    for (K::CpuIsa isa : runnable_sets()) {
      const K::Registry r = tables_of(isa);
      for (const Case& c : cases) {
        Tensor out = empty({len});
        r.unary.get(Device::cpu(), DType::F32)(c.op, out, x, 0.0, 0.0);
        const std::vector<float> ov = out.to_vector<float>();
        int bad = 0;
        for (int64_t i = 0; i < len; ++i) {
          const double ref = c.ref(head[i]);
          if (std::fabs(ov[i] - ref) > c.tol_eps * eps * std::max(std::fabs(ref), 1e-3)) ++bad;
        }
        INFO("set " << K::cpu_isa_name(isa) << " op " << static_cast<int>(c.op) << " len " << len);
        CHECK(bad == 0);
      }
      // gelu(tanh)'s gradient (g = 1) against d/dv 0.5 v (1 + tanh z) in f64.
      Tensor grad = empty({len});
      r.binary.get(Device::cpu(), DType::F32)(K::BinaryOp::GeluTanhBackward, grad, ones({len}), x, 0.0, 0.0);
      const std::vector<float> gv = grad.to_vector<float>();
      int bad = 0;
      for (int64_t i = 0; i < len; ++i) {
        const double v = head[i], k = std::sqrt(2 / M_PI), t = std::tanh(k * (v + 0.044715 * v * v * v));
        const double ref = 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * k * (1 + 3 * 0.044715 * v * v);
        // Scaled by the first term too: the two terms cancel where the gradient crosses 0 (v ~ -0.75).
        if (std::fabs(gv[i] - ref) > 32 * eps * std::max({std::fabs(ref), 0.5 * (1 + t), 1e-3})) ++bad;
      }
      INFO("set " << K::cpu_isa_name(isa) << " gelu tanh backward, len " << len);
      CHECK(bad == 0);
    }
  }
}

namespace {
// A copy of v whose first element lies `byte_offset` bytes past a 64-byte boundary (inside a
// larger buffer): kernels must not depend on where their operands and results lie.
Tensor placed(const Tensor& v, int64_t byte_offset) {
  const int64_t elem = static_cast<int64_t>(element_size(v.dtype()));
  Tensor buf = empty({v.numel() + 64 / elem}, v.dtype());
  const auto addr = static_cast<int64_t>(reinterpret_cast<uintptr_t>(buf.raw_data()) % 64);
  const int64_t shift = ((byte_offset - addr) % 64 + 64) % 64 / elem;
  Tensor out = buf.narrow(0, shift, v.numel()).view(v.shape());
  REQUIRE(static_cast<int64_t>(reinterpret_cast<uintptr_t>(out.raw_data()) % 64) == byte_offset);
  out.copy_(v);
  return out;
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  const auto* p = static_cast<const uint8_t*>(c.raw_data());
  return std::vector<uint8_t>(p, p + c.numel() * element_size(c.dtype()));
}
}  // namespace

// Eigen evaluates an array expression over memory of unknown alignment partly coefficient by
// coefficient (up to the first aligned packet, and the tail), and the scalar and packet forms of
// exp, log and tanh differ by an ulp on some inputs; its sums start their packets at the first
// aligned element. Kernels built on that gave results that depended on the addresses of their
// buffers, and a training run's bits on the lengths of its argument strings (test_train_program).
// Here every kernel with transcendental or reduction parts, and the rest of an MLP's step (GEMM,
// column sums), runs with its operands and results at each offset within a 64-byte line, in every
// kernel set: the bits must be those at offset 0.
TEST_CASE("every CPU kernel set gives the same bits wherever its operands and results lie in memory", "[cpu_isa]") {
  for (K::CpuIsa isa : runnable_sets()) {
    const K::Registry r = tables_of(isa);
    const auto cpu = Device::cpu();
    // Element-wise f32 ops with Eigen packet math: 1000 values (whole packets and a tail).
    const Tensor x = from_vector(random_floats(1000, 21, 3.0f)), g = from_vector(random_floats(1000, 22));
    const Tensor positive = add(abs(x), 1e-3);
    struct Unary {
      K::UnaryOp op;
      const char* name;
      double p0, p1;
    };
    for (const Unary& u : {Unary{K::UnaryOp::Exp, "exp", 0, 0}, Unary{K::UnaryOp::Log, "log", 0, 0},
                           Unary{K::UnaryOp::Tanh, "tanh", 0, 0}, Unary{K::UnaryOp::Sigmoid, "sigmoid", 0, 0},
                           Unary{K::UnaryOp::Gelu, "gelu", 0, 0}, Unary{K::UnaryOp::GeluTanh, "gelu tanh", 0, 0},
                           Unary{K::UnaryOp::Softplus, "softplus", 1.0, 20.0}}) {
      const Tensor in = u.op == K::UnaryOp::Log ? positive : x;
      std::vector<uint8_t> first;
      for (int64_t off = 0; off < 64; off += 4) {
        INFO("set " << K::cpu_isa_name(isa) << " " << u.name << " at byte offset " << off);
        Tensor out = placed(zeros({in.numel()}), (off * 5) % 64);  // results at another offset than the input
        r.unary.get(cpu, DType::F32)(u.op, out, placed(in, off), u.p0, u.p1);
        if (off == 0) first = bytes_of(out);
        else CHECK(bytes_of(out) == first);
      }
    }
    for (const auto& [op, name] : {std::pair{K::BinaryOp::GeluBackward, "gelu backward"},
                                   std::pair{K::BinaryOp::GeluTanhBackward, "gelu tanh backward"},
                                   std::pair{K::BinaryOp::SoftplusBackward, "softplus backward"}}) {
      std::vector<uint8_t> first;
      for (int64_t off = 0; off < 64; off += 4) {
        INFO("set " << K::cpu_isa_name(isa) << " " << name << " at byte offset " << off);
        Tensor out = placed(zeros({x.numel()}), (off * 7) % 64);
        r.binary.get(cpu, DType::F32)(op, out, placed(g, (off * 3) % 64), placed(x, off), 20.0, 1.0);
        if (off == 0) first = bytes_of(out);
        else CHECK(bytes_of(out) == first);
      }
    }
    // The rest of an MLP's training step: a linear layer's product (x w^T, split across threads)
    // and the bias gradient's column sums.
    {
      const Tensor a = from_vector(random_floats(50 * 300, 25), {50, 300}), w = from_vector(random_floats(256 * 300, 26), {256, 300});
      std::vector<uint8_t> first_c, first_s;
      for (int64_t off = 0; off < 64; off += 4) {
        INFO("set " << K::cpu_isa_name(isa) << " gemm and column sums at byte offset " << off);
        Tensor c = placed(zeros({50, 256}), (off * 3) % 64);
        r.gemm.get(cpu, DType::F32)(c, placed(a, off), placed(w, (off * 5) % 64).t(), 1.0, 0.0);
        Tensor sums = placed(zeros({256}), (off * 7) % 64);
        r.reduce.get(cpu, DType::F32)(K::ReduceOp::Sum, sums, Tensor(), placed(c, off), {0});
        if (off == 0) {
          first_c = bytes_of(c);
          first_s = bytes_of(sums);
        } else {
          CHECK(bytes_of(c) == first_c);
          CHECK(bytes_of(sums) == first_s);
        }
      }
    }
    // The softmax family and the fused cross-entropy, f32 and f64: a 10-class head (short rows)
    // and rows longer than the kernels' short-row loops.
    for (DType dt : {DType::F32, DType::F64}) {
      const int64_t elem = static_cast<int64_t>(element_size(dt));
      for (const auto& [rows, n] : {std::pair<int64_t, int64_t>{50, 10}, std::pair<int64_t, int64_t>{7, 100}}) {
        const Tensor logits = from_vector(random_floats(rows * n, 23, 4.0f), {rows, n}).to(dt);
        const Tensor grad = from_vector(random_floats(rows * n, 24), {rows, n}).to(dt);
        std::vector<int64_t> tv(static_cast<size_t>(rows));
        for (int64_t i = 0; i < rows; ++i) tv[i] = (i * 7) % n;
        const Tensor target = from_vector(tv);
        const Tensor scale_g = from_vector(std::vector<double>{1.0}).to(dt);
        std::vector<std::vector<uint8_t>> first;
        for (int64_t off = 0; off < 64; off += elem) {
          INFO("set " << K::cpu_isa_name(isa) << " " << dtype_name(dt) << " [" << rows << ", " << n << "] at byte offset " << off);
          std::vector<std::vector<uint8_t>> got;
          for (bool log : {false, true}) {
            Tensor y = placed(zeros({rows, n}, dt), (off * 3) % 64);
            r.softmax.get(cpu, dt)(y, placed(logits, off), log);
            Tensor gi = placed(zeros({rows, n}, dt), (off * 5) % 64);
            r.softmax_backward.get(cpu, dt)(gi, placed(grad, (off * 7) % 64), placed(y, off), log);
            got.push_back(bytes_of(y));
            got.push_back(bytes_of(gi));
          }
          Tensor loss = placed(zeros({rows}, dt), (off * 3) % 64), stats = placed(zeros({rows, 2}, dt), off);
          r.cross_entropy.get(cpu, dt)(loss, stats, placed(logits, (off * 5) % 64), target, -100);
          Tensor gx = placed(zeros({rows, n}, dt), off);
          r.cross_entropy_backward.get(cpu, dt)(gx, placed(logits, (off * 3) % 64), placed(stats, (off * 7) % 64), target,
                                                scale_g, 1.0 / rows, -100);
          got.push_back(bytes_of(loss));
          got.push_back(bytes_of(stats));
          got.push_back(bytes_of(gx));
          if (off == 0) first = got;
          else
            for (size_t k = 0; k < got.size(); ++k) {
              INFO("result " << k << " (softmax, its backward, log_softmax, its backward, loss, its row statistics, cross-entropy backward)");
              CHECK(got[k] == first[k]);
            }
        }
      }
    }
  }
}
