// minidl-bench-ops: throughput of minidl's CPU kernels, each next to a reference measured in the
// same run: OpenBLAS cblas_sgemm (same shapes, same transposes) for matrix products, a 2-thread
// memcpy moving the same number of bytes for element-wise work. Repetitions of all benchmarks are
// randomly interleaved (the machine is shared and noisy), and the run ends with a summary table of
// median values and ratios minidl / baseline. See bench/README.md for results and decisions.
//
//   scripts/bench.sh                                     # installs, builds, runs with OMP_NUM_THREADS=2
//   build-bench/bench/minidl-bench-ops --benchmark_filter=mm/   # any Google Benchmark flag works
//   MINIDL_BENCH_REPS=9 build-bench/bench/minidl-bench-ops      # repetitions (default 5)
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <omp.h>
#include <time.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "eigen_blas.h"
#include "minidl.h"
#include "ops/cpu/loops.h"
#include "ops/kernels.h"

extern "C" int openblas_get_num_threads(void);
extern "C" char* openblas_get_config(void);

namespace {
using namespace minidl;
namespace K = minidl::kernels;

constexpr int64_t kElems = int64_t{1} << 24;  // 16M elements: 64 MB of f32, twice the L3
const int64_t kSquare[] = {256, 512, 1024, 2048};

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
double wall_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

// Runs body once per iteration and sets the rate counter `metric` (units per second, body doing
// `units_per_iter` each time) plus "cpu/wall": process CPU seconds over wall seconds, i.e. how many
// threads were busy (or spinning) on average, which shows whether a kernel really ran on 2 cores.
template <class F>
void timed_loop(benchmark::State& state, const char* metric, double units_per_iter, F&& body) {
  const double c0 = process_cpu_seconds(), w0 = wall_seconds();
  for (auto _ : state) body();
  const double c1 = process_cpu_seconds(), w1 = wall_seconds();
  state.counters[metric] = benchmark::Counter(units_per_iter, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["cpu/wall"] = (c1 - c0) / std::max(1e-9, w1 - w0);
}

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::vector<float> v(n);
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  for (auto& x : v) x = d(rng);
  return v;
}

// ---------------------------------------------------------------- matrix products

// c[m x n] = op(a) @ op(b); a stored [k, m] when ta (a transposed view), b stored [n, k] when tb.
struct GemmShape {
  const char* label;  // the summary's row label
  const char* key;    // the benchmark-name part
  int64_t m, k, n;
  bool ta, tb;
  double flops() const { return 2.0 * m * k * n; }
};

// A rows x cols operand; `transposed` makes it the transposed view of a contiguous [cols, rows].
Tensor operand(int64_t rows, int64_t cols, bool transposed, DType dt) {
  Tensor t = transposed ? randn({cols, rows}).t() : randn({rows, cols});
  return dt == DType::F32 ? t : cast(t, dt);
}

void bm_minidl_gemm(benchmark::State& state, GemmShape s, DType dt) {
  Tensor a = operand(s.m, s.k, s.ta, dt), b = operand(s.k, s.n, s.tb, dt);
  timed_loop(state, "GFLOP/s", s.flops() * 1e-9, [&] {
    Tensor c = mm(a, b);
    benchmark::DoNotOptimize(c.raw_data());
  });
}

void bm_openblas_gemm(benchmark::State& state, GemmShape s) {
  auto a = random_floats(s.m * s.k, 1), b = random_floats(s.k * s.n, 2);
  std::vector<float> c(s.m * s.n);
  const int lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
  timed_loop(state, "GFLOP/s", s.flops() * 1e-9, [&] {
    cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f,
                a.data(), lda, b.data(), ldb, 0.0f, c.data(), s.n);
    benchmark::DoNotOptimize(c.data());
  });
}

void bm_eigen_blas_gemm(benchmark::State& state, GemmShape s) {
  auto a = random_floats(s.m * s.k, 1), b = random_floats(s.k * s.n, 2);
  std::vector<float> c(s.m * s.n);
  timed_loop(state, "GFLOP/s", s.flops() * 1e-9, [&] {
    minidl_bench::eigen_blas_gemm(a.data(), s.ta, b.data(), s.tb, c.data(), s.m, s.n, s.k);
    benchmark::DoNotOptimize(c.data());
  });
}

