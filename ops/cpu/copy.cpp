// CPU fill and copy/cast kernels (any dtype pair, any strides, broadcasting source).
#include <algorithm>
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

// A 2-D copy whose source runs along the destination's outer dim (.contiguous() of a transposed
// matrix) goes tile by tile: within a 32 x 32 tile the source's 32 cache lines stay in L1 while
// the destination is written row by row, where a row-at-a-time copy reads the source with a
// stride of a whole row per element. False when the copy is not such a transpose.
template <class T, class S>
bool copy_transposed(const Loop<2>& loop, T* d, const S* s) {
  if (loop.shape.size() != 2 || loop.strides[0][1] != 1 || loop.strides[1][0] != 1) return false;
  const int64_t rows = loop.shape[0], cols = loop.shape[1];
  const int64_t dld = loop.strides[0][0], sld = loop.strides[1][1];
  constexpr int64_t kTile = 32;
  if (rows < kTile || cols < kTile) return false;
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  parallel_for(row_tiles, kTile * cols, [&](int64_t t0, int64_t t1) {
    for (int64_t i0 = t0 * kTile; i0 < std::min(rows, t1 * kTile); i0 += kTile)
      for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
        const int64_t i1 = std::min(rows, i0 + kTile), j1 = std::min(cols, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = j0; j < j1; ++j) d[i * dld + j] = cast_scalar<T>(s[i + j * sld]);
      }
  });
  return true;
}

template <class T, class S>
void copy_typed(const Tensor& dst, const Tensor& src) {
  T* d = static_cast<T*>(dst.raw_data());
  const S* s = static_cast<const S*>(src.raw_data());
  auto loop = make_loop<2>(dst.shape(), {&dst, &src});
  if (copy_transposed(loop, d, s)) return;
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
