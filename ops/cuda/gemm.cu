// CUDA matrix multiply through cuBLAS: c <- alpha * a @ b + beta * c for 2-D or batched 3-D
// operands. f16/bf16 inputs and outputs with f32 accumulation (CUBLAS_COMPUTE_32F: tensor cores);
// f32 in plain f32 (no TF32, so results agree with the CPU as PyTorch's default does); f64 in f64.
//
// cuBLAS is column-major; c is row-major, so we compute c^T = b^T a^T. A row-major view X [r, c]
// with a unit stride on either dim is passed without a copy: unit column stride means its memory is
// X^T column-major (op N, ld = row stride); unit row stride means it is X column-major (op T, ld =
// column stride). Transposed views (w.t() in linear, s[0].t() in backward) therefore cost nothing.
// Only views with no unit stride, or overlapping rows, are made contiguous first.
#include <climits>
#include <memory>
#include <mutex>
#include <vector>

#include "framework/cuda.h"
#include "ops/cuda/common.cuh"
#include "ops/cuda/cublas_library.h"

namespace minidl::kernels::cuda {

namespace {
// One cuBLAS handle per device, bound to the device's stream, created on first use.
cublasHandle_t handle(int device) {
  struct Slot {
    std::once_flag once;
    cublasHandle_t h = nullptr;
  };
  static std::vector<Slot> slots(static_cast<size_t>(minidl::cuda::device_count()));
  Slot& s = slots.at(static_cast<size_t>(device));
  std::call_once(s.once, [&] {
    const CublasLibrary& lib = cublas();
    minidl::cuda::DeviceGuard g(device);
    cublasHandle_t h = nullptr;
    MINIDL_CUBLAS_CHECK(lib.cublasCreate_v2(&h));
    try {
      MINIDL_CUBLAS_CHECK(lib.cublasSetStream_v2(h, minidl::cuda::stream(device)));
      // Tensor cores for f16/bf16 are the default; f32 stays exact f32 (no TF32).
      MINIDL_CUBLAS_CHECK(lib.cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    } catch (...) {
      lib.cublasDestroy_v2(h);  // call_once runs again on the next call, creating another
      throw;
    }
    s.h = h;
  });
  return s.h;
}

// The last two dims of a row-major view X [rows, cols] as cuBLAS sees X^T (column-major).
struct BlasOperand {
  Tensor keep;  // the tensor the pointer belongs to (a contiguous copy when one was needed)
  const void* ptr = nullptr;
  cublasOperation_t op = CUBLAS_OP_N;
  int64_t ld = 1;
  int64_t batch_stride = 0;
};

BlasOperand describe(const Tensor& x_in, bool batched) {
  auto attempt = [&](const Tensor& x, BlasOperand& o) {
    const int64_t d = x.dim();
    const int64_t rows = x.size(d - 2), cols = x.size(d - 1);
    const int64_t rs = x.stride(d - 2), cs = x.stride(d - 1);
    o.keep = x;
    o.ptr = x.raw_data();
    o.batch_stride = batched ? x.stride(0) : 0;
    if ((cs == 1 || cols == 1) && (rows == 1 || rs >= std::max<int64_t>(cols, 1))) {
      o.op = CUBLAS_OP_N;  // memory is X^T column-major with leading dim rs
      o.ld = rows == 1 ? std::max<int64_t>(cols, 1) : rs;
      return true;
    }
    if ((rs == 1 || rows == 1) && (cols == 1 || cs >= std::max<int64_t>(rows, 1))) {
      o.op = CUBLAS_OP_T;  // memory is X column-major with leading dim cs
      o.ld = cols == 1 ? std::max<int64_t>(rows, 1) : cs;
      return true;
    }
    return false;
  };
  BlasOperand o;
  if (attempt(x_in, o)) return o;
  const bool ok = attempt(contiguous_on_device(x_in), o);
  MINIDL_CHECK(ok, "gemm", "internal error: a contiguous operand has no BLAS layout");
  return o;
}

void check_int(int64_t v, const char* what) {
  MINIDL_CHECK(v <= INT_MAX, "gemm", what, " ", v, " exceeds cuBLAS's 32-bit limit");
}

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::F32: return CUDA_R_32F;
    case DType::F64: return CUDA_R_64F;
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    default: MINIDL_FAIL("gemm", "expected a floating dtype, got ", dtype_name(t));
  }
}

void gemm(const Tensor& c, const Tensor& a, const Tensor& b, double alpha, double beta) {
  const bool batched = c.dim() == 3;
  const int64_t batch = batched ? c.size(0) : 1;
  const int64_t m = c.size(-2), n = c.size(-1), k = a.size(-1);
  if (batch == 0 || m == 0 || n == 0) return;
  MINIDL_CHECK(c.is_contiguous(), "gemm", "expected a contiguous output, got a strided ", c.meta_str());
  minidl::cuda::DeviceGuard guard(c.device());
  const int dev = c.device().index;
  if (k == 0) {
    // cuBLAS would do this too, but an empty operand's pointer may be null: c <- beta * c.
    if (beta == 0) registry().fill.get(c.device(), c.dtype())(c, 0.0);
    else registry().binary.get(c.device(), c.dtype())(BinaryOp::Mul, c, c, Tensor(), beta, 1.0);
    return;
  }
  const BlasOperand A = describe(a, batched), B = describe(b, batched);
  check_int(m, "m");
  check_int(n, "n");
  check_int(k, "k");
  check_int(A.ld, "lda");
  check_int(B.ld, "ldb");
  check_int(batch, "batch");
  const cudaDataType_t dt = cuda_type(c.dtype());
  const bool f64 = c.dtype() == DType::F64;
  const cublasComputeType_t compute = f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
  const float alpha_f = static_cast<float>(alpha), beta_f = static_cast<float>(beta);
  const void* pa = f64 ? static_cast<const void*>(&alpha) : static_cast<const void*>(&alpha_f);
  const void* pb = f64 ? static_cast<const void*>(&beta) : static_cast<const void*>(&beta_f);
  cublasHandle_t h = handle(dev);
  const CublasLibrary& lib = cublas();
  // c^T [n x m] = op(B^T) [n x k] * op(A^T) [k x m]; ldc = n.
  if (!batched || batch == 1) {
    MINIDL_CUBLAS_CHECK(lib.cublasGemmEx(h, B.op, A.op, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), pa,
                                     B.ptr, dt, static_cast<int>(B.ld), A.ptr, dt, static_cast<int>(A.ld), pb,
                                     c.raw_data(), dt, static_cast<int>(n), compute, CUBLAS_GEMM_DEFAULT));
  } else {
    MINIDL_CUBLAS_CHECK(lib.cublasGemmStridedBatchedEx(
        h, B.op, A.op, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), pa, B.ptr, dt,
        static_cast<int>(B.ld), B.batch_stride, A.ptr, dt, static_cast<int>(A.ld), A.batch_stride, pb, c.raw_data(), dt,
        static_cast<int>(n), m * n, static_cast<int>(batch), compute, CUBLAS_GEMM_DEFAULT));
  }
}
}  // namespace

void register_gemm(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) r.gemm.set(DeviceType::CUDA, t, gemm);
}

}  // namespace minidl::kernels::cuda
