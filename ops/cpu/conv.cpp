// CPU 2-D convolution: im2col + GEMM, for the forward, the input gradient (GEMM + col2im, i.e. a
// transposed convolution) and the weight gradient (GEMM against im2col, summed over the batch).
// Where the build has oneDNN, each call goes to ops/cpu/conv_dnnl.cpp first (1.2-1.7x faster on the
// zoo's layers, bench/README.md); this path runs what it declines (f64, small batches, no oneDNN).
// Images run in parallel on minidl's pool, one serial GEMM per image and group (ops/cpu/gemm.h:
// Eigen's kernels, never Eigen's own OpenMP threads); a batch smaller than the thread count runs
// image by image and each GEMM is split across the pool instead. A 1x1, stride-1, unpadded
// convolution skips im2col: the image already is the column matrix. f16/bf16 are widened to f32
// while packing (im2col converts as it copies) and narrowed once per output image.
// Column matrices are built in chunks of output rows of at most ~1 MiB (bounded scratch), and with
// AVX-512 a stride-1 row is one masked load/store per 16 columns (the short rows of small images
// cost most in im2col otherwise). The weight gradient sums one partial per thread, so its last bits
// depend on the thread count (deterministic for a given count).
#include <algorithm>
#include <numeric>
#include <vector>

#include "ops/cpu/conv_dnnl.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/loops.h"
#include "ops/cpu/scalar.h"
#include "ops/kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#define MINIDL_CONV_AVX512 1
#endif

#ifndef MINIDL_CONV_CHUNK_KB
#define MINIDL_CONV_CHUNK_KB 1024
#endif

