// CPU 2-D pooling: max (with indices), average and adaptive average, and their backward passes.
// Each (n, c) plane is independent, so planes run in parallel. f16/bf16 planes are widened to f32
// into a scratch buffer, pooled in f32 and narrowed once. Windows and divisors follow PyTorch's
// CPU kernels exactly (max: first maximum wins, NaN propagates; avg: count_include_pad divides by
// the window clipped to the padded input).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/cpu/loops.h"
#include "ops/cpu/scalar.h"
#include "ops/kernels.h"

namespace minidl::kernels::cpu {

namespace {

// Plane p of a contiguous [planes, n] tensor, as compute-type values: the storage itself for
// f32/f64, else widened into buf.
template <class T>
const compute_t<T>* load_plane(const T* base, int64_t p, int64_t n, std::vector<compute_t<T>>& buf) {
  if constexpr (std::is_same_v<T, compute_t<T>>) {
    return base + p * n;
  } else {
    buf.resize(n);
    load_block(base + p * n, buf.data(), n);
    return buf.data();
  }
}

// Runs f(plane, in_buf, out_buf) for every (n, c) plane, in parallel across planes.
template <class C, class F>
void for_each_plane(const Pool2dGeometry& g, F&& f) {
  const int64_t planes = g.N * g.C;
  parallel_for(planes, std::max<int64_t>(1, g.H * g.W + g.OH * g.OW), [&](int64_t b, int64_t e) {
    std::vector<C> in_buf, out_buf;
    for (int64_t p = b; p < e; ++p) f(p, in_buf, out_buf);
  });
}

// One output row of a 2x2, stride-2 max pool over input rows a and a + W, branch-free so that it
// vectorizes: columns [0, n). Same tie and NaN rules as the general loop. Returns n.
template <class C>
int64_t max_row_2x2(const C* a, int64_t W, int64_t base, int64_t n, C* out, int64_t* ind) {
  const C* b = a + W;
  for (int64_t ow = 0; ow < n; ++ow) {
    const C a0 = a[2 * ow], a1 = a[2 * ow + 1], b0 = b[2 * ow], b1 = b[2 * ow + 1];
    C m = a0;
    int64_t k = 0;
    bool t = a1 > m || a1 != a1;
    m = t ? a1 : m;
    k = t ? 1 : k;
    t = b0 > m || b0 != b0;
    m = t ? b0 : m;
    k = t ? W : k;
    t = b1 > m || b1 != b1;
    m = t ? b1 : m;
    k = t ? W + 1 : k;
    out[ow] = m;
    ind[ow] = base + 2 * ow + k;
  }
  return n;
}

template <class T>
void max_pool_forward(const Tensor& y, const Tensor& indices, const Tensor& x, const Pool2dGeometry& g) {
  using C = compute_t<T>;
  constexpr bool widen = !std::is_same_v<T, C>;
  const T* xp = x.data_ptr<T>();
  T* yp = y.data_ptr<T>();
  int64_t* ip = indices.data_ptr<int64_t>();
  const int64_t HW = g.H * g.W, P = g.OH * g.OW;
  // Window bounds per output row and column, as PyTorch: [start, end) clipped to the input, the
  // start moved to the first tap inside (taps are dilation apart).
  std::vector<int64_t> hs(g.OH), he(g.OH), ws(g.OW), we(g.OW);
  for (int64_t oh = 0; oh < g.OH; ++oh) {
    int64_t s = oh * g.sh - g.ph;
    he[oh] = std::min(s + (g.kH - 1) * g.dh + 1, g.H);
    while (s < 0) s += g.dh;
    hs[oh] = s;
  }
  for (int64_t ow = 0; ow < g.OW; ++ow) {
    int64_t s = ow * g.sw - g.pw;
    we[ow] = std::min(s + (g.kW - 1) * g.dw + 1, g.W);
    while (s < 0) s += g.dw;
    ws[ow] = s;
  }
  const bool unit = g.dh == 1 && g.dw == 1;
  // 2x2 windows, stride 2, no padding: whole rows go through the branch-free loop; the output
  // columns whose window is complete are [0, full_w).
  const bool fast2x2 = unit && g.kH == 2 && g.kW == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0;
  const int64_t full_w = std::min(g.OW, g.W / 2);
  for_each_plane<C>(g, [&](int64_t p, std::vector<C>& in_buf, std::vector<C>& out_buf) {
    const C* xin = load_plane(xp, p, HW, in_buf);
    C* out;
    if constexpr (widen) {
      out_buf.resize(P);
      out = out_buf.data();
    } else {
      out = yp + p * P;
    }
    int64_t* ind = ip + p * P;
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      const int64_t h0 = hs[oh], h1 = he[oh];
      int64_t ow = 0;
      if (fast2x2 && h1 - h0 == 2) ow = max_row_2x2(xin + h0 * g.W, g.W, h0 * g.W, full_w, out + oh * g.OW, ind + oh * g.OW);
      for (; ow < g.OW; ++ow) {
        const int64_t w0 = ws[ow], w1 = we[ow];
        // The first maximum wins; a NaN wins over everything after it (PyTorch's comparison).
        int64_t best = h0 * g.W + w0;
        C m;
        auto take = [&](C v, int64_t i) {
          if (v > m || std::isnan(v)) {
            m = v;
            best = i;
          }
        };
        if (unit && h1 - h0 == 2 && w1 - w0 == 2) {  // the common 2x2 window, unrolled
          m = xin[best];
          const int64_t b = best;
          take(xin[b + 1], b + 1);
          take(xin[b + g.W], b + g.W);
          take(xin[b + g.W + 1], b + g.W + 1);
        } else {
          m = -std::numeric_limits<C>::infinity();
          for (int64_t ih = h0; ih < h1; ih += g.dh)
            for (int64_t iw = w0; iw < w1; iw += g.dw) take(xin[ih * g.W + iw], ih * g.W + iw);
        }
        out[oh * g.OW + ow] = m;
        ind[oh * g.OW + ow] = best;
      }
    }
    if constexpr (widen) store_block(out_buf.data(), yp + p * P, P);
  });
}

template <class T>
void max_pool_backward(const Tensor& gx, const Tensor& gy, const Tensor& indices, const Pool2dGeometry& g) {
  using C = compute_t<T>;
  const T* gyp = gy.data_ptr<T>();
  T* gxp = gx.data_ptr<T>();
  const int64_t* ip = indices.data_ptr<int64_t>();
  const int64_t HW = g.H * g.W, P = g.OH * g.OW;
  for_each_plane<C>(g, [&](int64_t p, std::vector<C>& in_buf, std::vector<C>& out_buf) {
    const C* gin = load_plane(gyp, p, P, in_buf);
    out_buf.assign(HW, C(0));
    const int64_t* ind = ip + p * P;
    for (int64_t o = 0; o < P; ++o) out_buf[ind[o]] += gin[o];
    store_block(out_buf.data(), gxp + p * HW, HW);
  });
}

template <class T>
void avg_pool_forward(const Tensor& y, const Tensor& x, const Pool2dGeometry& g) {
  using C = compute_t<T>;
  const T* xp = x.data_ptr<T>();
  T* yp = y.data_ptr<T>();
  const int64_t HW = g.H * g.W, P = g.OH * g.OW;
  for_each_plane<C>(g, [&](int64_t p, std::vector<C>& in_buf, std::vector<C>& out_buf) {
    const C* xin = load_plane(xp, p, HW, in_buf);
    out_buf.resize(P);
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const PoolWindow w = avg_pool_window(g, oh, ow);
        C s = 0;
        for (int64_t ih = w.hs; ih < w.he; ++ih)
          for (int64_t iw = w.ws; iw < w.we; ++iw) s += xin[ih * g.W + iw];
        out_buf[oh * g.OW + ow] = (w.hs >= w.he || w.ws >= w.we) ? C(0) : static_cast<C>(s / static_cast<C>(w.divisor));
      }
    store_block(out_buf.data(), yp + p * P, P);
  });
}