// The GEMMs of one training step of the MLP 784-256-256-10 at batch 128, as ops/linear.cpp issues
// them: forward x @ w^T (w stored [out, in]), input gradient g @ w, weight gradient x^T @ g (the
// gradient of the transposed view w^T). fc1 needs no input gradient.
const std::vector<GemmShape>& mlp_shapes() {
  static const std::vector<GemmShape> v = {
      {"fc1 fwd  x[128x784] w^T", "fc1_fwd", 128, 784, 256, false, true},
      {"fc1 dW   x^T[784x128] g", "fc1_dw", 784, 128, 256, true, false},
      {"fc2 fwd  x[128x256] w^T", "fc2_fwd", 128, 256, 256, false, true},
      {"fc2 dX   g[128x256] w", "fc2_dx", 128, 256, 256, false, false},
      {"fc2 dW   x^T[256x128] g", "fc2_dw", 256, 128, 256, true, false},
      {"fc3 fwd  x[128x256] w^T", "fc3_fwd", 128, 256, 10, false, true},
      {"fc3 dX   g[128x10] w", "fc3_dx", 128, 10, 256, false, false},
      {"fc3 dW   x^T[256x128] g", "fc3_dw", 256, 128, 10, true, false},
  };
  return v;
}
// Not in the step as linear.cpp writes it, but the other natural form of fc1's weight gradient.
const GemmShape kFc1DwAlt{"fc1 dW'  g^T[256x128] x", "fc1_dw_gtx", 256, 128, 784, true, false};

// ---------------------------------------------------------------- element-wise

// A multi-threaded memcpy of bytes/2, so that it moves `bytes` (read + written) like the op it stands by.
void bm_memcpy(benchmark::State& state, int64_t bytes_moved) {
  const size_t half = static_cast<size_t>(bytes_moved / 2);
  std::unique_ptr<char[]> src(new char[half]), dst(new char[half]);
  std::memset(src.get(), 1, half);
  std::memset(dst.get(), 0, half);
  // Split like minidl's element-wise kernels (the same pool and chunking), so that the ratio
  // compares memory work, not threading.
  const int nt = K::cpu::max_threads();
  const size_t chunks = static_cast<size_t>(4 * nt), chunk = (half / chunks + 63) / 64 * 64;
  timed_loop(state, "GB/s", bytes_moved * 1e-9, [&] {
    K::cpu::parallel_chunks(static_cast<int64_t>(chunks), [&](int64_t c) {
      const size_t b = std::min(half, c * chunk), e = c + 1 == static_cast<int64_t>(chunks) ? half : std::min(half, b + chunk);
      std::memcpy(dst.get() + b, src.get() + b, e - b);
    });
    benchmark::DoNotOptimize(dst.get());
  });
}

struct Elementwise {
  const char* label;
  const char* key;
  int64_t bytes;                                                 // moved per call (read + written)
  std::function<Tensor(const Tensor& a, const Tensor& b)> op;    // the public op (allocates its output)
  std::function<void(const Tensor& out, const Tensor& a, const Tensor& b)> kernel;  // raw kernel, preallocated
  DType in, out;
  Shape out_shape;
};

// A unary f32 op next to its raw kernel (8 bytes moved per element).
Elementwise unary_f32(const char* name, const char* key, Tensor (*op)(const Tensor&), K::UnaryOp kop) {
  return {name, key, 8 * kElems, [op](const Tensor& a, const Tensor&) { return op(a); },
          [kop](const Tensor& o, const Tensor& a, const Tensor&) {
            K::registry().unary.get(Device::cpu(), DType::F32)(kop, o, a, 0.0, 0.0);
          },
          DType::F32, DType::F32, {kElems}};
}