namespace minidl::kernels::cpu {

namespace {

// Per-group sizes: K rows of the column matrix (Cg * kH * kW), P output pixels per image.
struct Dims {
  int64_t G, Cg, Og, K, P, HW;
  explicit Dims(const Conv2dGeometry& g)
      : G(g.groups), Cg(g.C / g.groups), Og(g.O / g.groups), K(g.C / g.groups * g.kH * g.kW), P(g.OH * g.OW),
        HW(g.H * g.W) {}
};

bool is_pointwise(const Conv2dGeometry& g) {
  return g.kH == 1 && g.kW == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 && g.OH == g.H && g.OW == g.W;
}

// Output columns ow with 0 <= ow*sw + off < W form the range [lo, hi).
inline void col_range(int64_t off, int64_t sw, int64_t W, int64_t OW, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
  hi = W - off <= 0 ? 0 : (W - off - 1) / sw + 1;
  hi = std::min(hi, OW);
  lo = std::min(lo, hi);
}

#ifdef MINIDL_CONV_AVX512
// Masked 16-lane row copies for the stride-1 im2col/col2im: one short output row (often 8-32
// columns) costs a few vector instructions instead of a copy loop, two fills and a scalar tail.
namespace avx512 {
// The lanes [a, b) of a 16-lane block (a, b clamped to [0, 16]).
inline __mmask16 lanes(int64_t a, int64_t b) {
  a = std::max<int64_t>(a, 0);
  b = std::min<int64_t>(b, 16);
  if (a >= b) return 0;
  const uint32_t upto_b = b == 16 ? 0xFFFFu : ((1u << b) - 1u);
  const uint32_t below_a = (1u << a) - 1u;
  return static_cast<__mmask16>(upto_b & ~below_a);
}
// 16 values widened to f32; lanes outside m read as 0 and are not accessed.
template <class T>
inline __m512 load16(const T* p, __mmask16 m) {
  if constexpr (std::is_same_v<T, float>) {
    return _mm512_maskz_loadu_ps(m, p);
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    const __m256i h = _mm256_maskz_loadu_epi16(m, p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  } else {
    static_assert(std::is_same_v<T, half>);
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
}
// r[k] <- row[k + off] for k in [lo, hi), 0 for the other k in [0, n). Reads only inside [lo, hi).
template <class T>
inline void gather_row(const T* row, int64_t off, float* r, int64_t n, int64_t lo, int64_t hi) {
  const auto base = reinterpret_cast<uintptr_t>(row);
  for (int64_t k = 0; k < n; k += 16) {
    const T* p = reinterpret_cast<const T*>(base + static_cast<uintptr_t>((off + k) * static_cast<int64_t>(sizeof(T))));
    _mm512_mask_storeu_ps(r + k, lanes(0, n - k), load16(p, lanes(lo - k, hi - k)));
  }
}
// row[k + off] += r[k] for k in [lo, hi) (0 <= lo).
inline void scatter_add_row(const float* r, float* row, int64_t off, int64_t lo, int64_t hi) {
  for (int64_t k = lo / 16 * 16; k < hi; k += 16) {
    const __mmask16 m = lanes(lo - k, hi - k);
    float* p = row + (off + k);
    _mm512_mask_storeu_ps(p, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, p), _mm512_maskz_loadu_ps(m, r + k)));
  }
}
}  // namespace avx512
#endif

// col [Cg*kH*kW, (oh1-oh0)*OW] <- the taps of the Cg channels at x for output rows [oh0, oh1)
// (zeros outside the input), widened to C.
template <class T, class C>
void im2col(const T* x, C* col, const Conv2dGeometry& g, int64_t Cg, int64_t oh0, int64_t oh1) {
  const int64_t Pc = (oh1 - oh0) * g.OW;
  for (int64_t c = 0; c < Cg; ++c)
    for (int64_t i = 0; i < g.kH; ++i)
      for (int64_t j = 0; j < g.kW; ++j) {
        C* row = col + ((c * g.kH + i) * g.kW + j) * Pc;
        const T* xc = x + c * g.H * g.W;
        const int64_t off = j * g.dw - g.pw;
        int64_t lo, hi;
        col_range(off, g.sw, g.W, g.OW, lo, hi);
#ifdef MINIDL_CONV_AVX512
        if constexpr (std::is_same_v<C, float>) {
          if (g.sw == 1) {
            for (int64_t oh = oh0; oh < oh1; ++oh) {
              const int64_t ih = oh * g.sh - g.ph + i * g.dh;
              const bool inside = ih >= 0 && ih < g.H;
              avx512::gather_row(xc + (inside ? ih : 0) * g.W, off, row + (oh - oh0) * g.OW, g.OW, inside ? lo : 0,
                                 inside ? hi : 0);
            }
            continue;
          }
        }
#endif
        for (int64_t oh = oh0; oh < oh1; ++oh) {
          C* r = row + (oh - oh0) * g.OW;
          const int64_t ih = oh * g.sh - g.ph + i * g.dh;
          if (ih < 0 || ih >= g.H || lo >= hi) {
            std::fill(r, r + g.OW, C(0));
            continue;
          }
          std::fill(r, r + lo, C(0));
          const T* xr = xc + ih * g.W;
          if (g.sw == 1) {
            if constexpr (std::is_same_v<T, C>) {  // short rows: an inline loop beats a memcpy call
              const T* src = xr + (lo + off);
              for (int64_t k = 0; k < hi - lo; ++k) r[lo + k] = src[k];
            } else {
              load_block(xr + (lo + off), r + lo, hi - lo);
            }
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) r[ow] = static_cast<C>(xr[ow * g.sw + off]);
          }
          std::fill(r + hi, r + g.OW, C(0));
        }
      }
}

// x [Cg, H, W] += the column matrix of output rows [oh0, oh1) folded back onto the input (the
// adjoint of im2col).
template <class C>
void col2im(const C* col, C* x, const Conv2dGeometry& g, int64_t Cg, int64_t oh0, int64_t oh1) {
  const int64_t Pc = (oh1 - oh0) * g.OW;
  for (int64_t c = 0; c < Cg; ++c)
    for (int64_t i = 0; i < g.kH; ++i)
      for (int64_t j = 0; j < g.kW; ++j) {
        const C* row = col + ((c * g.kH + i) * g.kW + j) * Pc;
        C* xc = x + c * g.H * g.W;
        const int64_t off = j * g.dw - g.pw;
        int64_t lo, hi;
        col_range(off, g.sw, g.W, g.OW, lo, hi);
        if (lo >= hi) continue;
        for (int64_t oh = oh0; oh < oh1; ++oh) {
          const int64_t ih = oh * g.sh - g.ph + i * g.dh;
          if (ih < 0 || ih >= g.H) continue;
          const C* r = row + (oh - oh0) * g.OW;
#ifdef MINIDL_CONV_AVX512
          if constexpr (std::is_same_v<C, float>) {
            if (g.sw == 1) {
              avx512::scatter_add_row(r, xc + ih * g.W, off, lo, hi);
              continue;
            }
          }
#endif
          C* xr = xc + ih * g.W + off;
          if (g.sw == 1) {
            for (int64_t ow = lo; ow < hi; ++ow) xr[ow] += r[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) xr[ow * g.sw] += r[ow];
          }
        }
      }
}

// Output rows per column-matrix chunk: large images are processed in chunks of output rows so the
// per-thread column buffer stays within about one L2 (1 MiB here) instead of growing with the image
// (measured: no slower than whole-image columns on CIFAR shapes; smaller chunks, 128 KiB, are ~10%
// slower). A 1x1 stride-1 convolution needs no column matrix: one chunk.
int64_t chunk_rows(const Conv2dGeometry& g, int64_t K, size_t elem, bool direct) {
  constexpr int64_t kColBytes = MINIDL_CONV_CHUNK_KB * 1024;
  if (direct) return std::max<int64_t>(g.OH, 1);
  const int64_t row_bytes = std::max<int64_t>(1, K * g.OW * static_cast<int64_t>(elem));
  return std::clamp<int64_t>(kColBytes / row_bytes, 1, std::max<int64_t>(g.OH, 1));
}

// A tensor's elements in the compute type: its own buffer for f32/f64, else a widened copy in buf.
template <class T>
const compute_t<T>* as_compute(const Tensor& t, std::vector<compute_t<T>>& buf) {
  const T* p = t.data_ptr<T>();
  if constexpr (std::is_same_v<T, compute_t<T>>) {
    return p;
  } else {
    buf.resize(t.numel());
    load_block(p, buf.data(), t.numel());
    return buf.data();
  }
}

template <class C>
struct Scratch {
  std::vector<C> a, b;
};

// How many slots (threads, each with its own scratch and partial sums) a batch of n images uses:
// one per thread when every thread gets an image, else 1 (the GEMMs are split across threads then).
int image_slots(int64_t n) {
  const int nt = max_threads();
  return nt > 1 && n >= nt && !in_parallel() ? nt : 1;
}

// f(n, slot, scratch) for every image, the images cut into `slots` contiguous runs (image_slots(N)
// unless the caller sized per-slot buffers with it already), each run a pool chunk with slot = its index.
template <class C, class F>
void for_each_image(int64_t N, F&& f, int slots = 0) {
  if (slots == 0) slots = image_slots(N);
  parallel_chunks(slots, [&](int64_t slot) {
    Scratch<C> s;
    for (int64_t n = N * slot / slots; n < N * (slot + 1) / slots; ++n) f(n, static_cast<int>(slot), s);
  });
}

// The column matrix [K, Pc] for output rows [oh0, oh1) of one image's group xg: for a pointwise
// convolution the image itself when it is already in the compute type, else built in scratch
// (widened, and gathered by im2col unless pointwise).
template <class T, class C = compute_t<T>>
const C* column_chunk(const T* xg, const Conv2dGeometry& g, const Dims& d, bool direct, int64_t oh0, int64_t oh1,
                      std::vector<C>& scratch) {
  if constexpr (std::is_same_v<T, C>) {
    if (direct) return xg;
  }
  const int64_t Pc = (oh1 - oh0) * g.OW;
  scratch.resize(d.K * Pc);
  if (direct) load_block(xg, scratch.data(), d.K * Pc);
  else im2col(xg, scratch.data(), g, d.Cg, oh0, oh1);
  return scratch.data();
}

// Row-major matrices and their transposes, for gemm_raw.
template <class T>
MatrixRef<T> rows_of(const T* p, int64_t ld) { return {p, true, ld}; }
template <class T>
MatrixRef<T> transposed(const T* p, int64_t ld) { return {p, false, ld}; }

template <class T>
void conv2d_forward(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dGeometry& g) {
  using C = compute_t<T>;
  constexpr bool widen = !std::is_same_v<T, C>;
  const Dims d(g);
  std::vector<C> wbuf, bbuf;
  const C* wp = as_compute<T>(w, wbuf);
  const C* bp = b.defined() ? as_compute<T>(b, bbuf) : nullptr;
  const T* xp = x.data_ptr<T>();
  T* yp = y.data_ptr<T>();
  const bool direct = is_pointwise(g);
  const int64_t rows = chunk_rows(g, d.K, sizeof(C), direct);
  for_each_image<C>(g.N, [&](int64_t n, int, Scratch<C>& s) {
    for (int64_t grp = 0; grp < d.G; ++grp) {
      const T* xg = xp + (n * g.C + grp * d.Cg) * d.HW;
      T* yg = yp + (n * g.O + grp * d.Og) * d.P;
      C* out;
      if constexpr (widen) {
        s.b.resize(d.Og * d.P);
        out = s.b.data();
      } else {
        out = yg;
      }
      for (int64_t oh0 = 0; oh0 < g.OH; oh0 += rows) {
        const int64_t oh1 = std::min(g.OH, oh0 + rows), Pc = (oh1 - oh0) * g.OW;
        const C* colp = column_chunk(xg, g, d, direct, oh0, oh1, s.a);
        C* y = out + oh0 * g.OW;  // [Og, Pc] with row stride P
        if (bp)
          for (int64_t o = 0; o < d.Og; ++o) std::fill_n(y + o * d.P, Pc, bp[grp * d.Og + o]);
        gemm_raw<C>(d.Og, Pc, d.K, rows_of(wp + grp * d.Og * d.K, d.K), rows_of(colp, Pc), y, d.P, C(1), bp ? C(1) : C(0));
      }
      if constexpr (widen) store_block(out, yg, d.Og * d.P);
    }
  });
}

template <class T>
void conv2d_input_grad(const Tensor& gx, const Tensor& gy, const Tensor& w, const Tensor& b, const Conv2dGeometry& g) {
  using C = compute_t<T>;
  constexpr bool widen = !std::is_same_v<T, C>;
  const Dims d(g);
  std::vector<C> wbuf, bbuf;
  const C* wp = as_compute<T>(w, wbuf);
  const C* bp = b.defined() ? as_compute<T>(b, bbuf) : nullptr;
  const T* gyp = gy.data_ptr<T>();
  T* gxp = gx.data_ptr<T>();
  const bool direct = is_pointwise(g);
  const int64_t rows = chunk_rows(g, d.K, sizeof(C), direct);
  for_each_image<C>(g.N, [&](int64_t n, int, Scratch<C>& s) {
    // s.a: the image's gradient (widened types only); s.b: the group's gy (widened types only)
    // followed by the column-matrix chunk.
    const int64_t img = g.C * d.HW;
    C* dst;
    if constexpr (widen) {
      s.a.resize(img);
      dst = s.a.data();
    } else {
      dst = gxp + n * img;
    }
    s.b.resize((widen ? d.Og * d.P : 0) + (direct ? 0 : d.K * rows * g.OW));
    C* gcol = s.b.data() + (widen ? d.Og * d.P : 0);
    if (!direct) std::fill(dst, dst + img, C(0));
    for (int64_t grp = 0; grp < d.G; ++grp) {
      const T* gyg = gyp + (n * g.O + grp * d.Og) * d.P;
      const C* gyc;
      if constexpr (widen) {
        load_block(gyg, s.b.data(), d.Og * d.P);
        gyc = s.b.data();
      } else {
        gyc = gyg;
      }
      C* dg = dst + grp * d.Cg * d.HW;
      const MatrixRef<C> wt = transposed(wp + grp * d.Og * d.K, d.K);  // [K, Og]
      if (direct) {
        gemm_raw<C>(d.K, d.P, d.Og, wt, rows_of(gyc, d.P), dg, d.P, C(1), C(0));
        continue;
      }
      if (d.Og == 0) continue;
      for (int64_t oh0 = 0; oh0 < g.OH; oh0 += rows) {
        const int64_t oh1 = std::min(g.OH, oh0 + rows), Pc = (oh1 - oh0) * g.OW;
        gemm_raw<C>(d.K, Pc, d.Og, wt, rows_of(gyc + oh0 * g.OW, d.P), gcol, Pc, C(1), C(0));
        col2im(gcol, dg, g, d.Cg, oh0, oh1);
      }
    }
    if (bp)
      for (int64_t c = 0; c < g.C; ++c) {
        C* r = dst + c * d.HW;
        for (int64_t i = 0; i < d.HW; ++i) r[i] += bp[c];
      }
    if constexpr (widen) store_block(dst, gxp + n * img, img);
  });
}

template <class T>
void conv2d_weight_grad(const Tensor& gw, const Tensor& gb, const Tensor& x, const Tensor& gy, const Conv2dGeometry& g) {
  using C = compute_t<T>;
  constexpr bool widen = !std::is_same_v<T, C>;
  const Dims d(g);
  const int64_t wn = g.O * d.K;
  const int64_t acc_n = wn + (gb.defined() ? g.O : 0);
  const int slots = image_slots(g.N);
  std::vector<C> acc(static_cast<size_t>(slots) * acc_n, C(0));
  const T* xp = x.data_ptr<T>();
  const T* gyp = gy.data_ptr<T>();
  const bool direct = is_pointwise(g);
  const int64_t rows = chunk_rows(g, d.K, sizeof(C), direct);
  for_each_image<C>(g.N, [&](int64_t n, int slot, Scratch<C>& s) {
    C* gw_acc = acc.data() + slot * acc_n;
    C* gb_acc = gb.defined() ? gw_acc + wn : nullptr;
    for (int64_t grp = 0; grp < d.G; ++grp) {
      const T* xg = xp + (n * g.C + grp * d.Cg) * d.HW;
      const T* gyg = gyp + (n * g.O + grp * d.Og) * d.P;
      const C* gyc = nullptr;
      if constexpr (!widen) {
        gyc = gyg;
      } else {
        s.b.resize(d.Og * d.P);
        load_block(gyg, s.b.data(), d.Og * d.P);
        gyc = s.b.data();
      }
      if (gb_acc)
        for (int64_t o = 0; o < d.Og; ++o) {
          const C* r = gyc + o * d.P;
          gb_acc[grp * d.Og + o] += static_cast<C>(std::accumulate(r, r + d.P, 0.0));  // f64: long rows
        }
      if (d.K == 0 || d.P == 0) continue;
      for (int64_t oh0 = 0; oh0 < g.OH; oh0 += rows) {
        const int64_t oh1 = std::min(g.OH, oh0 + rows), Pc = (oh1 - oh0) * g.OW;
        const C* colp = column_chunk(xg, g, d, direct, oh0, oh1, s.a);
        gemm_raw<C>(d.Og, d.K, Pc, rows_of(gyc + oh0 * g.OW, d.P), transposed(colp, Pc), gw_acc + grp * d.Og * d.K, d.K,
                    C(1), C(1));
      }
    }
  }, slots);
  for (int t = 1; t < slots; ++t)
    for (int64_t i = 0; i < acc_n; ++i) acc[i] += acc[t * acc_n + i];
  store_block(acc.data(), gw.data_ptr<T>(), wn);
  if (gb.defined()) store_block(acc.data() + wn, gb.data_ptr<T>(), g.O);
}

// This kernel set's conversions, for oneDNN's reorders (conv_dnnl.h). f16 and bf16 reach all four;
// f32 the channel-block copies.
template <class F>
void visit_low(DType type, F&& f) {
  if (type == DType::BF16) f.template operator()<bfloat16>();
  else f.template operator()<half>();
}
template <class F>
void visit_image(DType type, F&& f) {
  if (type == DType::F32) f.template operator()<float>();
  else visit_low(type, f);
}
const dnnl_conv::Conversions kConversions{
    [](const void* src, DType t, float* dst, int64_t n) {
      visit_low(t, [&]<class T>() { load_block(static_cast<const T*>(src), dst, n); });
    },
    [](const float* src, DType t, void* dst, int64_t n) {
      visit_low(t, [&]<class T>() { store_block(src, static_cast<T*>(dst), n); });
    },
    [](const void* src, DType t, float* dst, int64_t images, int64_t C, int64_t HW, int64_t block) {
      visit_image(t, [&]<class T>() { widen_to_channel_blocks(static_cast<const T*>(src), dst, images, C, HW, block); });
    },
    [](const float* src, DType t, void* dst, int64_t images, int64_t C, int64_t HW, int64_t block) {
      visit_image(t, [&]<class T>() { narrow_from_channel_blocks(src, static_cast<T*>(dst), images, C, HW, block); });
    }};

// The im2col path reads and writes NCHW images: a channels-last one (conv2d_channels_last said
// so, but oneDNN then declined the call) goes through an NCHW copy, and a channels-last result is
// computed into an NCHW buffer and copied into place.
Tensor nchw(const Tensor& t) { return t.defined() ? t.contiguous() : t; }
template <class F>
void into_nchw(const Tensor& out, F&& f) {
  if (!out.defined() || out.is_contiguous()) return f(out);
  Tensor buf = empty(out.shape(), TensorOptions(out.dtype()));
  f(buf);
  out.copy_(buf);
}

// oneDNN first where the build has it and it takes the call (conv_dnnl.h), else im2col + GEMM.
void forward(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dGeometry& g) {
  if (dnnl_conv::forward(y, x, w, b, g, kConversions)) return;
  into_nchw(y, [&](const Tensor& yc) {
    visit_floating(x.dtype(), "conv2d", [&]<class T>() { conv2d_forward<T>(yc, nchw(x), w, b, g); });
  });
}
void input_grad(const Tensor& gx, const Tensor& gy, const Tensor& w, const Tensor& b, const Conv2dGeometry& g) {
  if (dnnl_conv::input_grad(gx, gy, w, b, g, kConversions)) return;
  into_nchw(gx, [&](const Tensor& gxc) {
    visit_floating(gy.dtype(), "conv2d_input_grad", [&]<class T>() { conv2d_input_grad<T>(gxc, nchw(gy), w, b, g); });
  });
}
void weight_grad(const Tensor& gw, const Tensor& gb, const Tensor& x, const Tensor& gy, const Conv2dGeometry& g) {
  if (dnnl_conv::weight_grad(gw, gb, x, gy, g, kConversions)) return;
  visit_floating(x.dtype(), "conv2d_weight_grad", [&]<class T>() { conv2d_weight_grad<T>(gw, gb, nchw(x), nchw(gy), g); });
}
// One oneDNN call sharing gy's reorder; the im2col path has nothing to share and runs the two.
void backward(const Tensor& gx, const Tensor& gw, const Tensor& gb, const Tensor& x, const Tensor& gy, const Tensor& w,
              const Conv2dGeometry& g) {
  if (dnnl_conv::backward(gx, gw, gb, x, gy, w, g, kConversions)) return;
  input_grad(gx, gy, w, Tensor(), g);
  weight_grad(gw, gb, x, gy, g);
}
}  // namespace

void register_conv(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    r.conv2d.set(DeviceType::CPU, t, forward);
    r.conv2d_input_grad.set(DeviceType::CPU, t, input_grad);
    r.conv2d_weight_grad.set(DeviceType::CPU, t, weight_grad);
    r.conv2d_backward.set(DeviceType::CPU, t, backward);
  }
  // f64 never runs on oneDNN: NCHW for it.
  for (DType t : {DType::F32, DType::F16, DType::BF16}) r.conv2d_channels_last.set(DeviceType::CPU, t, dnnl_conv::prefers_channels_last);
  r.conv2d_channels_last.set(DeviceType::CPU, DType::F64, [](const Conv2dGeometry&) { return false; });
}

}  // namespace minidl::kernels::cpu
