// CPU matrix multiply on Eigen's GEMM kernels (packing + register-blocked micro-kernel), or on
// oneDNN's brgemm matmul for f32 on AVX-512 CPUs and bf16 on AVX512_BF16 ones (matmul_dnnl.h),
// threaded by us, not by either library: a product is cut into one slab of C (rows or columns) per
// thread, each run sequentially as a chunk of minidl's pool (ops/cpu/loops.h), so threads never wait
// on each other inside a product. Eigen's own OpenMP GEMM busy-waits on shared packed panels and
// collapses (10-1000x) as soon as another thread competes for one of the two cores (a data-loader
// worker, another process); see bench/README.md. Small products run on the calling thread.
// Operands may be transposed views: any 2-D slice with a unit stride on one dim maps straight onto
// Eigen without a copy. f16/bf16 operands are widened to f32 (F16C / shifts) as Eigen packs them,
// multiplied in f32 and narrowed once, slab by slab from a per-thread f32 buffer while it is in
// cache (or written in bf16 by oneDNN's bf16 matmul): Eigen::half arithmetic is ~300x slower. Integer
// operands (i64, i32, u8) run Eigen's generic kernel in their own type: exact, as PyTorch's CPU mm.
#include <Eigen/Core>
#include <algorithm>
#include <type_traits>
#include <vector>

#include "ops/cpu/gemm.h"
#include "ops/cpu/gemm_blocking.h"
#include "ops/cpu/loops.h"
#include "ops/cpu/matmul_dnnl.h"
#include "ops/cpu/scalar.h"
#include "ops/cpu/thread_buffer.h"
#include "ops/cpu/widening_gemm.h"
#include "ops/kernels.h"
#include "ops/ops.h"

