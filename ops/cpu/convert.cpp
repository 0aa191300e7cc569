// Bulk f16/bf16 <-> f32 conversions, the inner loop of every low-precision kernel (each block of
// f16/bf16 data is widened to f32, computed on, and narrowed back). Explicit AVX-512 and AVX2 paths
// (the kernel set built for each instruction set takes its own) with masked tails, so short rows (a
// kernel's 256-element blocks, a 10-wide logits row) never fall back to scalar code; scalar code
// only in the baseline set. bf16 narrowing rounds to nearest even in integer arithmetic and quiets
// NaNs, bit-identical to the scalar path; where the CPU has AVX512_BF16 (checked at run time) its
// conversion instruction takes the blocks without subnormals, which it would flush to zero.
#include "ops/cpu/convert.h"

#include <algorithm>
#include <bit>

#include "framework/cpu_features.h"

#if defined(__SSE2__)
#include <emmintrin.h>  // the streaming store and fence: every x86-64 kernel set has them
#endif

#if defined(__F16C__) || defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace minidl {

namespace {
// Scalar bf16 rounding: round to nearest, ties to even; NaN keeps its sign and top payload, quieted.
inline uint16_t bf16_round(uint32_t u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
inline __mmask16 tail_mask16(int64_t r) { return static_cast<__mmask16>((1u << r) - 1u); }

// 16 f32 bit patterns -> 16 bf16 bit patterns in the low 16 bits of each lane.
inline __m512i bf16_round16(__m512i u) {
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_blend_epi32(nan, rounded, quiet);
}
#endif
#if defined(__AVX2__)
inline __m256i bf16_round8(__m256i u) {
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  // |u| > inf as a signed compare is exact: both sides are below 2^31.
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  return _mm256_blendv_epi8(rounded, quiet, nan);
}
#endif
}  // namespace

void half_to_float(const half* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  if (i < n) {
    const __mmask16 m = tail_mask16(n - i);
    _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, src + i)));
  }
  return;
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
  for (; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

void float_to_half(const float* src, half* dst, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
  // 256-bit conversions: the 512-bit form is slower on Zen 4 for cache-resident blocks.
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  if (i < n) {
    const __mmask8 m = static_cast<__mmask8>((1u << (n - i)) - 1u);
    _mm_mask_storeu_epi16(dst + i, m, _mm256_cvtps_ph(_mm256_maskz_loadu_ps(m, src + i), _MM_FROUND_TO_NEAREST_INT));
  }
  return;
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
#endif
  for (; i < n; ++i) dst[i] = half(src[i]);
}

void bf16_to_float(const bfloat16* src, float* dst, int64_t n) {
  const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
  [[maybe_unused]] uint32_t* d = reinterpret_cast<uint32_t*>(dst);  // the vector paths
  int64_t i = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
  for (; i + 16 <= n; i += 16) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
    _mm512_storeu_si512(d + i, _mm512_slli_epi32(w, 16));
  }
  if (i < n) {
    const __mmask16 m = tail_mask16(n - i);
    _mm512_mask_storeu_epi32(d + i, m, _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, s + i)), 16));
  }
  return;
#elif defined(__AVX2__)
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm256_slli_epi32(w, 16));
  }
#endif
  // Scalar code reads and writes the floats as floats (bit_cast): through the uint32_t view it would
  // break strict aliasing, and an inlined one-element call then read a value the compiler never stored.
  for (; i < n; ++i) dst[i] = std::bit_cast<float>(static_cast<uint32_t>(s[i]) << 16);
}

