// Eigen's GEMM with EIGEN_USE_BLAS: the same Map-based product minidl's gemm kernel runs, but
// Eigen forwards it to the linked BLAS (OpenBLAS, with its own pthread pool). Bench-only.
#include <Eigen/Core>

#include "eigen_blas.h"

namespace minidl_bench {

void eigen_blas_gemm(const float* a, bool ta, const float* b, bool tb, float* c, int m, int n, int k) {
  using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ColMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
  Eigen::Map<RowMat> C(c, m, n);
  // A transposed = an m x k column-major view of the stored k x m row-major matrix.
  auto run = [&](const auto& A) {
    if (tb) C.noalias() = A * Eigen::Map<const ColMat>(b, k, n);
    else C.noalias() = A * Eigen::Map<const RowMat>(b, k, n);
  };
  if (ta) run(Eigen::Map<const ColMat>(a, m, k));
  else run(Eigen::Map<const RowMat>(a, m, k));
}

}  // namespace minidl_bench
