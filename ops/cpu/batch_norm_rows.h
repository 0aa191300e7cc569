// Batch norm kernels on rows of channels: x viewed as [M, C], the C channels of one position side
// by side (a 2-D input, or channels-last images seen as [N*H*W, C] by ops/batch_norm.cpp). Included
// by ops/cpu/batch_norm.cpp only, which holds the [N, C, S] plane kernels and the contracts.
//
// The rows go in fixed chunks of about kChunkValues values whatever the thread count, so the sums
// come out the same for any number of threads; the chunks are split across the pool. Inside a chunk
// the channels go in tiles (8 for the f64 sums, 16 for the element-wise passes): a tile's sums, or
// its per-channel constants, stay in registers while it walks down the chunk's rows, which sit in
// L1. A loop per row with the sums in memory ran at a quarter of this speed (bench/README.md,
// performance log 21). f16/bf16 values, and gy masked by the ReLU's output, are widened into this
// thread's buffers a chunk at a time.
#pragma once
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ops/cpu/loops.h"
#include "ops/cpu/scalar.h"
#include "ops/cpu/thread_buffer.h"

namespace minidl::kernels::cpu::bn_rows {

inline constexpr int64_t kChunkValues = 4096;
inline constexpr int kTile = 16;

inline int64_t chunk_rows(int64_t C) { return std::max<int64_t>(1, kChunkValues / std::max<int64_t>(1, C)); }

// f.template operator()<W>(c0, w) for each tile of channels [c0, c0 + w): W == kTile for whole tiles
// (a compile-time width: unrolled, kept in registers), W == 0 for a last partial one (w < kTile).
template <class F>
inline void for_tiles(int64_t C, F&& f) {
  int64_t c0 = 0;
  for (; c0 + kTile <= C; c0 += kTile) f.template operator()<kTile>(c0, kTile);
  if (c0 < C) f.template operator()<0>(c0, static_cast<int>(C - c0));
}

// f(r0, r1) for every chunk [r0, r1) of the rows, chunks split across the pool.
template <class F>
inline void for_chunks(int64_t rows, int64_t C, F&& f) {
  const int64_t chunk = chunk_rows(C);
  parallel_for((rows + chunk - 1) / chunk, chunk * std::max<int64_t>(1, C), [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) f(k * chunk, std::min(rows, (k + 1) * chunk));
  });
}

// f(b0, b1) for blocks [b0, b1) of the rows [r0, r1) that together make the chunk: the whole chunk for
// f32/f64, blocks of about kWidenedValues values for f16/bf16, whose widened copies (up to four per
// block in grad_input) then stay in L1 beside the data (a whole chunk's are 64 KiB: performance log 26).
inline constexpr int64_t kWidenedValues = 1024;
template <class T, class F>
inline void for_blocks(int64_t r0, int64_t r1, int64_t C, F&& f) {
  if constexpr (std::is_same_v<T, compute_t<T>>) {
    f(r0, r1);
  } else {
    const int64_t step = std::max<int64_t>(1, kWidenedValues / std::max<int64_t>(1, C));
    for (int64_t b0 = r0; b0 < r1; b0 += step) f(b0, std::min(r1, b0 + step));
  }
}

// f(r0, r1) for every block of every chunk: the element-wise passes.
template <class T, class F>
inline void for_chunk_blocks(int64_t rows, int64_t C, F&& f) {
  for_chunks(rows, C, [&](int64_t r0, int64_t r1) { for_blocks<T>(r0, r1, C, f); });
}

// Per-channel sums over all rows: f(r0, r1, a, b) adds the chunk [r0, r1) into its own f64 slots
// a[C], b[C]; the chunks' slots are added in order.
template <class F>
void chunk_sums(int64_t rows, int64_t C, std::vector<double>& a, std::vector<double>& b, F&& f) {
  const int64_t chunk = chunk_rows(C);
  const int64_t chunks = (rows + chunk - 1) / chunk;
  std::vector<double> part(static_cast<size_t>(chunks * 2 * C), 0.0);
  for_chunks(rows, C, [&](int64_t r0, int64_t r1) {
    double* slots = part.data() + r0 / chunk * 2 * C;
    f(r0, r1, slots, slots + C);
  });
  a.assign(C, 0.0);
  b.assign(C, 0.0);
  for (int64_t k = 0; k < chunks; ++k)
    for (int64_t j = 0; j < C; ++j) {
      a[j] += part[k * 2 * C + j];
      b[j] += part[k * 2 * C + C + j];
    }
}

// n values of p as the compute type: p itself for f32/f64, else widened into buf.
template <class T>
inline const compute_t<T>* widened(const T* p, int64_t n, ThreadBuffer& buf) {
  if constexpr (std::is_same_v<T, compute_t<T>>) {
    return p;
  } else {
    auto* d = static_cast<compute_t<T>*>(buf.reserve(static_cast<size_t>(n) * sizeof(compute_t<T>)));
    load_block(p, d, n);
    return d;
  }
}

