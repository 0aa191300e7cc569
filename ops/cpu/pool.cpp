// CPU 2-D pooling: max (with indices; adaptive too), average and adaptive average, and their backward passes.
// Each (n, c) plane is independent, so planes run in parallel; max pooling also takes channels-last
// images (a convolution's output on oneDNN), a row of output pixels at a time with every pixel's
// channels side by side, so that they need no copy to NCHW and back. f16/bf16 planes are widened to f32
// into a scratch buffer, pooled in f32 and narrowed once. Windows and divisors follow PyTorch's
// CPU kernels exactly (max: first maximum wins, NaN propagates; avg: count_include_pad divides by
// the window clipped to the padded input).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/cpu/loops.h"
#include "ops/cpu/scalar.h"
#include "ops/kernels.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace minidl::kernels::cpu {

namespace {

// Plane p of a contiguous [planes, n] tensor, as compute-type values: the storage itself for
// f32/f64, else widened into buf.
template <class T>
const compute_t<T>* load_plane(const T* base, int64_t p, int64_t n, std::vector<compute_t<T>>& buf) {
  if constexpr (std::is_same_v<T, compute_t<T>>) {
    return base + p * n;
  } else {
    buf.resize(n);
    load_block(base + p * n, buf.data(), n);
    return buf.data();
  }
}

// Runs f(plane, in_buf, out_buf) for every (n, c) plane, in parallel across planes.
template <class C, class F>
void for_each_plane(const Pool2dGeometry& g, F&& f) {
  const int64_t planes = g.N * g.C;
  parallel_for(planes, std::max<int64_t>(1, g.H * g.W + g.OH * g.OW), [&](int64_t b, int64_t e) {
    std::vector<C> in_buf, out_buf;
    for (int64_t p = b; p < e; ++p) f(p, in_buf, out_buf);
  });
}

// One output row of a 2x2, stride-2 max pool over input rows a and a + W, branch-free so that it
// vectorizes: columns [0, n). Same tie and NaN rules as the general loop. Returns n.
template <class C>
int64_t max_row_2x2(const C* a, int64_t W, int64_t base, int64_t n, C* out, int64_t* ind) {
  const C* b = a + W;
  for (int64_t ow = 0; ow < n; ++ow) {
    const C a0 = a[2 * ow], a1 = a[2 * ow + 1], b0 = b[2 * ow], b1 = b[2 * ow + 1];
    C m = a0;
    int64_t k = 0;
    bool t = a1 > m || a1 != a1;
    m = t ? a1 : m;
    k = t ? 1 : k;
    t = b0 > m || b0 != b0;
    m = t ? b0 : m;
    k = t ? W : k;
    t = b1 > m || b1 != b1;
    m = t ? b1 : m;
    k = t ? W + 1 : k;
    out[ow] = m;
    ind[ow] = base + 2 * ow + k;
  }
  return n;
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
// The same row for f32 in the AVX-512 kernel set: 16 outputs a step, each input row's 32 values
// split into even and odd columns by two permutes, masked at the row's end. GCC compiled the loop
// above to scalar code with a branch per compare for LeNet-5's 14- and 5-wide rows, which the
// random signs of its inputs mispredict (17% of the step: performance log 27).
inline int64_t max_row_2x2(const float* a, int64_t W, int64_t base, int64_t n, float* out, int64_t* ind) {
  const float* b = a + W;
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i off_a1 = _mm512_set1_epi32(1), off_b0 = _mm512_set1_epi32(static_cast<int32_t>(W)),
                off_b1 = _mm512_set1_epi32(static_cast<int32_t>(W + 1));
  const __m512i base64 = _mm512_set1_epi64(base);
  for (int64_t o = 0; o < n; o += 16) {
    const int64_t r = std::min<int64_t>(16, n - o);
    const uint32_t in_mask = r == 16 ? 0xffffffffu : (1u << (2 * r)) - 1u;
    const __mmask16 lo = static_cast<__mmask16>(in_mask), hi = static_cast<__mmask16>(in_mask >> 16);
    const __m512 alo = _mm512_maskz_loadu_ps(lo, a + 2 * o), ahi = _mm512_maskz_loadu_ps(hi, a + 2 * o + 16);
    const __m512 blo = _mm512_maskz_loadu_ps(lo, b + 2 * o), bhi = _mm512_maskz_loadu_ps(hi, b + 2 * o + 16);
    __m512 m = _mm512_permutex2var_ps(alo, even, ahi);
    __m512i k = _mm512_setzero_si512();
    // Taken when greater, or NaN (the scalar loop's rule: the first maximum wins, a NaN replaces).
    auto take = [&](__m512 v, __m512i at) {
      const __mmask16 t = _mm512_cmp_ps_mask(v, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      m = _mm512_mask_mov_ps(m, t, v);
      k = _mm512_mask_mov_epi32(k, t, at);
    };
    take(_mm512_permutex2var_ps(alo, odd, ahi), off_a1);
    take(_mm512_permutex2var_ps(blo, even, bhi), off_b0);
    take(_mm512_permutex2var_ps(blo, odd, bhi), off_b1);
    const __mmask16 out_mask = static_cast<__mmask16>((1u << r) - 1u);
    _mm512_mask_storeu_ps(out + o, out_mask, m);
    // Index = base + 2 * column + the winner's offset; the sum before base fits int32 (< 3W).
    const __m512i pos = _mm512_add_epi32(k, _mm512_slli_epi32(_mm512_add_epi32(lane, _mm512_set1_epi32(static_cast<int32_t>(o))), 1));
    _mm512_mask_storeu_epi64(ind + o, static_cast<__mmask8>(out_mask), _mm512_add_epi64(base64, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(pos))));
    _mm512_mask_storeu_epi64(ind + o + 8, static_cast<__mmask8>(out_mask >> 8), _mm512_add_epi64(base64, _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(pos, 1))));
  }
  return n;
}
#elif defined(__AVX2__)
// The AVX2 kernel set's f32 row, as the AVX-512 one above: 8 outputs a step, masked at the end.
inline int64_t max_row_2x2(const float* a, int64_t W, int64_t base, int64_t n, float* out, int64_t* ind) {
  const float* b = a + W;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i off_a1 = _mm256_set1_epi32(1), off_b0 = _mm256_set1_epi32(static_cast<int32_t>(W)),
                off_b1 = _mm256_set1_epi32(static_cast<int32_t>(W + 1));
  const __m256i base64 = _mm256_set1_epi64x(base);
  // Even and odd columns of 16 values in two registers, in order (shuffles work within 128-bit halves).
  auto split = [](__m256 lo, __m256 hi, int which) {
    const __m256 s = which == 0 ? _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)) : _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
  };
  for (int64_t o = 0; o < n; o += 8) {
    const int32_t r = static_cast<int32_t>(std::min<int64_t>(8, n - o));
    // Lanes below the count: loads of the first 8 input values and of the next 8, and the outputs.
    const __m256i in_lo = _mm256_cmpgt_epi32(_mm256_set1_epi32(2 * r), lane);
    const __m256i in_hi = _mm256_cmpgt_epi32(_mm256_set1_epi32(2 * r - 8), lane);
    const __m256i out_mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(r), lane);
    const __m256 alo = _mm256_maskload_ps(a + 2 * o, in_lo), ahi = _mm256_maskload_ps(a + 2 * o + 8, in_hi);
    const __m256 blo = _mm256_maskload_ps(b + 2 * o, in_lo), bhi = _mm256_maskload_ps(b + 2 * o + 8, in_hi);
    __m256 m = split(alo, ahi, 0);
    __m256 k = _mm256_setzero_ps();  // the winners' offsets, int32 bits
    auto take = [&](__m256 v, __m256i at) {
      const __m256 t = _mm256_or_ps(_mm256_cmp_ps(v, m, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      m = _mm256_blendv_ps(m, v, t);
      k = _mm256_blendv_ps(k, _mm256_castsi256_ps(at), t);
    };
    take(split(alo, ahi, 1), off_a1);
    take(split(blo, bhi, 0), off_b0);
    take(split(blo, bhi, 1), off_b1);
    _mm256_maskstore_ps(out + o, out_mask, m);
    const __m256i pos = _mm256_add_epi32(_mm256_castps_si256(k), _mm256_slli_epi32(_mm256_add_epi32(lane, _mm256_set1_epi32(static_cast<int32_t>(o))), 1));
    const __m256i mlo = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(out_mask)), mhi = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(out_mask, 1));
    _mm256_maskstore_epi64(reinterpret_cast<long long*>(ind + o), mlo, _mm256_add_epi64(base64, _mm256_cvtepi32_epi64(_mm256_castsi256_si128(pos))));
    _mm256_maskstore_epi64(reinterpret_cast<long long*>(ind + o + 4), mhi, _mm256_add_epi64(base64, _mm256_cvtepi32_epi64(_mm256_extracti128_si256(pos, 1))));
  }
  return n;
}
#endif

