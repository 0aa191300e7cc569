// Eigen's sequential GEMM on f16/bf16 operands, widened to f32 while they are packed: the loop of
// Eigen's general_matrix_matrix_product (pack a panel of each operand, run the register-blocked
// kernel on them) with data mappers that convert as they load. The packed panels are f32 and the
// micro-kernel is Eigen's f32 one, so the products equal those of the operands widened first and
// multiplied in f32 (the path this replaces): the same packing order, the same kernel, the same sums.
// What it saves is a widened copy of each whole operand, written and read again (9% of a bf16 MLP
// step; bench/README.md, performance log 9). Only for gemm.cpp, which is built once per kernel set:
// the packet loads below use that set's instructions.
#pragma once
#include <immintrin.h>

#include <Eigen/Core>
#include <cstdint>
#include <type_traits>

#include "framework/half.h"
#include "ops/cpu/gemm_blocking.h"

namespace minidl::kernels::cpu::widening {

using Eigen::Index;

// The packet P of f32 widened from the contiguous f16/bf16 values at p.
template <class P, class S>
inline P load_packet(const S* p) {
  constexpr int n = Eigen::internal::unpacket_traits<P>::size;
  [[maybe_unused]] const void* raw = p;
  if constexpr (std::is_same_v<S, bfloat16>) {
    // bf16 is the top half of an f32: interleaving zeros below each value widens it exactly.
    if constexpr (n == 4) {
      return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), _mm_loadl_epi64(static_cast<const __m128i*>(raw))));
    }
#if defined(__AVX2__)
    if constexpr (n == 8) {
      const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(raw)));
      return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    }
#endif
#if defined(__AVX512F__)
    if constexpr (n == 16) {
      const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(static_cast<const __m256i*>(raw)));
      return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    }
#endif
  } else {
#if defined(__F16C__)
    if constexpr (n == 4) return _mm_cvtph_ps(_mm_loadl_epi64(static_cast<const __m128i*>(raw)));
    if constexpr (n == 8) return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(raw)));
#endif
#if defined(__AVX512F__)
    if constexpr (n == 16) return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(raw)));
#endif
  }
  // Sets without the instructions (the baseline set's f16): element by element.
  alignas(64) float t[n];
  for (int i = 0; i < n; ++i) t[i] = static_cast<float>(p[i]);
  return Eigen::internal::pload<P>(t);
}

// Eigen's BlasLinearMapper, reading S: element k of a run contiguous in memory.
template <class S>
class LinearMapper {
 public:
  explicit LinearMapper(const S* data) : data_(data) {}
  float operator()(Index k) const { return static_cast<float>(data_[k]); }
  template <class P>
  P loadPacket(Index k) const {
    return load_packet<P>(data_ + k);
  }

 private:
  const S* data_;
};

// Eigen's const_blas_data_mapper, reading S: element (i, j) of a matrix stored in Order with
// leading dimension `stride`.
template <class S, int Order>
class Mapper {
 public:
  using LinearMapper = widening::LinearMapper<S>;
  Mapper(const S* data, Index stride) : data_(data), stride_(stride) {}
  float operator()(Index i, Index j) const { return static_cast<float>(data_[offset(i, j)]); }
  template <class P>
  P loadPacket(Index i, Index j) const {
    return load_packet<P>(data_ + offset(i, j));
  }
  Mapper getSubMapper(Index i, Index j) const { return Mapper(data_ + offset(i, j), stride_); }
  LinearMapper getLinearMapper(Index i, Index j) const { return LinearMapper(data_ + offset(i, j)); }

 private:
  Index offset(Index i, Index j) const { return Order == Eigen::RowMajor ? i * stride_ + j : i + j * stride_; }
  const S* data_;
  Index stride_;
};