// n values of gy as the compute type, masked (Masked: batch_norm_relu) by the ReLU's output y as
// ReluBackward does: y <= 0 ? 0 : gy (NaN in y lets gy through). The mask is a loop of its own so
// that it and the sums' loops vectorize (a select inside the f64 sums' loop did not: 0.2x).
template <bool Masked, class T>
inline const compute_t<T>* grad_values(const T* g, const T* y, int64_t n, ThreadBuffer& gbuf, ThreadBuffer& ybuf) {
  using C = compute_t<T>;
  if constexpr (!Masked) {
    return widened(g, n, gbuf);
  } else {
    C* d = static_cast<C*>(gbuf.reserve(static_cast<size_t>(n) * sizeof(C)));
    const C* yv = widened(y, n, ybuf);
    if constexpr (std::is_same_v<T, C>) {
      for (int64_t i = 0; i < n; ++i) d[i] = yv[i] <= C(0) ? C(0) : g[i];
    } else {
      load_block(g, d, n);
      for (int64_t i = 0; i < n; ++i) d[i] = yv[i] <= C(0) ? C(0) : d[i];
    }
    return d;
  }
}

// Where a chunk's results go: straight into out for f32/f64, else into buf and narrowed by done().
template <class T>
struct ChunkOut {
  using C = compute_t<T>;
  T* out;
  int64_t n;
  C* values;
  ChunkOut(T* o, int64_t count, ThreadBuffer& buf) : out(o), n(count) {
    if constexpr (std::is_same_v<T, C>) values = o;
    else values = static_cast<C*>(buf.reserve(static_cast<size_t>(count) * sizeof(C)));
  }
  void done() {
    if constexpr (!std::is_same_v<T, C>) store_block(values, out, n);
  }
};

// Eight channels' f64 sums, kept in registers: GCC/Clang vector extensions, lowered to the widest
// vectors of the kernel set's instruction set.
typedef double f64x8 __attribute__((vector_size(64)));
typedef float f32x8 __attribute__((vector_size(32)));

template <class Cm>
inline void load8(const Cm* p, f64x8& out) {
  if constexpr (std::is_same_v<Cm, double>) {
    std::memcpy(&out, p, sizeof out);
  } else {
    f32x8 f;
    std::memcpy(&f, p, sizeof f);
    out = __builtin_convertvector(f, f64x8);
  }
}

// Adds, for the channels [0, width) of n rows with stride C (width 8 in vectors, less one by one),
// Grad: sum g and sum g * (v - k); else sum (v - k) and sum (v - k)^2, into a[], b[]. The rows go
// round four sets of lanes (the adds' latency overlaps), which are then added in a fixed order.
template <bool Grad, class Cm>
inline void column_sums(const Cm* g, const Cm* v, int64_t n, int64_t C, int width, const double* k, double* a, double* b) {
  if (width == 8) {
    f64x8 kk, sa[4] = {}, sb[4] = {};
    std::memcpy(&kk, k, sizeof kk);
    auto add_row = [&](int64_t r, f64x8& da, f64x8& db) {
      f64x8 x;
      load8(v + r * C, x);
      x -= kk;
      if constexpr (Grad) {
        f64x8 gr;
        load8(g + r * C, gr);
        da += gr;
        db += gr * x;
      } else {
        da += x;
        db += x * x;
      }
    };
    int64_t r = 0;
    for (; r + 4 <= n; r += 4)
      for (int u = 0; u < 4; ++u) add_row(r + u, sa[u], sb[u]);
    for (; r < n; ++r) add_row(r, sa[0], sb[0]);
    const f64x8 ta = (sa[0] + sa[1]) + (sa[2] + sa[3]), tb = (sb[0] + sb[1]) + (sb[2] + sb[3]);
    for (int j = 0; j < 8; ++j) {
      a[j] += ta[j];
      b[j] += tb[j];
    }
    return;
  }
  for (int j = 0; j < width; ++j)
    for (int64_t r = 0; r < n; ++r) {
      const double d = static_cast<double>(v[r * C + j]) - k[j];
      const double gr = Grad ? static_cast<double>(g[r * C + j]) : d;
      a[j] += gr;
      b[j] += gr * d;
    }
}

// column_sums over all C channels, eight at a time.
template <bool Grad, class Cm>
inline void row_sums(const Cm* g, const Cm* v, int64_t n, int64_t C, const double* k, double* a, double* b) {
  for (int64_t c0 = 0; c0 < C; c0 += 8)
    column_sums<Grad>(g + c0, v + c0, n, C, static_cast<int>(std::min<int64_t>(8, C - c0)), k + c0, a + c0, b + c0);
}