// Max-pool window bounds per output row and column, as PyTorch: [start, end) clipped to the input,
// the start moved to the first tap inside (taps are dilation apart); adaptive: the average pool's
// adaptive windows (kernels.h avg_pool_window), taps 1 apart.
struct MaxWindows {
  std::vector<int64_t> hs, he, ws, we;
  explicit MaxWindows(const Pool2dGeometry& g) : hs(g.OH), he(g.OH), ws(g.OW), we(g.OW) {
    if (g.adaptive) {
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        const PoolWindow w = avg_pool_window(g, oh, 0);
        hs[oh] = w.hs;
        he[oh] = w.he;
      }
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const PoolWindow w = avg_pool_window(g, 0, ow);
        ws[ow] = w.ws;
        we[ow] = w.we;
      }
      return;
    }
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      int64_t s = oh * g.sh - g.ph;
      he[oh] = std::min(s + (g.kH - 1) * g.dh + 1, g.H);
      while (s < 0) s += g.dh;
      hs[oh] = s;
    }
    for (int64_t ow = 0; ow < g.OW; ++ow) {
      int64_t s = ow * g.sw - g.pw;
      we[ow] = std::min(s + (g.kW - 1) * g.dw + 1, g.W);
      while (s < 0) s += g.dw;
      ws[ow] = s;
    }
  }  // The most pixels one window spans (a work estimate: adaptive windows differ in size).
  int64_t largest_area() const {
    int64_t h = 0, w = 0;
    for (size_t i = 0; i < hs.size(); ++i) h = std::max(h, he[i] - hs[i]);
    for (size_t i = 0; i < ws.size(); ++i) w = std::max(w, we[i] - ws[i]);
    return h * w;
  }
};

