// bf16 matrix products on oneDNN's bf16 matmul where the CPU has AVX512_BF16 (vdpbf16ps: products
// of bf16 pairs summed in f32), tried first by the CPU GEMM (ops/cpu/gemm.cpp) for bf16 operands;
// f32 products on its f32 matmul where the CPU has AVX-512.
// Elsewhere, or switched off, bf16 operands are widened to f32 as Eigen packs them. One switch for
// oneDNN's bf16 convolution and matmul: dnnl_conv::native_bf16() (MINIDL_DNNL_BF16=0 or
// set_native_bf16(false) turns both off). Why and how much: bench/README.md, performance log 17.
#pragma once
#include <cstdint>

#include "framework/half.h"
#include "ops/cpu/gemm.h"

namespace minidl::kernels::cpu::dnnl_matmul {

// c[m x n] (f32, row-major with leading dim ldc) = alpha * a[m x k] * b[k x n] + beta * c, with bf16
// a and b, on the calling thread alone; beta == 0 never reads c. False when it does not take the
// product (no oneDNN, native_bf16() off, a product too small to pay for the call, a layout oneDNN
// refuses): the caller multiplies it itself. Like every vdpbf16ps kernel, subnormal bf16 inputs
// count as zero (PyTorch's oneDNN bf16 matmul does the same).
bool gemm_bf16(int64_t m, int64_t n, int64_t k, MatrixRef<bfloat16> a, MatrixRef<bfloat16> b, float* c, int64_t ldc,
               float alpha, float beta);

// The same with a bf16 result written by oneDNN (rounded to nearest even once, from the f32 sums)
// and beta == 0: no f32 buffer and no separate narrowing pass. A result that would be an f32
// subnormal comes out as zero (vcvtneps2bf16), as in PyTorch's oneDNN bf16 matmul.
bool gemm_bf16(int64_t m, int64_t n, int64_t k, MatrixRef<bfloat16> a, MatrixRef<bfloat16> b, bfloat16* c, int64_t ldc,
               float alpha);

// The same for f32 operands, on oneDNN's brgemm matmul (oneDNN 2.6 has it from avx512_core up):
// used by the avx512 kernel set's GEMM where takes_f32(): the MLP's training step ran 1.07-1.10x
// as fast as on Eigen's GEMM on one Zen 5 core, 1.12-1.13x on two (bench/README.md, performance
// log 29). False where oneDNN would pick anything slower (its jit sgemm, for strided slabs).
bool gemm_f32(int64_t m, int64_t n, int64_t k, MatrixRef<float> a, MatrixRef<float> b, float* c, int64_t ldc,
              float alpha, float beta);

// Whether gemm_f32 takes f32 products at all now: oneDNN built in and enabled (dnnl_conv::enabled()),
// finding AVX-512, and not switched off by MINIDL_DNNL_F32=0 or set_f32(false) (the tests run the
// products both ways). set_f32 returns the switch's previous setting.
bool takes_f32();
bool set_f32(bool on);

// Whether gemm_bf16 takes bf16 products at all now (oneDNN built in, dnnl_conv::native_bf16()).
bool takes_bf16();

// Products that ran on oneDNN, so tests can tell that a call really took this path.
int64_t calls();

}  // namespace minidl::kernels::cpu::dnnl_matmul
