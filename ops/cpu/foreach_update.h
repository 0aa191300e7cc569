// The single-pass update harness of the CPU foreach optimizer kernels (foreach_sgd.cpp,
// foreach_adam.cpp). A kernel sees one chunk of a parameter as compute-type arrays: the gradient
// (read-only) and up to four arrays it updates in place (the parameter and its state buffers; null
// where unused). f32/f64 data is handed over
// directly; f16/bf16 data is converted block by block to f32 and stored back, so low-precision
// parameters are computed in f32 and rounded once per step. Large parameters are split across
// minidl's CPU thread pool (ops/cpu/loops.h); results never depend on the thread count (every
// element is independent).
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ops/cpu/convert.h"
#include "ops/cpu/loops.h"

namespace minidl::kernels::cpu {

// a * b + c as PyTorch's vectorized CPU kernels compute `c + alpha * b` (Vectorized::fmadd): one
// rounding where the kernel set has FMA, two where it has not. Spelled out because the compiler's
// own contraction picks which product of `x * y + z * w` it fuses, and a different pick moves the
// result by an ulp against PyTorch's.
template <class C>
inline C fmadd(C a, C b, C c) {
#if defined(__FMA__)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

// Calls f(std::true_type) or f(std::false_type): a loop-invariant flag becomes a constant, so each
// variant of an update loop is branch-free and vectorizes.
template <class F>
void with_flag(bool flag, F&& f) {
  if (flag) f(std::true_type{});
  else f(std::false_type{});
}

template <class T, class Kernel>
void fused_update(int64_t n, const T* grad, std::array<T*, 4> arrays, Kernel&& kernel) {
  using C = compute_t<T>;
  constexpr int64_t kChunk = int64_t{1} << 14;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  auto run_chunk = [&](int64_t c) {
    const int64_t start = c * kChunk, len = std::min(kChunk, n - start);
    if constexpr (std::is_same_v<T, C>) {
      std::array<C*, 4> a{};
      for (int k = 0; k < 4; ++k) a[k] = arrays[k] ? arrays[k] + start : nullptr;
      kernel(grad + start, a, len);
    } else {
      constexpr int64_t kBlock = 256;
      C gb[kBlock];
      C buf[4][kBlock];
      for (int64_t b = 0; b < len; b += kBlock) {
        const int64_t m = std::min(kBlock, len - b);
        load_block(grad + start + b, gb, m);
        std::array<C*, 4> a{};
        for (int k = 0; k < 4; ++k) {
          if (!arrays[k]) continue;
          load_block(arrays[k] + start + b, buf[k], m);
          a[k] = buf[k];
        }
        kernel(static_cast<const C*>(gb), a, m);
        for (int k = 0; k < 4; ++k)
          if (arrays[k]) store_block(buf[k], arrays[k] + start + b, m);
      }
    }
  };
  // From 2^15 values a parameter is split (chunks of 2^14 in two ranges): a 256 x 256 weight's halves
  // are then updated by the cores whose GEMM slabs wrote their gradient rows (2^17 before: the
  // caller updated it all, reading half from the other core; MLP update 0.106-0.109 -> 0.094-0.098
  // ms on two threads in runs before and after, bench/README.md, performance log 29).
  if (n < (int64_t{1} << 15)) {
    for (int64_t c = 0; c < chunks; ++c) run_chunk(c);
  } else {
    parallel_chunks(chunks, run_chunk);  // minidl's one thread pool
  }
}

template <class T>
T* data_or_null(const Tensor& t) {
  return t.defined() ? static_cast<T*>(t.raw_data()) : nullptr;
}

}  // namespace minidl::kernels::cpu