// res[rows x cols] (column-major, leading dim res_stride) += alpha * lhs * rhs: the sequential
// branch of Eigen's general_matrix_matrix_product<..., ColMajor>::run, with widening mappers.
template <class S, int LhsOrder, int RhsOrder>
void gemm_colmajor(Index rows, Index cols, Index depth, const S* lhs_data, Index lhs_stride, const S* rhs_data,
                   Index rhs_stride, float* res_data, Index res_stride, float alpha) {
  using namespace Eigen::internal;
  using Traits = gebp_traits<float, float>;
  using LhsMapper = Mapper<S, LhsOrder>;
  using RhsMapper = Mapper<S, RhsOrder>;
  using ResMapper = blas_data_mapper<float, Index, Eigen::ColMajor, Eigen::Unaligned, 1>;
  const LhsMapper lhs(lhs_data, lhs_stride);
  const RhsMapper rhs(rhs_data, rhs_stride);
  const ResMapper res(res_data, res_stride, 1);

  ReusedBlocking<Eigen::ColMajor, float> blocking(rows, cols, depth);
  const Index kc = blocking.kc(), mc = std::min(rows, blocking.mc()), nc = std::min(cols, blocking.nc());
  gemm_pack_lhs<float, Index, LhsMapper, Traits::mr, Traits::LhsProgress, typename Traits::LhsPacket4Packing, LhsOrder>
      pack_lhs;
  gemm_pack_rhs<float, Index, RhsMapper, Traits::nr, RhsOrder> pack_rhs;
  gebp_kernel<float, float, Index, ResMapper, Traits::mr, Traits::nr, false, false> gebp;
  // The thread's kept panels (gemm_blocking.h), as in Eigen's own loop through the same macro (it
  // names Eigen's `internal` unqualified).
  namespace internal = Eigen::internal;
  ei_declare_aligned_stack_constructed_variable(float, block_a, static_cast<size_t>(kc * mc), blocking.blockA());
  ei_declare_aligned_stack_constructed_variable(float, block_b, static_cast<size_t>(kc * nc), blocking.blockB());

  const bool pack_rhs_once = mc != rows && kc == depth && nc == cols;
  for (Index i2 = 0; i2 < rows; i2 += mc) {
    const Index actual_mc = std::min(i2 + mc, rows) - i2;
    for (Index k2 = 0; k2 < depth; k2 += kc) {
      const Index actual_kc = std::min(k2 + kc, depth) - k2;
      pack_lhs(block_a, lhs.getSubMapper(i2, k2), actual_kc, actual_mc);
      for (Index j2 = 0; j2 < cols; j2 += nc) {
        const Index actual_nc = std::min(j2 + nc, cols) - j2;
        if (!pack_rhs_once || i2 == 0) pack_rhs(block_b, rhs.getSubMapper(k2, j2), actual_kc, actual_nc);
        gebp(res.getSubMapper(i2, j2), block_a, block_b, actual_mc, actual_kc, actual_nc, alpha);
      }
    }
  }
}

// The same with the result in ResOrder: a row-major result is computed as its transpose,
// res^T = rhs^T * lhs^T (each operand's transpose is the same buffer in the other order), as
// Eigen's row-major general_matrix_matrix_product does.
template <class S, int LhsOrder, int RhsOrder, int ResOrder>
void gemm(Index rows, Index cols, Index depth, const S* lhs, Index lhs_stride, const S* rhs, Index rhs_stride,
          float* res, Index res_stride, float alpha) {
  constexpr int flip_lhs = LhsOrder == Eigen::RowMajor ? Eigen::ColMajor : Eigen::RowMajor;
  constexpr int flip_rhs = RhsOrder == Eigen::RowMajor ? Eigen::ColMajor : Eigen::RowMajor;
  if constexpr (ResOrder == Eigen::ColMajor)
    gemm_colmajor<S, LhsOrder, RhsOrder>(rows, cols, depth, lhs, lhs_stride, rhs, rhs_stride, res, res_stride, alpha);
  else
    gemm_colmajor<S, flip_rhs, flip_lhs>(cols, rows, depth, rhs, rhs_stride, lhs, lhs_stride, res, res_stride, alpha);
}

}  // namespace minidl::kernels::cpu::widening
