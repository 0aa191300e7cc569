// minidl-bench-gemm-lab: compares ways of running one f32 GEMM on this machine, interleaved and
// repeated (medians), to choose what ops/cpu/gemm.cpp does. Not part of the ops benchmark table;
// bench/README.md records what it showed.
//
//   build-bench/bench/minidl-bench-gemm-lab [reps=7] [ms_per_sample=40]
#include <cblas.h>
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

extern "C" void openblas_set_num_threads(int);

namespace {
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ColMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using Stride = Eigen::OuterStride<>;

struct Shape {
  const char* name;
  int m, k, n;
  bool ta, tb;
};

struct Problem {
  Shape s;
  std::vector<float> a, b, c;
  explicit Problem(Shape sh) : s(sh), a(size_t(sh.m) * sh.k), b(size_t(sh.k) * sh.n), c(size_t(sh.m) * sh.n) {
    std::mt19937 rng(1);
    std::normal_distribution<float> d;
    for (auto& x : a) x = d(rng);
    for (auto& x : b) x = d(rng);
  }
};

// Eigen product of rows [r0, r1) and cols [c0, c1) of C, as gemm.cpp maps transposed views.
void eigen_block(const Problem& p, float* c, int r0, int r1, int c0, int c1) {
  const Shape& s = p.s;
  Eigen::Map<RowMat, 0, Stride> C(c + size_t(r0) * s.n + c0, r1 - r0, c1 - c0, Stride(s.n));
  auto withA = [&](auto&& f) {
    if (s.ta) f(Eigen::Map<const ColMat, 0, Stride>(p.a.data() + r0, r1 - r0, s.k, Stride(s.m)));
    else f(Eigen::Map<const RowMat, 0, Stride>(p.a.data() + size_t(r0) * s.k, r1 - r0, s.k, Stride(s.k)));
  };
  auto withB = [&](auto&& f) {
    if (s.tb) f(Eigen::Map<const ColMat, 0, Stride>(p.b.data() + size_t(c0) * s.k, s.k, c1 - c0, Stride(s.k)));
    else f(Eigen::Map<const RowMat, 0, Stride>(p.b.data() + c0, s.k, c1 - c0, Stride(s.n)));
  };
  withA([&](const auto& A) { withB([&](const auto& B) { C.noalias() = A * B; }); });
}

// One parallel region; each thread runs Eigen (single-threaded inside a parallel region) on a
// slab of C: rows when m >= n (B packed twice), else columns (A packed twice). Slab edges on
// multiples of `align`.
void eigen_slabs(Problem& p, int align) {
  const Shape& s = p.s;
#pragma omp parallel
  {
    const int nt = omp_get_num_threads(), t = omp_get_thread_num();
    const bool rows = s.m >= s.n;
    const int len = rows ? s.m : s.n;
    int chunk = (len + nt - 1) / nt;
    chunk = (chunk + align - 1) / align * align;
    const int b = std::min(len, t * chunk), e = std::min(len, b + chunk);
    if (b < e) {
      if (rows) eigen_block(p, p.c.data(), b, e, 0, s.n);
      else eigen_block(p, p.c.data(), 0, s.m, b, e);
    }
  }
}

void openblas(Problem& p) {
  const Shape& s = p.s;
  cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f,
              p.a.data(), s.ta ? s.m : s.k, p.b.data(), s.tb ? s.k : s.n, 0.0f, p.c.data(), s.n);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 7;
  const double sample_s = (argc > 2 ? std::atof(argv[2]) : 40) * 1e-3;
  const std::vector<Shape> shapes = {
      {"fc1_fwd", 128, 784, 256, false, true}, {"fc1_dw", 784, 128, 256, true, false},
      {"fc2_fwd", 128, 256, 256, false, true}, {"fc2_dx", 128, 256, 256, false, false},
      {"fc2_dw", 256, 128, 256, true, false},  {"fc3_fwd", 128, 256, 10, false, true},
      {"fc3_dx", 128, 10, 256, false, false},  {"fc3_dw", 256, 128, 10, true, false},
      {"sq256", 256, 256, 256, false, false},  {"sq512", 512, 512, 512, false, false},
      {"sq1024", 1024, 1024, 1024, false, false}, {"sq2048", 2048, 2048, 2048, false, false},
  };
  struct Strategy {
    const char* name;
    std::function<void(Problem&)> run;
  };
  const std::vector<Strategy> strategies = {
      {"openblas", [](Problem& p) { openblas(p); }},
      {"eigen_omp", [](Problem& p) { eigen_block(p, p.c.data(), 0, p.s.m, 0, p.s.n); }},
      {"eigen_1t",
       [](Problem& p) {
         Eigen::setNbThreads(1);
         eigen_block(p, p.c.data(), 0, p.s.m, 0, p.s.n);
         Eigen::setNbThreads(0);
       }},
      {"slabs16", [](Problem& p) { eigen_slabs(p, 16); }},
      {"slabs48", [](Problem& p) { eigen_slabs(p, 48); }},
  };
  std::printf("threads: omp %d eigen %d; reps %d, %.0f ms per sample; GFLOP/s medians\n", omp_get_max_threads(),
              Eigen::nbThreads(), reps, sample_s * 1e3);
  std::printf("%-10s", "shape");
  for (auto& st : strategies) std::printf(" %10s", st.name);
  std::printf("   best/openblas\n");
  for (const Shape& sh : shapes) {
    Problem p(sh);
    std::vector<std::vector<double>> gf(strategies.size());
    const double flops = 2.0 * sh.m * sh.k * sh.n;
    for (int r = 0; r < reps; ++r) {
      for (size_t i = 0; i < strategies.size(); ++i) {
        strategies[i].run(p);  // warm
        int iters = 0;
        auto t0 = std::chrono::steady_clock::now();
        double el = 0;
        do {
          strategies[i].run(p);
          ++iters;
          el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        } while (el < sample_s);
        gf[i].push_back(flops * iters / el * 1e-9);
      }
    }
    std::printf("%-10s", sh.name);
    double best = 0;
    for (size_t i = 0; i < strategies.size(); ++i) {
      double m = median(gf[i]);
      if (i > 0) best = std::max(best, m);
      std::printf(" %10.1f", m);
    }
    std::printf("   %.2f\n", best / median(gf[0]));
  }
}
