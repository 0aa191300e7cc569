// Element types, their properties (the traits table tests derive tolerances from) and promotion.
#pragma once
#include <cstdint>
#include <string>

namespace minidl {

enum class DType : uint8_t { F32, F64, F16, BF16, I64, I32, U8, Bool };
inline constexpr int kNumDTypes = 8;

// Numeric facts of a dtype. For integer types eps is 0 and max/min_normal are the integer range.
struct DTypeTraits {
  const char* name;       // "f32", "bf16", ...
  int size;               // bytes per element
  bool is_floating;
  double eps;             // distance from 1.0 to the next representable value
  double max;             // largest finite value
  double min_normal;      // smallest positive normal value
  int mantissa_bits;      // explicit fraction bits (23 for f32); 0 for integers
};

const DTypeTraits& traits(DType t);
inline const char* dtype_name(DType t) { return traits(t).name; }
inline int element_size(DType t) { return traits(t).size; }
inline bool is_floating(DType t) { return traits(t).is_floating; }
inline bool is_low_precision(DType t) { return t == DType::F16 || t == DType::BF16; }
DType dtype_from_name(const std::string& name);  // "f32", "float32", "bf16", ...; throws if unknown

// PyTorch's promotion for two tensors of the same category: the wider type wins; any float beats
// any integer; f16 with bf16 gives f32; bool is the narrowest.
DType promote_types(DType a, DType b);

}  // namespace minidl