namespace minidl::kernels::cpu {

namespace {
// Below this many flops (2mnk) a product runs on one thread: ~20-40 us of work, about what waking
// the second thread and joining it costs when it has gone to sleep.
constexpr double kGemmParallelFlops = 1.5e6;

// A 2-D slice (rows x cols, strides rs, cs) with a unit stride on one dim.
template <class T>
MatrixRef<T> operand(const T* p, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  if (cs == 1 || cols == 1) return {p, true, rows == 1 ? std::max<int64_t>(cols, 1) : rs};
  return {p, false, cols == 1 ? std::max<int64_t>(rows, 1) : cs};
}

// c[m x n] += alpha * a[m x k] * b[k x n], sequential; c is row-major (COrder = RowMajor) or
// column-major with leading dim ldc. Eigen's general_matrix_matrix_product is the kernel behind
// Matrix::operator*; called directly it takes any strides and storage orders, never threads
// (info = null), and packs into the thread's kept panels (gemm_blocking.h). f16/bf16 operands (S)
// with an f32 result (T) take the same loop with operands widened while packed (widening_gemm.h).
template <class S, class T, int AOrder, int BOrder, int COrder>
void gemm_serial_typed(int64_t m, int64_t n, int64_t k, MatrixRef<S> a, MatrixRef<S> b, T* c, int64_t ldc, T alpha) {
  using Eigen::Index;
  using namespace Eigen::internal;
  if constexpr (std::is_same_v<S, T>) {
    ReusedBlocking<COrder, T> blocking(m, n, k);
    general_matrix_matrix_product<Index, T, AOrder, false, T, BOrder, false, COrder, 1>::run(
        m, n, k, a.data, a.ld, b.data, b.ld, c, 1, ldc, alpha, blocking, nullptr);
  } else {
    static_assert(std::is_same_v<T, float>, "f16/bf16 operands multiply into f32");
    widening::gemm<S, AOrder, BOrder, COrder>(m, n, k, a.data, a.ld, b.data, b.ld, c, ldc, alpha);
  }
}

template <class S, class T, int COrder>
void gemm_dispatch(int64_t m, int64_t n, int64_t k, MatrixRef<S> a, MatrixRef<S> b, T* c, int64_t ldc, T alpha) {
  constexpr int R = Eigen::RowMajor, C = Eigen::ColMajor;
  if (a.row_major) {
    if (b.row_major) gemm_serial_typed<S, T, R, R, COrder>(m, n, k, a, b, c, ldc, alpha);
    else gemm_serial_typed<S, T, R, C, COrder>(m, n, k, a, b, c, ldc, alpha);
  } else {
    if (b.row_major) gemm_serial_typed<S, T, C, R, COrder>(m, n, k, a, b, c, ldc, alpha);
    else gemm_serial_typed<S, T, C, C, COrder>(m, n, k, a, b, c, ldc, alpha);
  }
}

// Whether products of S run on oneDNN's matmul now (matmul_dnnl.h): bf16 on AVX512_BF16 CPUs, f32
// in the avx512 kernel set only, so that a capped set (MINIDL_MAX_CPU_ISA=avx2) multiplies as it
// would on an AVX2 CPU.
#ifdef __AVX512F__
constexpr bool kSetTakesOnednnF32 = true;
#else
constexpr bool kSetTakesOnednnF32 = false;
#endif
template <class S>
bool on_onednn() {
  if constexpr (std::is_same_v<S, bfloat16>) return dnnl_matmul::takes_bf16();
  else if constexpr (std::is_same_v<S, float>) return kSetTakesOnednnF32 && dnnl_matmul::takes_f32();
  else return false;
}

// Eigen's micro-kernel runs panels of 3 vectors (48 f32 with AVX-512) down the result's columns;
// a row-major C is computed as C^T, so its panels run along n. A narrow C (a 10-class head) would
// fill a fifth of each panel: it is computed column-major (panels along m) in a buffer instead and
// transposed into place, ~2.5x faster for n = 10.
constexpr int64_t kNarrowN = 24;

template <class S, class T = S>
void gemm_serial(int64_t m, int64_t n, int64_t k, MatrixRef<S> a, MatrixRef<S> b, T* c, int64_t ldc, T alpha, T beta) {
  if (m == 0 || n == 0) return;
  if constexpr (std::is_same_v<S, bfloat16> && std::is_same_v<T, float>) {
    if (dnnl_matmul::gemm_bf16(m, n, k, a, b, c, ldc, alpha, beta)) return;  // AVX512_BF16 CPUs
  }
  if constexpr (std::is_same_v<S, float> && std::is_same_v<T, float>) {
    if (on_onednn<float>() && dnnl_matmul::gemm_f32(m, n, k, a, b, c, ldc, alpha, beta)) return;
  }
  if (k > 0 && n < kNarrowN && m >= 4 * n) {
    std::vector<T> t(static_cast<size_t>(m * n), T(0));
    gemm_dispatch<S, T, Eigen::ColMajor>(m, n, k, a, b, t.data(), m, alpha);
    for (int64_t i = 0; i < m; ++i) {
      T* row = c + i * ldc;
      if (beta == T(0)) for (int64_t j = 0; j < n; ++j) row[j] = t[j * m + i];
      else for (int64_t j = 0; j < n; ++j) row[j] = beta * row[j] + t[j * m + i];
    }
    return;
  }
  // beta first, on this slab only (the GEMM accumulates).
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * ldc;
    if (beta == T(0)) std::fill(row, row + n, T(0));
    else if (beta != T(1)) for (int64_t j = 0; j < n; ++j) row[j] *= beta;
  }
  if (k == 0) return;
  gemm_dispatch<S, T, Eigen::RowMajor>(m, n, k, a, b, c, ldc, alpha);
}

// The scalars of a product into T: f32 for an f16/bf16 result (its sums are f32).
template <class T>
using Scalar = std::conditional_t<is_low_precision_v<T>, float, T>;

// c[m x n] in f16/bf16 (S), the operands' type: the product in f32 into this thread's buffer (c
// widened into it first when beta != 0), narrowed into c row by row while the buffer is in cache,
// instead of an f32 result the size of c written, read back and narrowed in a pass of its own
// (bench/README.md, performance log 20). bf16 with beta == 0 on oneDNN: written in bf16 by it.
// A slab of a product cut across threads (slab_of_split), from kStreamedResultBytes up, is written
// with streaming stores (convert.h): its lines of c were last held by the other core as often as by
// this one (the allocator reuses blocks either freed), plain stores fetched each of them first, and
// the narrowing loop has no arithmetic to hide that behind. MLP fp16 step on two threads 1.05-1.09x;
// slabs from 128 KiB only, less; a whole product on one thread streamed, 0.96x (c was in this core's
// cache, and its next reader found it gone); f32 results copied out of a buffer, or casts, streamed:
// 0.91-0.92x (bench/README.md, performance log 31).
constexpr int64_t kStreamedResultBytes = int64_t{32} << 10;
template <class S>
void gemm_serial_narrowed(int64_t m, int64_t n, int64_t k, MatrixRef<S> a, MatrixRef<S> b, S* c, int64_t ldc, float alpha,
                          float beta, bool slab_of_split) {
  if (m == 0 || n == 0) return;
  if constexpr (std::is_same_v<S, bfloat16>) {
    if (beta == 0.0f && dnnl_matmul::gemm_bf16(m, n, k, a, b, c, ldc, alpha)) return;
  }
  thread_local ThreadBuffer buffer;
  float* t = static_cast<float*>(buffer.reserve(static_cast<size_t>(m * n) * sizeof(float)));
  if (beta != 0.0f)
    for (int64_t i = 0; i < m; ++i) load_block(c + i * ldc, t + i * n, n);
  gemm_serial<S, float>(m, n, k, a, b, t, n, alpha, beta);
  if (slab_of_split && m * n * static_cast<int64_t>(sizeof(S)) >= kStreamedResultBytes) store_rows_streaming(t, n, c, ldc, m, n);
  else for (int64_t i = 0; i < m; ++i) store_block(t + i * n, c + i * ldc, n);
}

// One block of c: f16/bf16 narrowed from f32 (above), any other type multiplied in its own.
template <class S, class T>
void gemm_block(int64_t m, int64_t n, int64_t k, MatrixRef<S> a, MatrixRef<S> b, T* c, int64_t ldc, Scalar<T> alpha,
                Scalar<T> beta, bool slab_of_split = false) {
  if constexpr (is_low_precision_v<T>) gemm_serial_narrowed<S>(m, n, k, a, b, c, ldc, alpha, beta, slab_of_split);
  else gemm_serial<S, T>(m, n, k, a, b, c, ldc, alpha, beta);
}

// dense[rows x cols] (row-major) = the column-major rows x cols matrix at a with leading dim lda,
// in 16 x 16 tiles so that both the reads and the writes stay within 16 cache lines (element by
// element, the writes stride by a whole row: 8% of an MLP step on two threads).
template <class S>
void transpose_into(const S* a, int64_t lda, int64_t rows, int64_t cols, S* dense) {
  constexpr int64_t kTile = 16;
  for (int64_t j0 = 0; j0 < cols; j0 += kTile)
    for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
      const int64_t j1 = std::min(cols, j0 + kTile), i1 = std::min(rows, i0 + kTile);
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = j0; j < j1; ++j) dense[i * cols + j] = a[j * lda + i];
    }
}

