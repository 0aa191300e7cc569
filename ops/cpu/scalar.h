// Scalar helpers shared by CPU kernels: conversion between any two storage types, and the block
// size used when low-precision data is widened to f32 for computing.
#pragma once
#include <cstdint>
#include <type_traits>

#include "ops/cpu/convert.h"

namespace minidl::kernels::cpu {

inline constexpr int64_t kBlock = 256;  // elements widened to f32 at a time (fits in L1)

template <class T>
inline constexpr bool is_low_precision_v = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

template <class T, class S>
inline T cast_scalar(S v) {
  if constexpr (std::is_same_v<T, S>) {
    return v;
  } else if constexpr (std::is_same_v<T, bool>) {
    if constexpr (is_low_precision_v<S>) return static_cast<float>(v) != 0.0f;
    else return v != S(0);
  } else if constexpr (is_low_precision_v<S>) {
    return cast_scalar<T>(static_cast<float>(v));
  } else if constexpr (is_low_precision_v<T>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<T> && std::is_floating_point_v<S> && sizeof(T) < sizeof(int64_t)) {
    // A floating value outside a narrow integer's range (-1 to u8) is undefined behaviour in a
    // direct conversion: go through int64, whose conversion to the narrow type wraps (as PyTorch's).
    return static_cast<T>(static_cast<int64_t>(v));
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace minidl::kernels::cpu