// Channels-last max pool: output pixel (n, oh, ow) takes, channel by channel, the first maximum of
// its window's pixels (a NaN taking over as in the planes' loop), all channels at once. Rows of
// output pixels run in parallel; f16/bf16 input rows are widened once per output row.
template <class T>
void max_pool_forward_channels_last(const Tensor& y, const Tensor& indices, const Tensor& x, const Pool2dGeometry& g) {
  using C = compute_t<T>;
  const T* xp = x.data_ptr<T>();
  T* yp = y.data_ptr<T>();
  int64_t* ip = indices.data_ptr<int64_t>();
  const MaxWindows win(g);
  const int64_t Cn = g.C, row = g.W * Cn;
  parallel_for(g.N * g.OH, std::max<int64_t>(1, g.OW * win.largest_area() * Cn), [&](int64_t r0, int64_t r1) {
    std::vector<C> in, out(static_cast<size_t>(g.OW * Cn));
    // The running maxima's positions as int32 (a plane has fewer than 2^31 pixels): the same lane
    // width as f32, so the channel loop vectorizes (with int64 positions it stayed scalar).
    std::vector<int32_t> pos(static_cast<size_t>(Cn));
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / g.OH, oh = r % g.OH, h0 = win.hs[oh], h1 = win.he[oh];
      // The window's input rows h0 .. h1 of image n as compute-type values (f32: in place).
      const C* rows;
      if constexpr (std::is_same_v<T, C>) {
        rows = xp + (n * g.H + h0) * row;
      } else {
        in.resize(static_cast<size_t>(std::max<int64_t>(0, h1 - h0) * row));
        load_block(xp + (n * g.H + h0) * row, in.data(), static_cast<int64_t>(in.size()));
        rows = in.data();
      }
      int64_t* ind = ip + r * g.OW * Cn;
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const int64_t w0 = win.ws[ow], w1 = win.we[ow];
        C* __restrict m = out.data() + ow * Cn;
        int32_t* __restrict best = pos.data();
        const C* __restrict first = rows + w0 * Cn;
        const int32_t at0 = static_cast<int32_t>(h0 * g.W + w0);
        for (int64_t c = 0; c < Cn; ++c) {
          m[c] = first[c];
          best[c] = at0;
        }
        for (int64_t ih = h0; ih < h1; ih += g.dh)
          for (int64_t iw = w0; iw < w1; iw += g.dw) {
            if (ih == h0 && iw == w0) continue;
            const C* __restrict v = rows + (ih - h0) * row + iw * Cn;
            const int32_t at = static_cast<int32_t>(ih * g.W + iw);
            for (int64_t c = 0; c < Cn; ++c) {
              const bool take = v[c] > m[c] || v[c] != v[c];
              m[c] = take ? v[c] : m[c];
              best[c] = take ? at : best[c];
            }
          }
        int64_t* out_pos = ind + ow * Cn;
        for (int64_t c = 0; c < Cn; ++c) out_pos[c] = best[c];
      }
      store_block(out.data(), yp + r * g.OW * Cn, g.OW * Cn);
    }
  });
}