const std::vector<Elementwise>& elementwise() {
  const Device cpu = Device::cpu();
  static const std::vector<Elementwise> v = {
      {"add f32", "add_f32", 12 * kElems, [](const Tensor& a, const Tensor& b) { return add(a, b); },
       [cpu](const Tensor& o, const Tensor& a, const Tensor& b) {
         K::registry().binary.get(cpu, DType::F32)(K::BinaryOp::Add, o, a, b, 0.0, 1.0);
       },
       DType::F32, DType::F32, {kElems}},
      {"mul f32", "mul_f32", 12 * kElems, [](const Tensor& a, const Tensor& b) { return mul(a, b); },
       [cpu](const Tensor& o, const Tensor& a, const Tensor& b) {
         K::registry().binary.get(cpu, DType::F32)(K::BinaryOp::Mul, o, a, b, 0.0, 1.0);
       },
       DType::F32, DType::F32, {kElems}},
      {"relu f32", "relu_f32", 8 * kElems, [](const Tensor& a, const Tensor&) { return relu(a); },
       [cpu](const Tensor& o, const Tensor& a, const Tensor&) {
         K::registry().unary.get(cpu, DType::F32)(K::UnaryOp::Relu, o, a, 0.0, 0.0);
       },
       DType::F32, DType::F32, {kElems}},
      unary_f32("exp f32", "exp_f32", [](const Tensor& a) { return exp(a); }, K::UnaryOp::Exp),
      unary_f32("tanh f32", "tanh_f32", [](const Tensor& a) { return tanh(a); }, K::UnaryOp::Tanh),
      unary_f32("sigmoid f32", "sigmoid_f32", [](const Tensor& a) { return sigmoid(a); }, K::UnaryOp::Sigmoid),
      unary_f32("gelu f32", "gelu_f32", [](const Tensor& a) { return gelu(a); }, K::UnaryOp::Gelu),
      {"cast f32->bf16", "cast_f32_bf16", 6 * kElems, [](const Tensor& a, const Tensor&) { return cast(a, DType::BF16); },
       [cpu](const Tensor& o, const Tensor& a, const Tensor&) { K::registry().copy.get(cpu, DType::BF16)(o, a); },
       DType::F32, DType::BF16, {kElems}},
      {"cast f32->f16", "cast_f32_f16", 6 * kElems, [](const Tensor& a, const Tensor&) { return cast(a, DType::F16); },
       [cpu](const Tensor& o, const Tensor& a, const Tensor&) { K::registry().copy.get(cpu, DType::F16)(o, a); },
       DType::F32, DType::F16, {kElems}},
      {"cast bf16->f32", "cast_bf16_f32", 6 * kElems, [](const Tensor& a, const Tensor&) { return cast(a, DType::F32); },
       [cpu](const Tensor& o, const Tensor& a, const Tensor&) { K::registry().copy.get(cpu, DType::F32)(o, a); },
       DType::BF16, DType::F32, {kElems}},
      {"add bf16", "add_bf16", 6 * kElems, [](const Tensor& a, const Tensor& b) { return add(a, b); },
       [cpu](const Tensor& o, const Tensor& a, const Tensor& b) {
         K::registry().binary.get(cpu, DType::BF16)(K::BinaryOp::Add, o, a, b, 0.0, 1.0);
       },
       DType::BF16, DType::BF16, {kElems}},
      {"sum f32 (all)", "sum_f32", 4 * kElems, [](const Tensor& a, const Tensor&) { return sum(a); },
       [cpu](const Tensor& o, const Tensor& a, const Tensor&) {
         K::registry().reduce.get(cpu, DType::F32)(K::ReduceOp::Sum, o, Tensor(), a, {0});
       },
       DType::F32, DType::F32, {1}},
  };
  return v;
}

Tensor ew_input(DType dt) {
  Tensor t = randn({kElems});
  return dt == DType::F32 ? t : cast(t, dt);
}

void bm_ew_op(benchmark::State& state, const Elementwise* e) {
  Tensor a = ew_input(e->in), b = ew_input(e->in);
  timed_loop(state, "GB/s", e->bytes * 1e-9, [&] {
    Tensor o = e->op(a, b);
    benchmark::DoNotOptimize(o.raw_data());
  });
}

void bm_ew_kernel(benchmark::State& state, const Elementwise* e) {
  Tensor a = ew_input(e->in), b = ew_input(e->in);
  Tensor o = zeros(e->out_shape, e->out);
  timed_loop(state, "GB/s", e->bytes * 1e-9, [&] {
    e->kernel(o, a, b);
    benchmark::DoNotOptimize(o.raw_data());
  });
}

// ---------------------------------------------------------------- parallel grain, conversions

// The raw add kernel around loops.h's grain (kParallelGrain elements): on the calling thread only
// (t1) or split across the OpenMP threads (t2), cache-resident sizes included: is the split worth it?
const int64_t kGrainSizes[] = {8192, 32768, 131072, 524288, 4194304};

void bm_grain(benchmark::State& state, int64_t n, int threads) {
  Tensor a = randn({n}), b = randn({n}), o = zeros({n});
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);  // the kernel splits only when omp_get_max_threads() > 1
  auto fn = K::registry().binary.get(Device::cpu(), DType::F32);
  timed_loop(state, "GB/s", 12.0 * n * 1e-9, [&] {
    fn(K::BinaryOp::Add, o, a, b, 0.0, 1.0);
    benchmark::DoNotOptimize(o.raw_data());
  });
  omp_set_num_threads(saved);
}

