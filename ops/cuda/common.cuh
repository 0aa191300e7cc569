// Shared pieces of the CUDA kernels: the device scalar type of each dtype and conversions between
// them (matching the CPU kernels' rounding: f64 -> f16/bf16 goes through f32, as cast_scalar
// does), a dtype visitor for C++17 (generic lambdas receiving a type tag), strided offset
// calculation for up to kMaxDims coalesced dims, grid sizing and internal scratch tensors.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "framework/error.h"
#include "ops/tensor.h"
#include "framework/cuda/check.h"
#include "framework/cuda/runtime.h"
#include "ops/kernels.h"

namespace minidl::kernels::cuda {

using f16 = __half;
using bf16 = __nv_bfloat16;

template <class T>
struct TypeTag {
  using type = T;
};

// The type arithmetic runs in for storage type T: f32 for f16/bf16, T otherwise.
template <class T> struct Compute { using type = T; };
template <> struct Compute<f16> { using type = float; };
template <> struct Compute<bf16> { using type = float; };
template <class T> using compute_t = typename Compute<T>::type;

template <class T>
inline constexpr bool is_low_v = std::is_same_v<T, f16> || std::is_same_v<T, bf16>;
template <class T>
inline constexpr bool is_float_v = is_low_v<T> || std::is_floating_point_v<T>;

// Storage -> compute type.
template <class T>
__host__ __device__ __forceinline__ compute_t<T> load(T v) {
  if constexpr (std::is_same_v<T, f16>) return __half2float(v);
  else if constexpr (std::is_same_v<T, bf16>) return __bfloat162float(v);
  else return v;
}

// Any scalar -> storage type T, with the CPU kernels' rules (ops/cpu/scalar.h's cast_scalar): low
// precision rounds from f32 (RNE); bool is "!= 0"; a floating value into an integer type narrower
// than i64 goes through i64, whose conversion wraps (a direct conversion of a value outside the
// target's range is undefined, and the GPU's saturates: -1.0 would give u8 0 instead of the CPU's
// and PyTorch's 255); other conversions are static_casts.
template <class T, class S>
__host__ __device__ __forceinline__ T convert(S v) {
  if constexpr (std::is_same_v<T, S>) {
    return v;
  } else if constexpr (is_low_v<S>) {
    return convert<T>(load(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != S(0);
  } else if constexpr (std::is_integral_v<T> && std::is_floating_point_v<S> && sizeof(T) < sizeof(int64_t)) {
    return static_cast<T>(static_cast<int64_t>(v));
  } else if constexpr (std::is_same_v<T, f16>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, bf16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// visit(dtype, op, f): calls f(TypeTag<T>{}) with T the device scalar type of dtype.
template <class F>
decltype(auto) visit(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::F32: return f(TypeTag<float>{});
    case DType::F64: return f(TypeTag<double>{});
    case DType::F16: return f(TypeTag<f16>{});
    case DType::BF16: return f(TypeTag<bf16>{});
    case DType::I64: return f(TypeTag<int64_t>{});
    case DType::I32: return f(TypeTag<int32_t>{});
    case DType::U8: return f(TypeTag<uint8_t>{});
    case DType::Bool: return f(TypeTag<bool>{});
  }
  MINIDL_FAIL(op, "unknown dtype");
}

template <class F>
decltype(auto) visit_floating(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::F32: return f(TypeTag<float>{});
    case DType::F64: return f(TypeTag<double>{});
    case DType::F16: return f(TypeTag<f16>{});
    case DType::BF16: return f(TypeTag<bf16>{});
    default: MINIDL_FAIL(op, "expected a floating dtype (f32, f64, f16, bf16), got ", dtype_name(t));
  }
}

// ---- strided offsets

inline constexpr int kMaxDims = 10;

// Maps a linear index over a (coalesced) shape to an element offset per operand. Index math runs
// in 32 bits when the numel and every offset fit (the common case; 64-bit division is slow).
template <int N>
struct OffsetCalc {
  int ndim = 0;
  bool use32 = true;
  int64_t sizes[kMaxDims];
  int64_t strides[N][kMaxDims];

  __device__ __forceinline__ void get(int64_t linear, int64_t (&off)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
    if (use32) {
      uint32_t rem = static_cast<uint32_t>(linear);
      for (int d = ndim - 1; d >= 0; --d) {
        const uint32_t s = static_cast<uint32_t>(sizes[d]);
        const uint32_t i = rem % s;
        rem /= s;
#pragma unroll
        for (int k = 0; k < N; ++k) off[k] += static_cast<int64_t>(i) * strides[k][d];
      }
    } else {
      int64_t rem = linear;
      for (int d = ndim - 1; d >= 0; --d) {
        const int64_t i = rem % sizes[d];
        rem /= sizes[d];
#pragma unroll
        for (int k = 0; k < N; ++k) off[k] += i * strides[k][d];
      }
    }
  }
};

// Builds the offsets of N operands that broadcast to `shape` (operand strides right-aligned, 0 on
// broadcast dims); size-1 dims are dropped and dims every operand walks contiguously are merged.
// Throws naming `op` when more than kMaxDims dims remain.
template <int N>
OffsetCalc<N> make_offset_calc(const Shape& shape, const std::array<const Tensor*, N>& operands, const char* op) {
  const int nd = static_cast<int>(shape.size());
  int64_t st[N][64];
  MINIDL_CHECK(nd <= 64, op, "tensors of more than 64 dims are not supported on CUDA");
  for (int k = 0; k < N; ++k) {
    const Tensor& t = *operands[k];
    const int td = static_cast<int>(t.dim());
    for (int d = 0; d < nd; ++d) st[k][d] = 0;
    for (int d = 0; d < td; ++d)
      if (t.shape()[d] != 1) st[k][nd - td + d] = t.strides()[d];
  }
  Shape sizes;
  std::array<Shape, N> strides;
  for (int d = 0; d < nd; ++d) {
    if (shape[d] == 1) continue;
    if (!sizes.empty()) {
      bool merge = true;
      for (int k = 0; k < N; ++k) merge = merge && strides[k].back() == st[k][d] * shape[d];
      if (merge) {
        sizes.back() *= shape[d];
        for (int k = 0; k < N; ++k) strides[k].back() = st[k][d];
        continue;
      }
    }
    sizes.push_back(shape[d]);
    for (int k = 0; k < N; ++k) strides[k].push_back(st[k][d]);
  }
  OffsetCalc<N> c;
  c.ndim = static_cast<int>(sizes.size());
  MINIDL_CHECK(c.ndim <= kMaxDims, op, "CUDA kernels support at most ", kMaxDims,
               " non-mergeable dims; got shape ", shape_str(shape), " (make the operands contiguous first)");
  const int64_t n = numel_of(shape);
  const int64_t lim = std::numeric_limits<int32_t>::max();
  c.use32 = n <= lim;
  for (int d = 0; d < c.ndim; ++d) {
    c.sizes[d] = sizes[d];
    for (int k = 0; k < N; ++k) {
      c.strides[k][d] = strides[k][d];
      // The largest offset along this dim must fit too (strides may be negative: abs).
      const int64_t s = strides[k][d] < 0 ? -strides[k][d] : strides[k][d];
      if (s != 0 && (sizes[d] - 1) > lim / s) c.use32 = false;
    }
  }
  return c;
}

// ---- launching

inline constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n items with `per_thread` items per thread per iteration.
inline unsigned grid_for(int64_t n, int device, int per_thread = 1) {
  const int64_t per_block = static_cast<int64_t>(kThreads) * per_thread;
  int64_t blocks = (n + per_block - 1) / per_block;
  const int64_t cap = static_cast<int64_t>(minidl::cuda::sm_count(device)) * 32;  // enough to fill any GPU
  if (blocks > cap) blocks = cap;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned>(blocks);
}

inline cudaStream_t stream_of(const Tensor& t) { return minidl::cuda::stream(t.device().index); }

// A scratch tensor on t's device (no autograd; goes through the caching allocator).
inline Tensor scratch(const Shape& shape, DType dtype, const Tensor& like) {
  return empty(shape, TensorOptions(dtype).device(like.device()));
}

// Element-wise copy helpers shared across families (copy.cu).
// dst <- src with dtype conversion and broadcasting, both on dst's device, any strides.
void copy_on_device(const Tensor& dst, const Tensor& src);
// A contiguous copy of x on its device (x itself when already contiguous).
Tensor contiguous_on_device(const Tensor& x);

// ---- scatter-style accumulation (pool backward, index_add, scatter_add)

// The type a scatter kernel accumulates T in with atomics: f32 for f16/bf16 (rounded into T once,
// at the end, as the CPU kernels accumulate in f32), T itself otherwise.
template <class T>
using atomic_acc_t = std::conditional_t<is_low_v<T>, float, T>;

// *p += v atomically, for every accumulation type: native atomics for f32/f64/i32/i64; u8 and
// bool through the aligned 32-bit word that holds the byte (bool adds as "or", as the CPU kernels).
template <class A>
__device__ __forceinline__ void atomic_accumulate(A* p, A v) {
  if constexpr (std::is_same_v<A, float> || std::is_same_v<A, double> || std::is_same_v<A, int32_t>) {
    atomicAdd(p, v);
  } else if constexpr (std::is_same_v<A, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));  // two's complement
  } else {
    static_assert(std::is_same_v<A, uint8_t> || std::is_same_v<A, bool>, "no atomic accumulation for this type");
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    unsigned* word = reinterpret_cast<unsigned*>(addr & ~uintptr_t{3});
    const unsigned shift = static_cast<unsigned>(addr & 3) * 8;
    if constexpr (std::is_same_v<A, bool>) {
      if (v) atomicOr(word, 1u << shift);
    } else {
      unsigned old = *word, assumed;
      do {
        assumed = old;
        const unsigned byte = ((assumed >> shift) + static_cast<unsigned>(v)) & 0xFFu;
        old = atomicCAS(word, assumed, (assumed & ~(0xFFu << shift)) | (byte << shift));
      } while (old != assumed);
    }
  }
}

// Host side of a scatter kernel writing into `out` (storage type T): target() is the tensor the
// kernel accumulates into with atomic_accumulate. For f16/bf16 it is a contiguous f32 copy of out
// (or f32 zeros), rounded back into out by finish(); for every other type it is out itself
// (zeroed first when asked).
template <class T>
class AtomicAccumulator {
 public:
  using Acc = atomic_acc_t<T>;
  AtomicAccumulator(const Tensor& out, bool start_from_zero) : out_(out) {
    if constexpr (std::is_same_v<Acc, T>) {
      target_ = out;
      if (start_from_zero) registry().fill.get(out.device(), out.dtype())(out, 0.0);
    } else {
      target_ = scratch(out.shape(), DType::F32, out);
      if (start_from_zero) registry().fill.get(out.device(), DType::F32)(target_, 0.0);
      else copy_on_device(target_, out);
    }
  }
  const Tensor& target() const { return target_; }
  Acc* data() const { return static_cast<Acc*>(target_.raw_data()); }
  void finish() {
    if constexpr (!std::is_same_v<Acc, T>) copy_on_device(out_, target_);
  }

 private:
  Tensor out_, target_;
};

}  // namespace minidl::kernels::cuda