namespace {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
// Whether this CPU has AVX512_BF16: the AVX-512 kernel set is built without it (Xeons before Cooper
// Lake lack it), so the one function that uses it is compiled for it alone and called after a check.
bool has_avx512_bf16() {
  static const bool has = cpu_features().avx512_bf16;
  return has;
}

// The leading multiple of 32 of n through the hardware conversion; returns how many were converted.
// It matches ours except on subnormal inputs, which it flushes to zero: blocks holding one take the
// integer path.
__attribute__((target("avx512bf16"))) int64_t float_to_bf16_avx512bf16(const uint32_t* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512i u0 = _mm512_loadu_si512(s + i), u1 = _mm512_loadu_si512(s + i + 16);
    const __m512i expo = _mm512_set1_epi32(0x7f800000), absm = _mm512_set1_epi32(0x7fffffff);
    const __mmask16 sub0 = _mm512_cmpeq_epi32_mask(_mm512_and_si512(u0, expo), _mm512_setzero_si512()) &
                           _mm512_test_epi32_mask(u0, absm);
    const __mmask16 sub1 = _mm512_cmpeq_epi32_mask(_mm512_and_si512(u1, expo), _mm512_setzero_si512()) &
                           _mm512_test_epi32_mask(u1, absm);
    if (__builtin_expect((sub0 | sub1) == 0, 1)) {
      const __m512bh r = _mm512_cvtne2ps_pbh(_mm512_castsi512_ps(u1), _mm512_castsi512_ps(u0));
      _mm512_storeu_si512(d + i, reinterpret_cast<__m512i>(r));
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm512_cvtepi32_epi16(bf16_round16(u0)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 16), _mm512_cvtepi32_epi16(bf16_round16(u1)));
    }
  }
  return i;
}
#endif
}  // namespace

void float_to_bf16(const float* src, bfloat16* dst, int64_t n) {
  [[maybe_unused]] const uint32_t* s = reinterpret_cast<const uint32_t*>(src);  // the vector paths
  uint16_t* d = reinterpret_cast<uint16_t*>(dst);
  int64_t i = 0;
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
  if (has_avx512_bf16()) i = float_to_bf16_avx512bf16(s, d, n);
  for (; i + 16 <= n; i += 16) {
    const __m512i r = bf16_round16(_mm512_loadu_si512(s + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm512_cvtepi32_epi16(r));
  }
  if (i < n) {
    const __mmask16 m = tail_mask16(n - i);
    _mm512_mask_cvtepi32_storeu_epi16(d + i, m, bf16_round16(_mm512_maskz_loadu_epi32(m, s + i)));
  }
  return;
#elif defined(__AVX2__)
  // 16 at a time: one pack of two rounded vectors fills a whole store (1.2x the 8-wide loop on data
  // in cache; equal on data from memory).
  for (; i + 16 <= n; i += 16) {
    const __m256i r0 = bf16_round8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
    const __m256i r1 = bf16_round8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 8)));
    // Lanes hold values < 2^16: an unsigned-saturating pack is exact; fix the per-128-bit order.
    const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(r0, r1), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), p);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256i r = bf16_round8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
    const __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_castsi256_si128(p));
  }
#endif
  for (; i < n; ++i) d[i] = bf16_round(std::bit_cast<uint32_t>(src[i]));  // bit_cast: see bf16_to_float
}

template <class T>
void store_rows_streaming(const float* src, int64_t src_ld, T* dst, int64_t dst_ld, int64_t rows, int64_t cols) {
#if !defined(__SSE2__)
  for (int64_t r = 0; r < rows; ++r) store_block(src + r * src_ld, dst + r * dst_ld, cols);
#else
  constexpr int64_t kPerStore = 16 / sizeof(T);  // values in one 16-byte streaming store
  constexpr int64_t kChunk = 256;
  alignas(64) T chunk[kChunk];
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = src + r * src_ld;
    T* out = dst + r * dst_ld;
    // Plain stores up to the first 16-byte boundary (T is naturally aligned, so one is reached) and
    // after the last; in between, each piece rounded into `chunk` (in L1) by the same conversion as
    // store_block, then streamed out.
    const auto misalign = static_cast<int64_t>(reinterpret_cast<uintptr_t>(out) % 16);
    int64_t i = std::min(cols, (16 - misalign) % 16 / static_cast<int64_t>(sizeof(T)));
    store_block(in, out, i);
    while (cols - i >= kPerStore) {
      const int64_t len = std::min(kChunk, (cols - i) / kPerStore * kPerStore);
      store_block(in + i, chunk, len);
      for (int64_t j = 0; j < len; j += kPerStore)
        _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + j), _mm_load_si128(reinterpret_cast<const __m128i*>(chunk + j)));
      i += len;
    }
    store_block(in + i, out + i, cols - i);
  }
  _mm_sfence();  // streaming stores are weakly ordered: complete them before another thread reads
#endif
}
template void store_rows_streaming<half>(const float*, int64_t, half*, int64_t, int64_t, int64_t);
template void store_rows_streaming<bfloat16>(const float*, int64_t, bfloat16*, int64_t, int64_t, int64_t);

