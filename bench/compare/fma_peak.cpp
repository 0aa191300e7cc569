// minidl-fma-peak: the f32 FMA throughput this CPU reaches, per core and on T threads, for the
// compare bench's "fraction of peak" column. Each thread runs independent chains of vector FMAs
// (enough of them to cover the FMA latency on two pipes) on registers only, no memory traffic.
// The AVX2 (8 lanes) and AVX-512 (16 lanes) loops are compiled with target attributes and chosen
// at run time by cpuid, so the binary runs on any x86-64 with AVX2; the widest one the CPU has is
// the peak. Best of 5 runs of ~50 ms each.
//
//   minidl-fma-peak [threads=2]   -> one JSON line
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {
constexpr long kIters = 4'000'000;  // per run and thread; 12 chains x lanes x 2 flops each

// kernel(iters): 12 independent chains a = a * m + c of one vector width; returns a value that
// depends on every chain so that the compiler keeps them all. One definition per ISA, each compiled
// for its own target (intrinsics cannot be inlined into a function of another target).
#define MINIDL_FMA_LOOP(NAME, TARGET, V, SET1, FMADD, ADD, FIRST)          \
  __attribute__((target(TARGET))) float NAME(long iters) {                 \
    V a[12];                                                               \
    for (int i = 0; i < 12; ++i) a[i] = SET1(1.0f + i * 1e-3f);            \
    const V m = SET1(0.999999f), c = SET1(1e-7f);                          \
    for (long it = 0; it < iters; ++it) {                                  \
      _Pragma("GCC unroll 12") for (int i = 0; i < 12; ++i) a[i] = FMADD(a[i], m, c); \
    }                                                                      \
    V s = a[0];                                                            \
    for (int i = 1; i < 12; ++i) s = ADD(s, a[i]);                         \
    return FIRST(s);                                                       \
  }
MINIDL_FMA_LOOP(fma_avx2, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_cvtss_f32)
MINIDL_FMA_LOOP(fma_avx512, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_cvtss_f32)
#undef MINIDL_FMA_LOOP

// GFLOP/s of `threads` threads each running kernel(kIters), best of 5.
double measure(float (*kernel)(long), int lanes, int threads) {
  double best = 0;
  volatile float sink = 0;
  for (int run = 0; run < 5; ++run) {
    std::vector<std::thread> pool;
    std::vector<float> out(threads);
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { out[t] = kernel(kIters); });
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (float v : out) sink = sink + v;
    best = std::max(best, 2.0 * 12 * lanes * kIters * threads / s / 1e9);
  }
  return best;
}
}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 2;
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx2) {
    std::printf("{\"isa\": \"none\", \"error\": \"no AVX2/FMA on this CPU\"}\n");
    return 0;
  }
  const double a2_1 = measure(fma_avx2, 8, 1), a2_t = measure(fma_avx2, 8, threads);
  double a5_1 = 0, a5_t = 0;
  if (avx512) a5_1 = measure(fma_avx512, 16, 1), a5_t = measure(fma_avx512, 16, threads);
  const bool wide = avx512 && a5_1 > a2_1;  // Zen 4 runs AVX-512 as two 256-bit halves: take the faster
  std::printf("{\"isa\": \"%s\", \"threads\": %d, \"avx2_gflops_1t\": %.1f, \"avx2_gflops_nt\": %.1f, "
              "\"avx512_gflops_1t\": %.1f, \"avx512_gflops_nt\": %.1f, \"peak_gflops_1t\": %.1f, \"peak_gflops_nt\": %.1f}\n",
              wide ? "avx512" : "avx2", threads, a2_1, a2_t, a5_1, a5_t, wide ? a5_1 : a2_1, wide ? a5_t : a2_t);
  return 0;
}
