// Bench-only: Eigen's GEMM forwarded to BLAS (EIGEN_USE_BLAS), for comparison with Eigen's own.
#pragma once

namespace minidl_bench {
// c[m x n] (row-major) = op(a) @ op(b); op transposes when ta/tb (the stored matrix is then k x m /
// n x k, row-major), as a transposed view would be in minidl.
void eigen_blas_gemm(const float* a, bool ta, const float* b, bool tb, float* c, int m, int n, int k);
}  // namespace minidl_bench
