// CPU indexing kernels: index_select / index_add (whole slices picked by a 1-D index, e.g. an
// embedding lookup and its gradient) and gather / scatter_add (one element per index entry). The
// differentiable ops in ops/index.cpp validate every index before calling these, so kernels do no
// bounds checks. index_select and gather run in parallel; index_add splits the work so that no two
// threads write the same element; scatter_add runs serially (repeated indices collide anywhere).
#include <algorithm>
#include <cstring>

#include "ops/cpu/loops.h"
#include "ops/cpu/scalar.h"
#include "ops/kernels.h"

namespace minidl::kernels::cpu {

namespace {

template <class T>
T add_values(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a || b;
  else if constexpr (is_low_precision_v<T>) return T(static_cast<float>(a) + static_cast<float>(b));
  else return a + b;
}

// out [outer, k, inner] <- x [outer, n, inner] at rows index[0..k); x, index, out contiguous.
void index_select(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  const Split3 s = split_at(x.shape(), dim);
  const int64_t k = index.numel();
  const int64_t* idx = static_cast<const int64_t*>(index.raw_data());
  visit_dtype(x.dtype(), "index_select", [&]<class T>() {
    const T* px = static_cast<const T*>(x.raw_data());
    T* po = static_cast<T*>(out.raw_data());
    parallel_for(s.outer * k, s.inner, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t o = r / k, i = r % k;
        const T* src = px + (o * s.mid + idx[i]) * s.inner;
        T* dst = po + r * s.inner;
        if (s.inner == 1) *dst = *src;
        else std::memcpy(dst, src, s.inner * sizeof(T));
      }
    });
  });
}

// out [outer, n, inner] += src [outer, k, inner] into rows index[0..k); out and src contiguous.
// Threads own disjoint column ranges (inner) or disjoint outer slices, so repeated indices are safe.
void index_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  const Split3 s = split_at(out.shape(), dim);
  const int64_t k = index.numel();
  const int64_t* idx = static_cast<const int64_t*>(index.raw_data());
  visit_dtype(out.dtype(), "index_add", [&]<class T>() {
    const T* ps = static_cast<const T*>(src.raw_data());
    T* po = static_cast<T*>(out.raw_data());
    auto run = [&](int64_t o0, int64_t o1, int64_t c0, int64_t c1) {
      for (int64_t o = o0; o < o1; ++o)
        for (int64_t i = 0; i < k; ++i) {
          const T* sp = ps + (o * k + i) * s.inner;
          T* op = po + (o * s.mid + idx[i]) * s.inner;
          for (int64_t c = c0; c < c1; ++c) op[c] = add_values(op[c], sp[c]);
        }
    };
    if (s.inner >= 64 || s.outer == 1)
      parallel_for(s.inner, s.outer * k, [&](int64_t c0, int64_t c1) { run(0, s.outer, c0, c1); });
    else
      parallel_for(s.outer, k * s.inner, [&](int64_t o0, int64_t o1) { run(o0, o1, 0, s.inner); });
  });
}

// A view of x with index's shape whose stride along dim is 0: the loop then supplies the offset of
// every coordinate except dim, and the kernel adds index * x.stride(dim).
Tensor along_index(const Tensor& x, const Tensor& index, int64_t dim) {
  Shape strides = x.strides();
  strides[dim] = 0;
  return make_view(x, index.shape(), strides, x.offset());
}

// out (index's shape, contiguous) <- x[..., index[...], ...] along dim; x and index any strides.
void gather(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  const Tensor xv = along_index(x, index, dim);
  const int64_t xs = x.strides()[dim];
  const int64_t* pi = static_cast<const int64_t*>(index.raw_data());
  visit_dtype(x.dtype(), "gather", [&]<class T>() {
    const T* px = static_cast<const T*>(xv.raw_data());
    T* po = static_cast<T*>(out.raw_data());
    auto loop = make_loop<3>(index.shape(), {&out, &index, &xv});
    for_each_row(loop, [&](const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& st) {
      T* o = po + off[0];
      const int64_t* ip = pi + off[1];
      const T* xp = px + off[2];
      for (int64_t i = 0; i < n; ++i) o[i] = xp[i * st[2] + ip[i * st[1]] * xs];
    });
  });
}

// out[..., index[...], ...] += src[...] along dim; index and src share a shape. Serial: any two
// entries may target the same element.
void scatter_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  const Tensor ov = along_index(out, index, dim);
  const int64_t os = out.strides()[dim];
  const int64_t* pi = static_cast<const int64_t*>(index.raw_data());
  visit_dtype(out.dtype(), "scatter_add", [&]<class T>() {
    const T* ps = static_cast<const T*>(src.raw_data());
    T* po = static_cast<T*>(ov.raw_data());
    auto loop = make_loop<3>(index.shape(), {&src, &index, &ov}, /*in_memory_order=*/false);  // sums in order
    auto row = [&](const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& st) {
      const T* sp = ps + off[0];
      const int64_t* ip = pi + off[1];
      T* op = po + off[2];
      for (int64_t i = 0; i < n; ++i) {
        T& dst = op[i * st[2] + ip[i * st[1]] * os];
        dst = add_values(dst, sp[i * st[0]]);
      }
    };
    if (loop.numel > 0) for_range(loop, 0, loop.numel, row);
  });
}
}  // namespace

void register_index(Registry& r) {
  r.index_select.set_all(DeviceType::CPU, index_select);
  r.index_add.set_all(DeviceType::CPU, index_add);
  r.gather.set_all(DeviceType::CPU, gather);
  r.scatter_add.set_all(DeviceType::CPU, scatter_add);
}

}  // namespace minidl::kernels::cpu