// One product split into slabs of C, one per thread: rows when m >= n (each thread packs all of b,
// the smaller operand), otherwise columns (each thread packs all of a). Slab edges fall on
// multiples of 48 (Eigen's AVX-512 f32 micro-panel is 48 x 4), so no thread gets ragged panels
// it would not have had anyway.
//
// Products on oneDNN's matmul (matmul_dnnl.h) run on its brgemm kernel only with dense operands;
// a strided slab takes its jit GEMM, 2.1-4.2x slower per multiply-add in bf16 and up to 5x in f32
// (ONEDNN_VERBOSE, MLP b128 step on Zen 5, 2 threads: slower than the whole product on one thread).
// A slab of rows of a row-major a (and of c) is dense: such products are cut into row slabs of
// multiples of 16 rows; with fewer than 32 rows a bf16 product is not cut (the first slab's thread
// runs it all) and an f32 one keeps Eigen's split (on Eigen). A column-major
// a (a weight gradient's gy^T) has each thread's rows copied row-major into its own buffer first:
// m x k values against 2mnk flops. An f32 product wider than tall whose b is column-major (a
// Linear's forward, x w^T) is cut into columns instead: each thread's columns of b (rows of the
// weight) are dense, and its columns of c are computed into a dense buffer and copied out. That
// keeps each weight row on the core whose forward read it, which the optimizer then updates
// (row slabs made the MLP's SGD update 1.5x slower on two threads: both cores held the weight).
template <class S, class T = S>
void gemm_slab(int64_t m, int64_t n, int64_t k, MatrixRef<S> a, MatrixRef<S> b, T* c, int64_t ldc, Scalar<T> alpha,
               Scalar<T> beta, int64_t slab, int64_t slabs) {
  int64_t align = 48;
  bool rows = m >= n;
  bool dense_rows_of_a = false, columns_via_buffer = false;
  constexpr int64_t kOnednnAlign = 16;
  if (std::is_same_v<S, float> && on_onednn<S>() && !rows && !b.row_major) {
    columns_via_buffer = true;
    align = kOnednnAlign;
  } else if (on_onednn<S>() && m >= 2 * kOnednnAlign) {
    rows = true;
    align = kOnednnAlign;
    dense_rows_of_a = !a.row_major;
  } else if (std::is_same_v<S, bfloat16> && on_onednn<S>()) {
    // Too few rows for two bf16 row slabs: the first slab's thread runs the whole product.
    if (slab == 0) gemm_block(m, n, k, a, b, c, ldc, alpha, beta);
    return;
  }
  // (An f32 product too short for row slabs keeps Eigen's split: its strided slabs are refused by
  // oneDNN and run on Eigen on both threads, as a Linear's input gradient at batch 16 does.)
  const int64_t len = rows ? m : n;
  int64_t chunk = (len + slabs - 1) / slabs;
  chunk = std::min(len, (chunk + align - 1) / align * align);
  const int64_t s0 = std::min(len, slab * chunk), s1 = std::min(len, s0 + chunk);
  if (s0 >= s1) return;
  if (dense_rows_of_a) {
    thread_local ThreadBuffer rows_of_a;
    S* dense = static_cast<S*>(rows_of_a.reserve(static_cast<size_t>((s1 - s0) * k) * sizeof(S)));
    transpose_into(a.at(s0, 0), a.ld, s1 - s0, k, dense);
    gemm_block(s1 - s0, n, k, MatrixRef<S>{dense, true, k}, b, c + s0 * ldc, ldc, alpha, beta, true);
    return;
  }
  if (columns_via_buffer) {
    const int64_t w = s1 - s0;
    thread_local ThreadBuffer columns;
    T* t = static_cast<T*>(columns.reserve(static_cast<size_t>(m * w) * sizeof(T)));
    if (beta != Scalar<T>(0))
      for (int64_t i = 0; i < m; ++i) std::copy(c + i * ldc + s0, c + i * ldc + s1, t + i * w);
    gemm_block(m, w, k, a, MatrixRef<S>{b.at(0, s0), b.row_major, b.ld}, t, w, alpha, beta);
    for (int64_t i = 0; i < m; ++i) std::copy(t + i * w, t + (i + 1) * w, c + i * ldc + s0);
    return;
  }
  if (rows) gemm_block(s1 - s0, n, k, MatrixRef<S>{a.at(s0, 0), a.row_major, a.ld}, b, c + s0 * ldc, ldc, alpha, beta, true);
  else gemm_block(m, s1 - s0, k, a, MatrixRef<S>{b.at(0, s0), b.row_major, b.ld}, c + s0, ldc, alpha, beta, true);
}

