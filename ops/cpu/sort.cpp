// CPU sort kernel (ops/kernels.h SortFn): each line's keys (widened for f16/bf16) are gathered into
// a buffer and an index permutation sorted over them with std::stable_sort by sort_comes_before,
// so equal values keep their order and NaN goes above every number. Lines run in parallel.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "ops/cpu/loops.h"
#include "ops/cpu/scalar.h"
#include "ops/kernels.h"

namespace minidl::kernels::cpu {

namespace {
// The value a line is ordered by: f16/bf16 widened, bool and integers as themselves.
template <class T>
auto key_of(T v) {
  if constexpr (is_low_precision_v<T>) return static_cast<float>(v);
  else return v;
}

void sort(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t dim, bool descending) {
  const Split3 s = split_at(x.shape(), dim);
  if (s.mid == 0) return;
  visit_dtype(x.dtype(), "sort", [&]<class T>() {
    const T* px = static_cast<const T*>(x.raw_data());
    T* pv = static_cast<T*>(values.raw_data());
    int64_t* pi = static_cast<int64_t*>(indices.raw_data());
    const int64_t lines = s.outer * s.inner;
    // Cost per line: about n log n comparisons.
    const int64_t cost = s.mid * std::max<int64_t>(1, static_cast<int64_t>(std::log2(static_cast<double>(s.mid)) + 1));
    parallel_for(lines, cost, [&](int64_t b, int64_t e) {
      using K = decltype(key_of(T{}));
      std::vector<K> keys(s.mid);
      std::vector<int64_t> order(s.mid);
      for (int64_t line = b; line < e; ++line) {
        const int64_t o = line / s.inner, c = line % s.inner;
        const int64_t base = o * s.mid * s.inner + c;
        for (int64_t i = 0; i < s.mid; ++i) keys[i] = key_of(px[base + i * s.inner]);
        std::iota(order.begin(), order.end(), int64_t{0});
        std::stable_sort(order.begin(), order.end(),
                         [&](int64_t i, int64_t j) { return sort_comes_before(keys[i], keys[j], descending); });
        for (int64_t r = 0; r < s.mid; ++r) {
          pv[base + r * s.inner] = px[base + order[r] * s.inner];
          pi[base + r * s.inner] = order[r];
        }
      }
    });
  });
}
}  // namespace

void register_sort(Registry& r) { r.sort.set_all(DeviceType::CPU, sort); }

}  // namespace minidl::kernels::cpu