// mean[c], var[c] (biased) of x [rows, C]. Sums of (x - k) with k = the channel's first value: no
// cancellation when |mean| >> std.
template <class T>
void stats(const T* x, int64_t rows, int64_t C, compute_t<T>* mean, compute_t<T>* var) {
  using Cm = compute_t<T>;
  std::vector<double> k(C), s1, s2;
  if (rows > 0)
    for (int64_t c = 0; c < C; ++c) k[c] = static_cast<double>(static_cast<Cm>(x[c]));
  chunk_sums(rows, C, s1, s2, [&](int64_t r0, int64_t r1, double* a, double* b) {
    for_blocks<T>(r0, r1, C, [&](int64_t b0, int64_t b1) {
      thread_local ThreadBuffer buf;
      const Cm* v = widened(x + b0 * C, (b1 - b0) * C, buf);
      row_sums<false>(v, v, b1 - b0, C, k.data(), a, b);
    });
  });
  const double M = static_cast<double>(rows);
  for (int64_t c = 0; c < C; ++c) {
    const double m1 = s1[c] / M;
    mean[c] = static_cast<Cm>(k[c] + m1);
    var[c] = static_cast<Cm>(std::max(0.0, s2[c] / M - m1 * m1));
  }
}

// y = x * scale[c] + shift[c] (+ residual when Residual), then clamped at 0 when Relu (NaN kept),
// rounded to T once at the end.
template <class T, bool Relu, bool Residual>
void apply(T* y, const T* x, const T* residual, int64_t rows, int64_t C, const compute_t<T>* scale,
           const compute_t<T>* shift) {
  using Cm = compute_t<T>;
  for_chunk_blocks<T>(rows, C, [&](int64_t r0, int64_t r1) {
    thread_local ThreadBuffer in_buf, res_buf, out_buf;
    const int64_t n = (r1 - r0) * C;
    const Cm* v = widened(x + r0 * C, n, in_buf);
    const Cm* res = Residual ? widened(residual + r0 * C, n, res_buf) : nullptr;
    ChunkOut<T> o(y + r0 * C, n, out_buf);
    for_tiles(C, [&]<int W>(int64_t c0, int w) {
      const int tw = W ? W : w;
      Cm a[kTile] = {}, b[kTile] = {};
      for (int j = 0; j < tw; ++j) {
        a[j] = scale[c0 + j];
        b[j] = shift[c0 + j];
      }
      for (int64_t r = 0; r < r1 - r0; ++r) {
        const Cm* in = v + r * C + c0;
        Cm* out = o.values + r * C + c0;
        for (int j = 0; j < tw; ++j) {
          Cm z = in[j] * a[j] + b[j];
          if constexpr (Residual) z += res[r * C + c0 + j];
          out[j] = Relu ? (z <= Cm(0) ? Cm(0) : z) : z;
        }
      }
    });
    o.done();
  });
}

// The backward's pass 1: s1[c] = sum g and s2[c] = sum g * (x - mean[c]), in f64, with g = gy masked
// by relu_out when Masked.
template <class T, bool Masked>
void grad_sums(const T* gy, const T* x, const T* relu_out, int64_t rows, int64_t C, const compute_t<T>* mean,
               std::vector<double>& s1, std::vector<double>& s2) {
  using Cm = compute_t<T>;
  const std::vector<double> m(mean, mean + C);
  chunk_sums(rows, C, s1, s2, [&](int64_t r0, int64_t r1, double* a, double* b) {
    for_blocks<T>(r0, r1, C, [&](int64_t b0, int64_t b1) {
      thread_local ThreadBuffer g_buf, y_buf, x_buf;
      const int64_t base = b0 * C, n = (b1 - b0) * C;
      const Cm* g = grad_values<Masked>(gy + base, relu_out + base, n, g_buf, y_buf);
      const Cm* v = widened(x + base, n, x_buf);
      row_sums<true>(g, v, b1 - b0, C, m.data(), a, b);
    });
  });
}

// The backward's pass 2: gx = A[c] * g + B[c] * x + D[c], g as in grad_sums.
template <class T, bool Masked>
void grad_input(T* gx, const T* gy, const T* x, const T* relu_out, int64_t rows, int64_t C, const compute_t<T>* A,
                const compute_t<T>* B, const compute_t<T>* D) {
  using Cm = compute_t<T>;
  for_chunk_blocks<T>(rows, C, [&](int64_t r0, int64_t r1) {
    thread_local ThreadBuffer g_buf, y_buf, x_buf, out_buf;
    const int64_t base = r0 * C, n = (r1 - r0) * C;
    const Cm* g = grad_values<Masked>(gy + base, relu_out + base, n, g_buf, y_buf);
    const Cm* v = widened(x + base, n, x_buf);
    ChunkOut<T> o(gx + base, n, out_buf);
    for_tiles(C, [&]<int W>(int64_t c0, int w) {
      const int tw = W ? W : w;
      Cm a[kTile] = {}, b[kTile] = {}, d[kTile] = {};
      for (int j = 0; j < tw; ++j) {
        a[j] = A[c0 + j];
        b[j] = B[c0 + j];
        d[j] = D[c0 + j];
      }
      for (int64_t r = 0; r < r1 - r0; ++r) {
        const Cm* gr = g + r * C + c0;
        const Cm* vr = v + r * C + c0;
        Cm* out = o.values + r * C + c0;
        for (int j = 0; j < tw; ++j) out[j] = a[j] * gr[j] + b[j] * vr[j] + d[j];
      }
    });
    o.done();
  });
}

}  // namespace minidl::kernels::cpu::bn_rows