// The bulk f16/bf16 conversions (ops/cpu/convert.h) through the CPU copy kernel of the active
// kernel set, on cache-resident rows (256 = the kernels' widening block).
struct Conversion {
  const char* label;
  const char* key;
  DType from, to;
};
const std::vector<Conversion>& conversions() {
  static const std::vector<Conversion> v = {
      {"f32 -> bf16", "float_to_bf16", DType::F32, DType::BF16},
      {"bf16 -> f32", "bf16_to_float", DType::BF16, DType::F32},
      {"f32 -> f16", "float_to_half", DType::F32, DType::F16},
      {"f16 -> f32", "half_to_float", DType::F16, DType::F32},
  };
  return v;
}

void bm_cvt(benchmark::State& state, const Conversion* c, int64_t n) {
  Tensor src = cast(randn({n}), c->from);  // valid input of the source type
  Tensor dst = empty({n}, c->to);
  auto copy = K::registry().copy.get(Device::cpu(), c->to);
  timed_loop(state, "elem/ns", n * 1e-9, [&] {
    copy(dst, src);
    benchmark::DoNotOptimize(dst.raw_data());
  });
}

// ---------------------------------------------------------------- summary

struct Result {
  double metric = 0;   // GFLOP/s or GB/s (median over repetitions)
  double seconds = 0;  // real time per iteration (median)
  double cpu_wall = 0;
};

