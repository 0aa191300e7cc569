#include "framework/dtype.h"

#include <array>
#include <cmath>
#include <limits>

#include "framework/error.h"

namespace minidl {

namespace {
constexpr std::array<DTypeTraits, kNumDTypes> kTraits = {{
    {"f32", 4, true, 1.1920928955078125e-07, 3.4028234663852886e+38, 1.1754943508222875e-38, 23},
    {"f64", 8, true, 2.220446049250313e-16, 1.7976931348623157e+308, 2.2250738585072014e-308, 52},
    {"f16", 2, true, 0.0009765625, 65504.0, 6.103515625e-05, 10},
    {"bf16", 2, true, 0.0078125, 3.3895313892515355e+38, 1.1754943508222875e-38, 7},
    {"i64", 8, false, 0, 9.223372036854775807e18, 1, 0},
    {"i32", 4, false, 0, 2147483647.0, 1, 0},
    {"u8", 1, false, 0, 255.0, 1, 0},
    {"bool", 1, false, 0, 1.0, 1, 0},
}};

// Rank for promotion within a category: larger wins.
int rank(DType t) {
  switch (t) {
    case DType::Bool: return 0;
    case DType::U8: return 1;
    case DType::I32: return 2;
    case DType::I64: return 3;
    case DType::F16: return 4;
    case DType::BF16: return 4;
    case DType::F32: return 5;
    case DType::F64: return 6;
  }
  return 0;
}
}  // namespace

const DTypeTraits& traits(DType t) { return kTraits[static_cast<int>(t)]; }

DType dtype_from_name(const std::string& n) {
  if (n == "f32" || n == "float32" || n == "float") return DType::F32;
  if (n == "f64" || n == "float64" || n == "double") return DType::F64;
  if (n == "f16" || n == "float16" || n == "fp16" || n == "half") return DType::F16;
  if (n == "bf16" || n == "bfloat16") return DType::BF16;
  if (n == "i64" || n == "int64" || n == "long") return DType::I64;
  if (n == "i32" || n == "int32" || n == "int") return DType::I32;
  if (n == "u8" || n == "uint8") return DType::U8;
  if (n == "bool") return DType::Bool;
  MINIDL_FAIL("dtype_from_name", "unknown dtype '", n, "' (expected f32, f64, f16, bf16, i64, i32, u8 or bool)");
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (is_low_precision(a) && is_low_precision(b)) return DType::F32;
  return rank(a) >= rank(b) ? a : b;
}

}  // namespace minidl