// Channels-last max-pool backward: each image's gradient summed in f32 (an image at a time, in
// parallel over images), gy's channels scattered to the pixels their indices name.
template <class T>
void max_pool_backward_channels_last(const Tensor& gx, const Tensor& gy, const Tensor& indices, const Pool2dGeometry& g) {
  using C = compute_t<T>;
  const T* gyp = gy.data_ptr<T>();
  T* gxp = gx.data_ptr<T>();
  const int64_t* ip = indices.data_ptr<int64_t>();
  const int64_t Cn = g.C, in_image = g.H * g.W * Cn, out_image = g.OH * g.OW * Cn;
  parallel_for(g.N, std::max<int64_t>(1, in_image + out_image), [&](int64_t n0, int64_t n1) {
    std::vector<C> acc(static_cast<size_t>(in_image)), gin;
    for (int64_t n = n0; n < n1; ++n) {
      const C* gv;
      if constexpr (std::is_same_v<T, C>) {
        gv = gyp + n * out_image;
      } else {
        gin.resize(static_cast<size_t>(out_image));
        load_block(gyp + n * out_image, gin.data(), out_image);
        gv = gin.data();
      }
      std::fill(acc.begin(), acc.end(), C(0));
      const int64_t* ind = ip + n * out_image;
      for (int64_t o = 0; o < g.OH * g.OW; ++o)
        for (int64_t c = 0; c < Cn; ++c) {
          const int64_t i = ind[o * Cn + c];
          if (static_cast<uint64_t>(i) < static_cast<uint64_t>(g.H * g.W)) acc[i * Cn + c] += gv[o * Cn + c];  // see max_pool_backward
        }
      store_block(acc.data(), gxp + n * in_image, in_image);
    }
  });
}

