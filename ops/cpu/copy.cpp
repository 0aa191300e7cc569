// CPU fill and copy/cast kernels (any dtype pair, any strides, broadcasting source).
#include <cstring>

#include "ops/cpu/loops.h"
#include "ops/cpu/scalar.h"
#include "ops/kernels.h"

namespace minidl::kernels::cpu {

namespace {
void fill(const Tensor& out, double value) {
  visit_dtype(out.dtype(), "fill_", [&]<class T>() {
    const T v = cast_scalar<T>(value);
    T* base = static_cast<T*>(out.raw_data());
    auto loop = make_loop<1>(out.shape(), {&out});
    for_each_row(loop, [&](const std::array<int64_t, 1>& off, int64_t n, const std::array<int64_t, 1>& st) {
      T* p = base + off[0];
      if (st[0] == 1) std::fill(p, p + n, v);
      else for (int64_t i = 0; i < n; ++i) p[i * st[0]] = v;
    });
  });
}

template <class T, class S>
void copy_typed(const Tensor& dst, const Tensor& src) {
  T* d = static_cast<T*>(dst.raw_data());
  const S* s = static_cast<const S*>(src.raw_data());
  auto loop = make_loop<2>(dst.shape(), {&dst, &src});
  for_each_row(loop, [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
    T* dp = d + off[0];
    const S* sp = s + off[1];
    if (st[0] == 1 && st[1] == 1) {
      if constexpr (std::is_same_v<T, S>) std::memcpy(dp, sp, n * sizeof(T));
      else if constexpr (is_low_precision_v<S> && std::is_same_v<T, float>) load_block(sp, dp, n);
      else if constexpr (is_low_precision_v<T> && std::is_same_v<S, float>) store_block(sp, dp, n);
      else for (int64_t i = 0; i < n; ++i) dp[i] = cast_scalar<T>(sp[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) dp[i * st[0]] = cast_scalar<T>(sp[i * st[1]]);
    }
  });
}

void copy(const Tensor& dst, const Tensor& src) {
  visit_dtype(dst.dtype(), "copy_", [&]<class T>() {
    visit_dtype(src.dtype(), "copy_", [&]<class S>() { copy_typed<T, S>(dst, src); });
  });
}
}  // namespace

void register_copy(Registry& r) {
  r.fill.set_all(DeviceType::CPU, fill);
  r.copy.set_all(DeviceType::CPU, copy);
}

}  // namespace minidl::kernels::cpu