template <class T>
void avg_pool_backward(const Tensor& gx, const Tensor& gy, const Pool2dGeometry& g) {
  using C = compute_t<T>;
  const T* gyp = gy.data_ptr<T>();
  T* gxp = gx.data_ptr<T>();
  const int64_t HW = g.H * g.W, P = g.OH * g.OW;
  for_each_plane<C>(g, [&](int64_t p, std::vector<C>& in_buf, std::vector<C>& out_buf) {
    const C* gin = load_plane(gyp, p, P, in_buf);
    out_buf.assign(HW, C(0));
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const PoolWindow w = avg_pool_window(g, oh, ow);
        if (w.hs >= w.he || w.ws >= w.we) continue;
        const C v = gin[oh * g.OW + ow] / static_cast<C>(w.divisor);
        for (int64_t ih = w.hs; ih < w.he; ++ih)
          for (int64_t iw = w.ws; iw < w.we; ++iw) out_buf[ih * g.W + iw] += v;
      }
    store_block(out_buf.data(), gxp + p * HW, HW);
  });
}

void max_fwd(const Tensor& y, const Tensor& indices, const Tensor& x, const Pool2dGeometry& g) {
  visit_floating(x.dtype(), "max_pool2d", [&]<class T>() { max_pool_forward<T>(y, indices, x, g); });
}
void max_bwd(const Tensor& gx, const Tensor& gy, const Tensor& indices, const Pool2dGeometry& g) {
  visit_floating(gy.dtype(), "max_pool2d_backward", [&]<class T>() { max_pool_backward<T>(gx, gy, indices, g); });
}
void avg_fwd(const Tensor& y, const Tensor& x, const Pool2dGeometry& g) {
  visit_floating(x.dtype(), "avg_pool2d", [&]<class T>() { avg_pool_forward<T>(y, x, g); });
}
void avg_bwd(const Tensor& gx, const Tensor& gy, const Pool2dGeometry& g) {
  visit_floating(gy.dtype(), "avg_pool2d_backward", [&]<class T>() { avg_pool_backward<T>(gx, gy, g); });
}
}  // namespace

void register_pool(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    r.max_pool2d.set(DeviceType::CPU, t, max_fwd);
    r.max_pool2d_backward.set(DeviceType::CPU, t, max_bwd);
    r.avg_pool2d.set(DeviceType::CPU, t, avg_fwd);
    r.avg_pool2d_backward.set(DeviceType::CPU, t, avg_bwd);
  }
}

}  // namespace minidl::kernels::cpu
