// Bulk f16/bf16 <-> f32 conversions (F16C / bit shifts, vectorized), the inner loop of every
// low-precision CPU kernel: each block of f16/bf16 data is widened to f32, computed on, and narrowed
// back. Part of the kernel layer, so built once per instruction set like the kernels that call it.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "framework/half.h"

namespace minidl {

// Bulk conversions. n may be any size; the vector paths cover multiples of 8/16.
void half_to_float(const half* src, float* dst, int64_t n);
void float_to_half(const float* src, half* dst, int64_t n);
void bf16_to_float(const bfloat16* src, float* dst, int64_t n);
void float_to_bf16(const float* src, bfloat16* dst, int64_t n);  // round to nearest even

// Generic load/store of a block as compute type (no-op copies for f32/f64).
template <class T>
inline void load_block(const T* src, compute_t<T>* dst, int64_t n) {
  if constexpr (std::is_same_v<T, half>) half_to_float(src, dst, n);
  else if constexpr (std::is_same_v<T, bfloat16>) bf16_to_float(src, dst, n);
  else std::memcpy(dst, src, n * sizeof(T));
}
template <class T>
inline void store_block(const compute_t<T>* src, T* dst, int64_t n) {
  if constexpr (std::is_same_v<T, half>) float_to_half(src, dst, n);
  else if constexpr (std::is_same_v<T, bfloat16>) float_to_bf16(src, dst, n);
  else std::memcpy(dst, src, n * sizeof(T));
}

// rows x cols f32 values (row stride src_ld) narrowed to T (f16 or bf16, rounded as store_block)
// into dst (row stride dst_ld) with streaming stores, which write whole cache lines without
// fetching them first. For a block whose lines another core holds: a plain store first
// fetches each line from there, and a loop with nothing else to do waits for every fetch (a slab of
// a narrowed GEMM result, 256 x 432 f16, took 3.5-4x as long; bench/README.md, performance log 31).
// Not for data this core will read again soon: streamed lines leave its cache. The values are
// visible to other threads on return (a store fence ends it).
template <class T>
void store_rows_streaming(const float* src, int64_t src_ld, T* dst, int64_t dst_ld, int64_t rows, int64_t cols);

// Images of NCHW f32/f16/bf16 data to f32 in a channel-blocked layout and back: oneDNN's nChw8c /
// nChw16c (block 8 or 16), the channels in groups of `block`, each group stored pixel by pixel with
// its channels side by side. A last partial group is padded with zeros when widening and skipped
// when narrowing. f16/bf16: one pass instead of a flat conversion followed by a layout reorder.
// f32: a copy through 8 x 8 register transposes (bench/README.md, performance log 12).
template <class T>
void widen_to_channel_blocks(const T* src, float* dst, int64_t images, int64_t C, int64_t HW, int64_t block);
template <class T>
void narrow_from_channel_blocks(const float* src, T* dst, int64_t images, int64_t C, int64_t HW, int64_t block);

}  // namespace minidl