// Prints one line per benchmark (the median when repeated) and keeps the values for the summary.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, Result> results;

  void ReportRuns(const std::vector<Run>& runs) override {
    std::vector<Run> shown;
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      const bool single = r.run_type == Run::RT_Iteration && r.repetitions <= 1;
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      if (!single && !median) continue;
      Result& res = results[r.run_name.function_name];
      for (const char* m : {"GFLOP/s", "GB/s", "elem/ns"})
        if (auto it = r.counters.find(m); it != r.counters.end()) res.metric = it->second.value;
      if (auto it = r.counters.find("cpu/wall"); it != r.counters.end()) res.cpu_wall = it->second.value;
      res.seconds = r.GetAdjustedRealTime() * 1e-6;  // every benchmark reports in microseconds
      shown.push_back(r);
    }
    if (!shown.empty()) ConsoleReporter::ReportRuns(shown);
  }

  const Result* get(const std::string& name) const {
    auto it = results.find(name);
    return it == results.end() ? nullptr : &it->second;
  }
};

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void print_summary(const SummaryReporter& rep, int reps) {
  auto val = [&](const std::string& n) { const Result* r = rep.get(n); return r ? r->metric : NAN; };
  auto secs = [&](const std::string& n) { const Result* r = rep.get(n); return r ? r->seconds : NAN; };
  auto cw = [&](const std::string& n) { const Result* r = rep.get(n); return r ? r->cpu_wall : NAN; };
  auto ratio = [](double a, double b) { return std::isnan(a) || std::isnan(b) || b == 0 ? std::string("    -") : fmt("%5.2f", a / b); };
  auto num = [](const char* f, double v) { return std::isnan(v) ? std::string("-") : fmt(f, v); };

  std::printf("\n==== minidl-bench-ops summary: medians of %d interleaved repetitions, OMP threads %d, OpenBLAS threads %d ====\n",
              reps, omp_get_max_threads(), openblas_get_num_threads());
  std::printf("\nmatmul f32, square n     minidl GFLOP/s  OpenBLAS GFLOP/s  ratio   Eigen+BLAS GFLOP/s  ratio   minidl cpu/wall\n");
  for (int64_t n : kSquare) {
    const std::string k = std::to_string(n);
    double mi = val("mm/f32/minidl/" + k), ob = val("mm/f32/openblas/" + k), eb = val("mm/f32/eigen_blas/" + k);
    std::printf("  n=%-21lld %14s  %16s  %s   %18s  %s   %15s\n", (long long)n, num("%.1f", mi).c_str(),
                num("%.1f", ob).c_str(), ratio(mi, ob).c_str(), num("%.1f", eb).c_str(), ratio(eb, ob).c_str(),
                num("%.2f", cw("mm/f32/minidl/" + k)).c_str());
  }
  std::printf("\nmatmul low precision      bf16 GFLOP/s  vs f32 minidl   f16 GFLOP/s  vs f32 minidl   (widened to f32 panels)\n");
  for (int64_t n : kSquare) {
    const std::string k = std::to_string(n);
    double f = val("mm/f32/minidl/" + k), b = val("mm/bf16/minidl/" + k), h = val("mm/f16/minidl/" + k);
    std::printf("  n=%-21lld %12s  %13s   %11s  %13s\n", (long long)n, num("%.1f", b).c_str(), ratio(b, f).c_str(),
                num("%.1f", h).c_str(), ratio(h, f).c_str());
  }
  std::printf("\nMLP 784-256-256-10 b128    minidl us  GFLOP/s   OpenBLAS us  GFLOP/s  ratio   Eigen+BLAS us  ratio   bf16 us  vs f32\n");
  double tm = 0, to = 0, te = 0, tb = 0;
  std::vector<GemmShape> shapes = mlp_shapes();
  shapes.push_back(kFc1DwAlt);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const GemmShape& s = shapes[i];
    const std::string k = s.key;
    double mi = val("mlp/minidl/" + k), ob = val("mlp/openblas/" + k);
    double smi = secs("mlp/minidl/" + k), sob = secs("mlp/openblas/" + k), seb = secs("mlp/eigen_blas/" + k);
    double sbf = secs("mlp/minidl_bf16/" + k);
    if (i < mlp_shapes().size()) tm += smi, to += sob, te += seb, tb += sbf;
    std::printf("  %-24s %9s  %7s   %11s  %7s  %s   %13s  %s   %7s  %s\n", s.label, num("%.1f", smi * 1e6).c_str(),
                num("%.1f", mi).c_str(), num("%.1f", sob * 1e6).c_str(), num("%.1f", ob).c_str(), ratio(mi, ob).c_str(),
                num("%.1f", seb * 1e6).c_str(), ratio(sob, seb).c_str(), num("%.1f", sbf * 1e6).c_str(), ratio(smi, sbf).c_str());
  }
  std::printf("  %-24s %9s  %7s   %11s  %7s  %s   %13s  %s   %7s  %s\n", "step total (8 GEMMs)", num("%.1f", tm * 1e6).c_str(), "",
              num("%.1f", to * 1e6).c_str(), "", ratio(to, tm).c_str(), num("%.1f", te * 1e6).c_str(), ratio(to, te).c_str(),
              num("%.1f", tb * 1e6).c_str(), ratio(tm, tb).c_str());
  std::printf("  (GFLOP/s ratios are minidl / OpenBLAS and Eigen+BLAS / OpenBLAS; on the total, times inverted)\n");

  std::printf("\nelement-wise, 16M elements   op GB/s  kernel GB/s  memcpy GB/s   op/memcpy  kernel/memcpy  kernel cpu/wall\n");
  for (const Elementwise& e : elementwise()) {
    const std::string k = e.key;
    double op = val("ew/op/" + k), kr = val("ew/kernel/" + k), mc = val("ew/memcpy/" + std::to_string(e.bytes));
    std::printf("  %-26s %7s  %11s  %11s   %9s  %13s  %15s\n", e.label, num("%.2f", op).c_str(), num("%.2f", kr).c_str(),
                num("%.2f", mc).c_str(), ratio(op, mc).c_str(), ratio(kr, mc).c_str(), num("%.2f", cw("ew/kernel/" + k)).c_str());
  }
  std::printf("\n(op: the public op, allocating its output each call; kernel: the raw CPU kernel into a preallocated\n"
              " output; memcpy: a 2-thread memcpy moving the same bytes, read + written, in the same run.)\n");

  std::printf("\nparallel split (add f32 kernel)   1 thread GB/s  %d threads GB/s  speedup\n", omp_get_max_threads());
  for (int64_t n : kGrainSizes) {
    const std::string k = "grain/add_f32/" + std::to_string(n);
    double t1 = val(k + "/t1"), t2 = val(k + "/t2");
    std::printf("  n=%-30lld %13s  %15s  %7s\n", (long long)n, num("%.2f", t1).c_str(), num("%.2f", t2).c_str(), ratio(t2, t1).c_str());
  }
  std::printf("\nconversions, cache-resident (1 thread)   n=256 elem/ns   n=4096 elem/ns\n");
  for (const Conversion& c : conversions()) {
    const std::string k = std::string("cvt/") + c.key + "/";
    std::printf("  %-38s %13s   %14s\n", c.label, num("%.2f", val(k + "256")).c_str(), num("%.2f", val(k + "4096")).c_str());
  }
}