bool has_unit_stride(const Tensor& t) {
  const int64_t d = t.dim();
  return t.stride(d - 1) == 1 || t.stride(d - 2) == 1 || t.size(d - 1) == 1;
}

// c = alpha * a * b + beta * c with a, b and c of type S.
template <class S, class T = S>
void gemm_native(const Tensor& c, const Tensor& a_in, const Tensor& b_in, double alpha, double beta) {
  Tensor a = has_unit_stride(a_in) ? a_in : a_in.contiguous();
  Tensor b = has_unit_stride(b_in) ? b_in : b_in.contiguous();
  const bool batched = c.dim() == 3;
  const int64_t batch = batched ? c.size(0) : 1;
  const int64_t m = c.size(-2), n = c.size(-1), k = a.size(-1);
  const S* pa = static_cast<const S*>(a.raw_data());
  const S* pb = static_cast<const S*>(b.raw_data());
  T* pc = static_cast<T*>(c.raw_data());
  const Scalar<T> al = static_cast<Scalar<T>>(alpha), be = static_cast<Scalar<T>>(beta);
  auto A = [&](int64_t i) { return operand(pa + (batched ? i * a.stride(0) : 0), m, k, a.stride(-2), a.stride(-1)); };
  auto B = [&](int64_t i) { return operand(pb + (batched ? i * b.stride(0) : 0), k, n, b.stride(-2), b.stride(-1)); };
  auto Cp = [&](int64_t i) { return pc + i * m * n; };

  const double flops = 2.0 * m * n * k * batch;
  const int threads = flops < kGemmParallelFlops || batch * m * n == 0 ? 1 : max_threads();
  if (threads == 1 || in_parallel()) {
    for (int64_t i = 0; i < batch; ++i) gemm_block(m, n, k, A(i), B(i), Cp(i), n, al, be);
    return;
  }
  if (batch >= 2 * threads || 2.0 * m * n * k < kGemmParallelFlops) {
    // Many (or small) products: whole products per chunk.
    parallel_chunks(batch, [&](int64_t i) { gemm_block(m, n, k, A(i), B(i), Cp(i), n, al, be); });
    return;
  }
  // Each product split into one slab of C per thread; a thread that starts late leaves its slab to
  // the others.
  parallel_chunks(batch * threads, [&](int64_t c) {
    const int64_t i = c / threads;
    gemm_slab(m, n, k, A(i), B(i), Cp(i), n, al, be, c % threads, threads);
  });
}
}  // namespace

