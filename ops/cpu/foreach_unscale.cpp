// CPU kernel of the foreach unscale-and-check family (GradScaler's pass): every tensor of the list
// is multiplied by inv_scale in place, in one pass, and reports whether it held inf/NaN.
#include <bit>
#include <cmath>

#include "ops/cpu/convert.h"
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

// Adds the infs and NaNs among p[0, n) to c (diagnostics only: not on the hot path).
template <class C>
void count_row(const C* p, int64_t n, NonFiniteCount& c) {
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(p[i])) ++c.nan;
    else if (std::isinf(p[i])) ++c.inf;
  }
}

template <class T>
NonFiniteCount unscale_one(T* p, int64_t n, float inv, bool count) {
  using C = compute_t<T>;
  const C s = static_cast<C>(inv);
  NonFiniteCount r;
  uint32_t any = 0;
  auto row = [&](C* x, int64_t m) {
    if (count) count_row(x, m, r);  // the incoming values
    any |= scale_row<C>(x, m, s);
  };
  if constexpr (is_low_precision_v<T>) {
    float buf[kBlock];
    for (int64_t b = 0; b < n; b += kBlock) {
      const int64_t m = std::min(kBlock, n - b);
      load_block(p + b, buf, m);
      row(buf, m);
      store_block(buf, p + b, m);
    }
  } else {
    row(p, n);
  }
  r.found = any != 0;
  return r;
}

void foreach_unscale(const std::vector<Tensor>& tensors, float inv, bool count, std::vector<NonFiniteCount>& out) {
  out.assign(tensors.size(), {});
  if (tensors.empty()) return;
  visit_floating(tensors[0].dtype(), "foreach_non_finite_check_and_unscale_", [&]<class T>() {
    for (size_t i = 0; i < tensors.size(); ++i)
      out[i] = unscale_one<T>(static_cast<T*>(tensors[i].raw_data()), tensors[i].numel(), inv, count);
  });
}
}  // namespace

void register_foreach_unscale(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16})
    r.foreach_unscale.set(DeviceType::CPU, t, foreach_unscale);
}

}  // namespace minidl::kernels::cpu