template <class T>
void max_pool_forward(const Tensor& y, const Tensor& indices, const Tensor& x, const Pool2dGeometry& g) {
  if (x.suggest_memory_format() == MemoryFormat::ChannelsLast) return max_pool_forward_channels_last<T>(y, indices, x, g);
  using C = compute_t<T>;
  constexpr bool widen = !std::is_same_v<T, C>;
  const T* xp = x.data_ptr<T>();
  T* yp = y.data_ptr<T>();
  int64_t* ip = indices.data_ptr<int64_t>();
  const int64_t HW = g.H * g.W, P = g.OH * g.OW;
  const MaxWindows win(g);
  const std::vector<int64_t>&hs = win.hs, &he = win.he, &ws = win.ws, &we = win.we;
  const bool unit = g.dh == 1 && g.dw == 1;
  // 2x2 windows, stride 2, no padding: whole rows go through the branch-free loop; the output
  // columns whose window is complete are [0, full_w).
  const bool fast2x2 = unit && g.kH == 2 && g.kW == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0;
  const int64_t full_w = std::min(g.OW, g.W / 2);
  for_each_plane<C>(g, [&](int64_t p, std::vector<C>& in_buf, std::vector<C>& out_buf) {
    const C* xin = load_plane(xp, p, HW, in_buf);
    C* out;
    if constexpr (widen) {
      out_buf.resize(P);
      out = out_buf.data();
    } else {
      out = yp + p * P;
    }
    int64_t* ind = ip + p * P;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const int64_t h0 = hs[oh], h1 = he[oh];
      int64_t ow = 0;
      if (fast2x2 && h1 - h0 == 2) ow = max_row_2x2(xin + h0 * g.W, g.W, h0 * g.W, full_w, out + oh * g.OW, ind + oh * g.OW);
      for (; ow < g.OW; ++ow) {
        const int64_t w0 = ws[ow], w1 = we[ow];
        // The first maximum wins; a NaN wins over everything after it (PyTorch's comparison).
        int64_t best = h0 * g.W + w0;
        C m;
        auto take = [&](C v, int64_t i) {
          if (v > m || std::isnan(v)) {
            m = v;
            best = i;
          }
        };
        if (unit && h1 - h0 == 2 && w1 - w0 == 2) {  // the common 2x2 window, unrolled
          m = xin[best];
          const int64_t b = best;
          take(xin[b + 1], b + 1);
          take(xin[b + g.W], b + g.W);
          take(xin[b + g.W + 1], b + g.W + 1);
        } else {
          m = -std::numeric_limits<C>::infinity();
          for (int64_t ih = h0; ih < h1; ih += g.dh)
            for (int64_t iw = w0; iw < w1; iw += g.dw) take(xin[ih * g.W + iw], ih * g.W + iw);
        }
        out[oh * g.OW + ow] = m;
        ind[oh * g.OW + ow] = best;
      }
    }
    if constexpr (widen) store_block(out_buf.data(), yp + p * P, P);
  });
}

template <class T>
void max_pool_backward(const Tensor& gx, const Tensor& gy, const Tensor& indices, const Pool2dGeometry& g) {
  if (gy.suggest_memory_format() == MemoryFormat::ChannelsLast) return max_pool_backward_channels_last<T>(gx, gy, indices, g);
  using C = compute_t<T>;
  const T* gyp = gy.data_ptr<T>();
  T* gxp = gx.data_ptr<T>();
  const int64_t* ip = indices.data_ptr<int64_t>();
  const int64_t HW = g.H * g.W, P = g.OH * g.OW;
  for_each_plane<C>(g, [&](int64_t p, std::vector<C>& in_buf, std::vector<C>& out_buf) {
    const C* gin = load_plane(gyp, p, P, in_buf);
    out_buf.assign(HW, C(0));
    const int64_t* ind = ip + p * P;
    // A window wholly inside the padding (possible within PyTorch's own padding limits, e.g. a
    // dilated kernel) has the index PyTorch gives it, past the plane: its gradient goes nowhere.
    for (int64_t o = 0; o < P; ++o)
      if (static_cast<uint64_t>(ind[o]) < static_cast<uint64_t>(HW)) out_buf[ind[o]] += gin[o];
    store_block(out_buf.data(), gxp + p * HW, HW);
  });
}

