// CPU matrix multiply on Eigen's GEMM (OpenMP-parallel, the same pool as every other kernel).
// Operands may be transposed views: any 2-D slice with a unit stride on one dim maps straight onto
// Eigen without a copy. f16/bf16 operands are widened to f32 (F16C / shifts), multiplied in f32 and
// narrowed once: Eigen::half arithmetic is ~300x slower than this.
#include <Eigen/Core>

#include "ops/cpu/loops.h"
#include "ops/cpu/scalar.h"
#include "ops/kernels.h"
#include "ops/ops.h"

namespace minidl::kernels::cpu {

namespace {
template <class T, int Order>
using MatMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Order>, 0, Eigen::OuterStride<>>;
template <class T>
using OutMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

// Calls f(map) with an Eigen view of a 2-D strided slice at ptr (rows x cols, strides rs, cs).
template <class T, class F>
void with_map(const T* ptr, int64_t rows, int64_t cols, int64_t rs, int64_t cs, F&& f) {
  if (cs == 1 || cols == 1) f(MatMap<T, Eigen::RowMajor>(ptr, rows, cols, Eigen::OuterStride<>(rows == 1 ? cols : rs)));
  else f(MatMap<T, Eigen::ColMajor>(ptr, rows, cols, Eigen::OuterStride<>(cols == 1 ? rows : cs)));
}

bool has_unit_stride(const Tensor& t) {
  const int64_t d = t.dim();
  return t.stride(d - 1) == 1 || t.stride(d - 2) == 1 || t.size(d - 1) == 1;
}

template <class T>
void gemm_native(const Tensor& c, const Tensor& a_in, const Tensor& b_in, double alpha, double beta) {
  Tensor a = has_unit_stride(a_in) ? a_in : a_in.contiguous();
  Tensor b = has_unit_stride(b_in) ? b_in : b_in.contiguous();
  const bool batched = c.dim() == 3;
  const int64_t batch = batched ? c.size(0) : 1;
  const int64_t m = c.size(-2), n = c.size(-1), k = a.size(-1);
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  T* pc = static_cast<T*>(c.raw_data());
  const T al = static_cast<T>(alpha), be = static_cast<T>(beta);
  for (int64_t i = 0; i < batch; ++i) {
    const T* ai = pa + (batched ? i * a.stride(0) : 0);
    const T* bi = pb + (batched ? i * b.stride(0) : 0);
    OutMap<T> C(pc + i * m * n, m, n);
    if (k == 0) {
      if (beta == 0) C.setZero();
      else C *= be;
      continue;
    }
    with_map(ai, m, k, a.stride(-2), a.stride(-1), [&](const auto& A) {
      with_map(bi, k, n, b.stride(-2), b.stride(-1), [&](const auto& B) {
        if (beta == 0) {
          C.noalias() = (A * B) * al;
        } else {
          if (beta != 1) C *= be;
          C.noalias() += (A * B) * al;
        }
      });
    });
  }
}

void gemm(const Tensor& c, const Tensor& a, const Tensor& b, double alpha, double beta) {
  switch (a.dtype()) {
    case DType::F32: return gemm_native<float>(c, a, b, alpha, beta);
    case DType::F64: return gemm_native<double>(c, a, b, alpha, beta);
    case DType::F16:
    case DType::BF16: {
      Tensor c32 = empty(c.shape(), DType::F32);
      if (beta != 0) c32.copy_(c);
      gemm_native<float>(c32, cast(a.detach(), DType::F32), cast(b.detach(), DType::F32), alpha, beta);
      c.copy_(c32);
      return;
    }
    default: MINIDL_FAIL("gemm", "expected a floating dtype, got ", dtype_name(a.dtype()));
  }
}
}  // namespace

void register_gemm(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) r.gemm.set(DeviceType::CPU, t, gemm);
}

}  // namespace minidl::kernels::cpu
