// CPU kernels of the AMP layer: GradScaler's fused unscale + non-finite check (one pass, in place).
#include <bit>
#include <cmath>

#include "ops/cpu/loops.h"
#include "ops/cpu/scalar.h"
#include "ops/kernels.h"

namespace minidl::kernels::cpu {

namespace {
// A value is inf or NaN exactly when its exponent bits are all ones. OR-ing that test over the
// bit patterns is an integer reduction, which vectorizes (a floating-point one would not).
inline uint32_t nonfinite_bit(float v) { return (~std::bit_cast<uint32_t>(v) & 0x7f800000u) == 0; }
inline uint32_t nonfinite_bit(double v) { return (~std::bit_cast<uint64_t>(v) & 0x7ff0000000000000ull) == 0; }

template <class C>
uint32_t scale_row(C* p, int64_t n, C s) {
  uint32_t any = 0;
  for (int64_t i = 0; i < n; ++i) {
    any |= nonfinite_bit(p[i]);
    p[i] *= s;
  }
  return any;
}

template <class T>
bool unscale_typed(T* p, int64_t n, float inv, std::pair<int64_t, int64_t>* counts) {
  using C = compute_t<T>;
  const C s = static_cast<C>(inv);
  uint32_t any = 0;
  if constexpr (is_low_precision_v<T>) {
    float buf[kBlock];
    for (int64_t b = 0; b < n; b += kBlock) {
      const int64_t m = std::min(kBlock, n - b);
      load_block(p + b, buf, m);
      any |= scale_row<float>(buf, m, s);
      store_block(buf, p + b, m);
    }
  } else {
    any = scale_row<C>(p, n, s);
  }
  const bool found = any != 0;
  if (found && counts) {
    int64_t inf = 0, nan = 0;
    for (int64_t i = 0; i < n; ++i) {
      const C v = static_cast<C>(p[i]);
      if (std::isnan(v)) ++nan;
      else if (std::isinf(v)) ++inf;
    }
    *counts = {inf, nan};
  } else if (counts) {
    *counts = {0, 0};
  }
  return found;
}

bool unscale(const Tensor& grad, float inv, std::pair<int64_t, int64_t>* counts) {
  MINIDL_CHECK(grad.is_contiguous(), "non_finite_check_and_unscale", "expected a contiguous gradient, got a strided ",
               grad.meta_str());
  return visit_floating(grad.dtype(), "non_finite_check_and_unscale", [&]<class T>() {
    return unscale_typed<T>(static_cast<T*>(grad.raw_data()), grad.numel(), inv, counts);
  });
}
}  // namespace

void register_amp(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) r.unscale.set(DeviceType::CPU, t, unscale);
}

}  // namespace minidl::kernels::cpu