namespace {
#if defined(__AVX2__) && defined(__F16C__)
// 8 f16/bf16 values widened, 8 f32 narrowed (bf16: round to nearest even, NaN quieted, as above);
// f32 as it is, for the channel-block copies below.
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline void store8(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
inline __m256 load8(const half* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline __m256 load8(const bfloat16* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
inline void store8(half* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
inline void store8(bfloat16* p, __m256 v) {
  const __m256i r = bf16_round8(_mm256_castps_si256(v));
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
}

// An 8 x 8 f32 transpose in registers: r[i] holds row i before, column i after.
inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}
#endif
}  // namespace

// Both directions go 8 pixels x 8 channels at a time through an in-register transpose where the
// set has AVX2 (a 16-channel block is two such halves); the last pixels of a plane, and every
// pixel in the baseline set, one at a time.
namespace {
// Calls f(planes, block_data, channels) for each channel group of each image: planes is the offset
// of the group's first NCHW plane, block_data that of its blocked copy, channels how many of its
// `block` channels exist (fewer in a last, padded group).
template <class F>
void for_each_channel_group(int64_t images, int64_t C, int64_t HW, int64_t block, F&& f) {
  const int64_t groups = (C + block - 1) / block;
  for (int64_t n = 0; n < images; ++n)
    for (int64_t cb = 0; cb < groups; ++cb)
      f((n * C + cb * block) * HW, (n * groups + cb) * HW * block, std::min(block, C - cb * block));
}
}  // namespace

template <class T>
void widen_to_channel_blocks(const T* src, float* dst, int64_t images, int64_t C, int64_t HW, int64_t block) {
  for_each_channel_group(images, C, HW, block, [&](int64_t planes, int64_t blocked, int64_t nc) {
    const T* in = src + planes;
    float* out = dst + blocked;
    int64_t p = 0;
#if defined(__AVX2__) && defined(__F16C__)
    for (; p + 8 <= HW; p += 8)
      for (int64_t h = 0; h < block; h += 8) {
        __m256 r[8];
        for (int64_t i = 0; i < 8; ++i) r[i] = h + i < nc ? load8(in + (h + i) * HW + p) : _mm256_setzero_ps();
        transpose8(r);
        for (int64_t i = 0; i < 8; ++i) _mm256_storeu_ps(out + (p + i) * block + h, r[i]);
      }
#endif
    for (; p < HW; ++p)
      for (int64_t c = 0; c < block; ++c) out[p * block + c] = c < nc ? static_cast<float>(in[c * HW + p]) : 0.0f;
  });
}

template <class T>
void narrow_from_channel_blocks(const float* src, T* dst, int64_t images, int64_t C, int64_t HW, int64_t block) {
  for_each_channel_group(images, C, HW, block, [&](int64_t planes, int64_t blocked, int64_t nc) {
    const float* in = src + blocked;
    T* out = dst + planes;
    int64_t p = 0;
#if defined(__AVX2__) && defined(__F16C__)
    for (; p + 8 <= HW; p += 8)
      for (int64_t h = 0; h < nc; h += 8) {
        __m256 r[8];
        for (int64_t i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(in + (p + i) * block + h);
        transpose8(r);
        for (int64_t i = 0; i < 8 && h + i < nc; ++i) store8(out + (h + i) * HW + p, r[i]);
      }
#endif
    for (; p < HW; ++p)
      for (int64_t c = 0; c < nc; ++c) out[c * HW + p] = static_cast<T>(in[p * block + c]);  // rounds as the bulk paths
  });
}

template void widen_to_channel_blocks<float>(const float*, float*, int64_t, int64_t, int64_t, int64_t);
template void narrow_from_channel_blocks<float>(const float*, float*, int64_t, int64_t, int64_t, int64_t);
template void widen_to_channel_blocks<half>(const half*, float*, int64_t, int64_t, int64_t, int64_t);
template void widen_to_channel_blocks<bfloat16>(const bfloat16*, float*, int64_t, int64_t, int64_t, int64_t);
template void narrow_from_channel_blocks<half>(const float*, half*, int64_t, int64_t, int64_t, int64_t);
template void narrow_from_channel_blocks<bfloat16>(const float*, bfloat16*, int64_t, int64_t, int64_t, int64_t);

}  // namespace minidl
