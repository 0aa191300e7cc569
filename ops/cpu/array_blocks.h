// Eigen array expressions evaluated the same way wherever their values lie in memory.
//
// Eigen evaluates an expression over a Map of unknown alignment in three parts: coefficient by
// coefficient up to the first packet-aligned address, whole packets from there, and the rest
// coefficient by coefficient; its reductions (sum, maxCoeff) start their packets at the first
// aligned element too. The scalar and packet forms of a transcendental function differ (std::exp
// and Eigen's packet exp disagree by an ulp on a few percent of f32 inputs), and a sum's order
// follows where its packets start, so such an expression over a tensor or a heap buffer (malloc
// aligns to 16 bytes) gave results that depended on the address modulo 64: a training run's bits
// changed with the lengths of its argument strings, which move the heap.
//
// Here values are evaluated in 64-byte aligned blocks whose length is padded to whole 64-byte lines
// (a whole number of packets in every kernel set: SSE2, AVX2 and AVX-512), through maps that
// declare that alignment, so every coefficient takes the packet path. The padding repeats the
// block's last value: a min/max check over the whole block sees no value that is not in it.
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>

namespace minidl::kernels::cpu {

// Values per block: a few blocks of f32 or f64 stay in L1/L2.
inline constexpr int64_t kArrayBlock = 2048;

// Eigen array views of an aligned block (its padded length).
template <class C>
using AlignedArray = Eigen::Map<Eigen::Array<C, Eigen::Dynamic, 1>, Eigen::Aligned64>;
template <class C>
using ConstAlignedArray = Eigen::Map<const Eigen::Array<C, Eigen::Dynamic, 1>, Eigen::Aligned64>;

// One block of values on a 64-byte boundary (a local: the stack is realigned for it).
template <class C>
struct alignas(64) ArrayBlock {
  C v[kArrayBlock];
};

// m rounded up to whole 64-byte lines of C (at most kArrayBlock for m <= kArrayBlock).
template <class C>
constexpr int64_t padded_length(int64_t m) {
  constexpr int64_t line = 64 / static_cast<int64_t>(sizeof(C));
  static_assert(kArrayBlock % line == 0);
  return (m + line - 1) / line * line;
}

// Repeats v[m - 1] up to padded_length(m) and returns that length (0 when m is 0).
template <class C>
int64_t pad_block(C* v, int64_t m) {
  const int64_t p = padded_length<C>(m);
  if (m > 0) std::fill(v + m, v + p, v[m - 1]);
  return p;
}

// y[0, n) <- f over x[0, n) block by block: f(ConstAlignedArray<C> in, AlignedArray<C> out)
// assigns an element-wise Eigen expression of `in` to `out` (and may fix single coefficients
// after). x and y may be the same array; each block is copied in and out.
template <class C, class F>
void eval_blocks(const C* x, C* y, int64_t n, F&& f) {
  ArrayBlock<C> in, out;
  for (int64_t s = 0; s < n; s += kArrayBlock) {
    const int64_t m = std::min(kArrayBlock, n - s);
    std::copy(x + s, x + s + m, in.v);
    const int64_t p = pad_block(in.v, m);
    f(ConstAlignedArray<C>(in.v, p), AlignedArray<C>(out.v, p));
    std::copy(out.v, out.v + m, y + s);
  }
}

}  // namespace minidl::kernels::cpu
