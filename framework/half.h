// The C++ scalar types behind each dtype and a dtype visitor for kernels. Low-precision values are
// never computed on directly: kernels convert a block to f32, compute, and convert back (the bulk
// conversions are kernel loops: ops/cpu/convert.h).
#pragma once
#include <Eigen/Core>
#include <cstdint>

#include "framework/dtype.h"
#include "framework/error.h"

namespace minidl {

using half = Eigen::half;
using bfloat16 = Eigen::bfloat16;

// The element types a tensor can hold, one per DType (for explicit instantiations).
#define MINIDL_FOR_EACH_ELEMENT_TYPE(X) \
  X(float) X(double) X(half) X(bfloat16) X(int64_t) X(int32_t) X(uint8_t) X(bool)

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::F32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::F64; };
template <> struct dtype_of<half> { static constexpr DType value = DType::F16; };
template <> struct dtype_of<bfloat16> { static constexpr DType value = DType::BF16; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::I64; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::I32; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::U8; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::Bool; };

// The type a kernel computes in for storage type T: f32 for f16/bf16 (f32 accumulation).
template <class T> struct compute_type { using type = T; };
template <> struct compute_type<half> { using type = float; };
template <> struct compute_type<bfloat16> { using type = float; };
template <class T> using compute_t = typename compute_type<T>::type;

// visit_dtype(t, op, f): calls f.template operator()<T>() with T the scalar type of t.
template <class F>
decltype(auto) visit_dtype(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::F32: return f.template operator()<float>();
    case DType::F64: return f.template operator()<double>();
    case DType::F16: return f.template operator()<half>();
    case DType::BF16: return f.template operator()<bfloat16>();
    case DType::I64: return f.template operator()<int64_t>();
    case DType::I32: return f.template operator()<int32_t>();
    case DType::U8: return f.template operator()<uint8_t>();
    case DType::Bool: return f.template operator()<bool>();
  }
  MINIDL_FAIL(op, "unknown dtype");
}

// Same, for floating dtypes only; an integer dtype is an error naming the op.
template <class F>
decltype(auto) visit_floating(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::F32: return f.template operator()<float>();
    case DType::F64: return f.template operator()<double>();
    case DType::F16: return f.template operator()<half>();
    case DType::BF16: return f.template operator()<bfloat16>();
    default: MINIDL_FAIL(op, "expected a floating dtype (f32, f64, f16, bf16), got ", dtype_name(t));
  }
}

}  // namespace minidl