void register_all() {
  auto reg = [](const std::string& name, auto fn, auto... args) {
    benchmark::RegisterBenchmark(name.c_str(), fn, args...)->UseRealTime()->Unit(benchmark::kMicrosecond);
  };
  for (int64_t n : kSquare) {
    GemmShape s{"", "", n, n, n, false, false};
    const std::string k = std::to_string(n);
    reg("mm/f32/minidl/" + k, bm_minidl_gemm, s, DType::F32);
    reg("mm/f32/openblas/" + k, bm_openblas_gemm, s);
    reg("mm/f32/eigen_blas/" + k, bm_eigen_blas_gemm, s);
    reg("mm/bf16/minidl/" + k, bm_minidl_gemm, s, DType::BF16);
    reg("mm/f16/minidl/" + k, bm_minidl_gemm, s, DType::F16);
  }
  std::vector<GemmShape> shapes = mlp_shapes();
  shapes.push_back(kFc1DwAlt);
  for (const GemmShape& s : shapes) {
    reg(std::string("mlp/minidl/") + s.key, bm_minidl_gemm, s, DType::F32);
    reg(std::string("mlp/minidl_bf16/") + s.key, bm_minidl_gemm, s, DType::BF16);
    reg(std::string("mlp/openblas/") + s.key, bm_openblas_gemm, s);
    reg(std::string("mlp/eigen_blas/") + s.key, bm_eigen_blas_gemm, s);
  }
  std::vector<int64_t> copies;
  for (const Elementwise& e : elementwise()) {
    reg(std::string("ew/op/") + e.key, bm_ew_op, &e);
    reg(std::string("ew/kernel/") + e.key, bm_ew_kernel, &e);
    if (std::find(copies.begin(), copies.end(), e.bytes) == copies.end()) copies.push_back(e.bytes);
  }
  for (int64_t b : copies) reg("ew/memcpy/" + std::to_string(b), bm_memcpy, b);
  for (int64_t n : kGrainSizes)
    for (int t : {1, 2}) reg("grain/add_f32/" + std::to_string(n) + "/t" + std::to_string(t), bm_grain, n, t);
  for (const Conversion& c : conversions())
    for (int64_t n : {int64_t{256}, int64_t{4096}}) reg(std::string("cvt/") + c.key + "/" + std::to_string(n), bm_cvt, &c, n);
}

bool has_flag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], flag, std::strlen(flag)) == 0) return true;
  return false;
}
}  // namespace

int main(int argc, char** argv) {
  // Defaults for a noisy shared machine, each overridable on the command line.
  const char* reps_env = std::getenv("MINIDL_BENCH_REPS");
  const std::string reps = reps_env ? reps_env : "5";
  std::vector<std::string> extra;
  if (!has_flag(argc, argv, "--benchmark_repetitions")) extra.push_back("--benchmark_repetitions=" + reps);
  if (!has_flag(argc, argv, "--benchmark_enable_random_interleaving"))
    extra.push_back("--benchmark_enable_random_interleaving=true");
  if (!has_flag(argc, argv, "--benchmark_min_time")) extra.push_back("--benchmark_min_time=0.2");
  // Lets the other thread pool (OpenBLAS's after an OpenBLAS run, OpenMP's after ours) go idle.
  if (!has_flag(argc, argv, "--benchmark_min_warmup_time")) extra.push_back("--benchmark_min_warmup_time=0.05");
  std::vector<char*> args(argv, argv + argc);
  for (auto& e : extra) args.push_back(e.data());
  int n = static_cast<int>(args.size());
  int repetitions = std::atoi(reps.c_str());
  for (int i = 1; i < n; ++i)
    if (std::strncmp(args[i], "--benchmark_repetitions=", 24) == 0) repetitions = std::atoi(args[i] + 24);

  std::printf("minidl-bench-ops: OMP threads %d, Eigen threads %d, OpenBLAS threads %d (%s)\n", omp_get_max_threads(),
              Eigen::nbThreads(), openblas_get_num_threads(), openblas_get_config());
  for (const char* v : {"OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OPENBLAS_NUM_THREADS"})
    std::printf("  %s=%s\n", v, std::getenv(v) ? std::getenv(v) : "(unset)");

  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  register_all();
  SummaryReporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  print_summary(rep, repetitions);
  benchmark::Shutdown();
  return 0;
}
