// Raw-pointer GEMM for CPU kernels that multiply their own buffers (convolution's column matrices):
// the same Eigen kernels and pool threading as the `gemm` table entry (ops/cpu/gemm.cpp), without
// Tensors. Inside a pool task it runs serially on the calling thread, so a kernel may call it from
// its own parallel chunks.
#pragma once
#include <cstdint>

namespace minidl::kernels::cpu {

// A matrix in memory: element (i, j) is data[i * ld + j] when row_major, else data[j * ld + i].
// A transposed row-major matrix is the same buffer read column-major.
template <class T>
struct MatrixRef {
  const T* data;
  bool row_major;
  int64_t ld;
  const T* at(int64_t i, int64_t j) const { return row_major ? data + i * ld + j : data + j * ld + i; }
};

// c[m x n] = alpha * a[m x k] * b[k x n] + beta * c, with c row-major (leading dim ldc).
// Defined for float and double.
template <class T>
void gemm_raw(int64_t m, int64_t n, int64_t k, MatrixRef<T> a, MatrixRef<T> b, T* c, int64_t ldc, T alpha, T beta);

}  // namespace minidl::kernels::cpu