template <class T>
void gemm_raw(int64_t m, int64_t n, int64_t k, MatrixRef<T> a, MatrixRef<T> b, T* c, int64_t ldc, T alpha, T beta) {
  const int threads = 2.0 * m * n * k < kGemmParallelFlops ? 1 : max_threads();
  if (threads == 1 || in_parallel()) return gemm_serial(m, n, k, a, b, c, ldc, alpha, beta);
  parallel_chunks(threads, [&](int64_t s) { gemm_slab(m, n, k, a, b, c, ldc, alpha, beta, s, threads); });
}
template void gemm_raw<float>(int64_t, int64_t, int64_t, MatrixRef<float>, MatrixRef<float>, float*, int64_t, float, float);
template void gemm_raw<double>(int64_t, int64_t, int64_t, MatrixRef<double>, MatrixRef<double>, double*, int64_t, double,
                               double);

namespace {

void gemm(const Tensor& c, const Tensor& a, const Tensor& b, double alpha, double beta) {
  switch (a.dtype()) {
    case DType::F32: return gemm_native<float>(c, a, b, alpha, beta);
    case DType::F64: return gemm_native<double>(c, a, b, alpha, beta);
    // f16/bf16: multiplied in f32 (the operands widened while packed), narrowed slab by slab.
    case DType::F16: return gemm_native<half>(c, a, b, alpha, beta);
    case DType::BF16: return gemm_native<bfloat16>(c, a, b, alpha, beta);
    // Integers multiply exactly in their own type (wrapping on overflow, as PyTorch's CPU mm).
    case DType::I64: return gemm_native<int64_t>(c, a, b, alpha, beta);
    case DType::I32: return gemm_native<int32_t>(c, a, b, alpha, beta);
    case DType::U8: return gemm_native<uint8_t>(c, a, b, alpha, beta);
    default: MINIDL_FAIL("gemm", "expected a floating or integer dtype, got ", dtype_name(a.dtype()));
  }
}
}  // namespace

void register_gemm(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64, DType::I32, DType::U8})
    r.gemm.set(DeviceType::CPU, t, gemm);
}

}  // namespace minidl::kernels::cpu