template <class T>
void avg_pool_forward(const Tensor& y, const Tensor& x, const Pool2dGeometry& g) {
  using C = compute_t<T>;
  const T* xp = x.data_ptr<T>();
  T* yp = y.data_ptr<T>();
  const int64_t HW = g.H * g.W, P = g.OH * g.OW;
  for_each_plane<C>(g, [&](int64_t p, std::vector<C>& in_buf, std::vector<C>& out_buf) {
    const C* xin = load_plane(xp, p, HW, in_buf);
    out_buf.resize(P);
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const PoolWindow w = avg_pool_window(g, oh, ow);
        C s = 0;
        for (int64_t ih = w.hs; ih < w.he; ++ih)
          for (int64_t iw = w.ws; iw < w.we; ++iw) s += xin[ih * g.W + iw];
        out_buf[oh * g.OW + ow] = (w.hs >= w.he || w.ws >= w.we) ? C(0) : static_cast<C>(s / static_cast<C>(w.divisor));
      }
    store_block(out_buf.data(), yp + p * P, P);
  });
}

template <class T>
void avg_pool_backward(const Tensor& gx, const Tensor& gy, const Pool2dGeometry& g) {
  using C = compute_t<T>;
  const T* gyp = gy.data_ptr<T>();
  T* gxp = gx.data_ptr<T>();
  const int64_t HW = g.H * g.W, P = g.OH * g.OW;
  for_each_plane<C>(g, [&](int64_t p, std::vector<C>& in_buf, std::vector<C>& out_buf) {
    const C* gin = load_plane(gyp, p, P, in_buf);
    out_buf.assign(HW, C(0));
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const PoolWindow w = avg_pool_window(g, oh, ow);
        if (w.hs >= w.he || w.ws >= w.we) continue;
        const C v = gin[oh * g.OW + ow] / static_cast<C>(w.divisor);
        for (int64_t ih = w.hs; ih < w.he; ++ih)
          for (int64_t iw = w.ws; iw < w.we; ++iw) out_buf[ih * g.W + iw] += v;
      }
    store_block(out_buf.data(), gxp + p * HW, HW);
  });
}

void max_fwd(const Tensor& y, const Tensor& indices, const Tensor& x, const Pool2dGeometry& g) {
  visit_floating(x.dtype(), "max_pool2d", [&]<class T>() { max_pool_forward<T>(y, indices, x, g); });
}
void max_bwd(const Tensor& gx, const Tensor& gy, const Tensor& indices, const Pool2dGeometry& g) {
  visit_floating(gy.dtype(), "max_pool2d_backward", [&]<class T>() { max_pool_backward<T>(gx, gy, indices, g); });
}
void avg_fwd(const Tensor& y, const Tensor& x, const Pool2dGeometry& g) {
  visit_floating(x.dtype(), "avg_pool2d", [&]<class T>() { avg_pool_forward<T>(y, x, g); });
}
void avg_bwd(const Tensor& gx, const Tensor& gy, const Pool2dGeometry& g) {
  visit_floating(gy.dtype(), "avg_pool2d_backward", [&]<class T>() { avg_pool_backward<T>(gx, gy, g); });
}
}  // namespace

void register_pool(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    r.max_pool2d.set(DeviceType::CPU, t, max_fwd);
    r.max_pool2d_backward.set(DeviceType::CPU, t, max_bwd);
    r.avg_pool2d.set(DeviceType::CPU, t, avg_fwd);
    r.avg_pool2d_backward.set(DeviceType::CPU, t, avg_bwd);
  }
}

}  // namespace minidl::kernels::cpu
