// CPU batch norm kernels over x viewed as [N, C, S]: per-channel statistics (one pass, shifted sums
// accumulated in f64), the per-channel affine apply y = x*scale + shift (one pass), and the backward
// (one pass for sum(dy) and sum(dy*xhat), one pass writing dx = a*dy + b*x + d with per-channel
// constants). batch_norm_add_relu's residual is added in the apply's pass. With the ReLU the apply clamps in the same pass and the backward reads
// the ReLU's output alongside gy, zeroing gy where it is <= 0 (ReluBackward's rule), in both
// passes. f16/bf16 are widened to f32 in blocks. Channels (statistics) or rows (element-wise
// passes) are split across the pool. With S == 1 (2-D input, or channels-last images) the
// contiguous run is a row of channels: those go to the row kernels of ops/cpu/batch_norm_rows.h.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/cpu/batch_norm_rows.h"
#include "ops/cpu/loops.h"
#include "ops/cpu/scalar.h"
#include "ops/kernels.h"

namespace minidl::kernels::cpu {

namespace {

struct Layout {
  int64_t N, C, S;
  explicit Layout(const Tensor& x) : N(x.size(0)), C(x.size(1)), S(x.numel() / std::max<int64_t>(1, x.size(0) * x.size(1))) {}
};

// Calls f(values, offset, m) over p[0, n) in blocks of compute-type values.
template <class T, class F>
inline void for_blocks(const T* p, int64_t n, F&& f) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, C>) {
    f(p, int64_t{0}, n);
  } else {
    C buf[kBlock];
    for (int64_t s = 0; s < n; s += kBlock) {
      const int64_t m = std::min(kBlock, n - s);
      load_block(p + s, buf, m);
      f(static_cast<const C*>(buf), s, m);
    }
  }
}

// Adds sum(v - k) and sum((v - k)^2) over v[0, n) to s1, s2. Eight independent f64 lanes: the
// loop vectorizes without reassociating a single sum.
template <class C>
inline void shifted_sums(const C* v, int64_t n, double k, double& s1, double& s2) {
  double a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) {
      const double d = static_cast<double>(v[i + l]) - k;
      a[l] += d;
      b[l] += d * d;
    }
  for (; i < n; ++i) {
    const double d = static_cast<double>(v[i]) - k;
    a[0] += d;
    b[0] += d * d;
  }
  for (int l = 0; l < 8; ++l) {
    s1 += a[l];
    s2 += b[l];
  }
}

// Two inputs in lockstep.
template <class T, class F>
inline void for_blocks2(const T* p, const T* q, int64_t n, F&& f) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, C>) {
    f(p, q, int64_t{0}, n);
  } else {
    C a[kBlock], b[kBlock];
    for (int64_t s = 0; s < n; s += kBlock) {
      const int64_t m = std::min(kBlock, n - s);
      load_block(p + s, a, m);
      load_block(q + s, b, m);
      f(static_cast<const C*>(a), static_cast<const C*>(b), s, m);
    }
  }
}

// ReLU (ReluForward's rule: NaN propagates).
template <class C>
inline C relu_of(C v) { return v <= C(0) ? C(0) : v; }

// The backward's inputs gy and x in lockstep, f(g, v, offset, m), gy masked (Masked: batch_norm_relu)
// by the ReLU's output y as ReluBackward does: y <= 0 ? 0 : gy (NaN in y lets gy through). The mask
// is applied in blocks of compute-type values, in a loop of its own so that both it and the caller's
// loop vectorize (a select inside the f64 sums' loop did not: 0.2x).
template <bool Masked, class T, class F>
inline void for_grad_blocks(const T* g, const T* x, const T* y, int64_t n, F&& f) {
  using C = compute_t<T>;
  if constexpr (!Masked) {
    for_blocks2(g, x, n, f);
  } else {
    C gb[kBlock], yb[kBlock], xb[kBlock];
    for (int64_t s = 0; s < n; s += kBlock) {
      const int64_t m = std::min(kBlock, n - s);
      if constexpr (std::is_same_v<T, C>) {
        for (int64_t i = 0; i < m; ++i) gb[i] = y[s + i] <= C(0) ? C(0) : g[s + i];
        f(static_cast<const C*>(gb), x + s, s, m);
      } else {
        load_block(g + s, gb, m);
        load_block(y + s, yb, m);
        for (int64_t i = 0; i < m; ++i) gb[i] = yb[i] <= C(0) ? C(0) : gb[i];
        load_block(x + s, xb, m);
        f(static_cast<const C*>(gb), static_cast<const C*>(xb), s, m);
      }
    }
  }
}

// sum(g) and sum(g * (v - mean)) in eight f64 lanes (the loop vectorizes without reassociating a
// single sum), fed in pieces whose lengths are multiples of 8 except the last: element i goes to
// the same lane, in the same order, however the range is cut, so the masked and plain backward
// sum alike.
struct GradSums {
  double lanes_a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, lanes_b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  template <class C>
  void add(const C* g, const C* v, int64_t n, double mean) {
    // Local copies: the lanes stay in registers (members could alias the f64 data read here).
    double a[8], b[8];
    std::copy(lanes_a, lanes_a + 8, a);
    std::copy(lanes_b, lanes_b + 8, b);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int l = 0; l < 8; ++l) {
        const double gl = static_cast<double>(g[i + l]);
        a[l] += gl;
        b[l] += gl * (static_cast<double>(v[i + l]) - mean);
      }
    for (; i < n; ++i) {
      const double gl = static_cast<double>(g[i]);
      a[0] += gl;
      b[0] += gl * (static_cast<double>(v[i]) - mean);
    }
    std::copy(a, a + 8, lanes_a);
    std::copy(b, b + 8, lanes_b);
  }
  void add_to(double& s1, double& s2) const {
    for (int l = 0; l < 8; ++l) {
      s1 += lanes_a[l];
      s2 += lanes_b[l];
    }
  }
};

template <class T>
void stats(const Tensor& mean, const Tensor& var, const Tensor& x) {
  using C = compute_t<T>;
  const Layout L(x);
  const T* xp = x.data_ptr<T>();
  C* mp = mean.data_ptr<C>();
  C* vp = var.data_ptr<C>();
  const double M = static_cast<double>(L.N * L.S);
  if (L.S == 1) return bn_rows::stats(xp, L.N, L.C, mp, vp);
  parallel_for(L.C, std::max<int64_t>(1, L.N * L.S), [&](int64_t c0, int64_t c1) {
    // Sums of (x - k) with k = the channel's first value: no cancellation when |mean| >> std.
    std::vector<double> k(c1 - c0), s1(c1 - c0, 0.0), s2(c1 - c0, 0.0);
    if (L.N * L.S > 0)
      for (int64_t c = c0; c < c1; ++c) k[c - c0] = static_cast<double>(static_cast<C>(xp[c * L.S]));
    for (int64_t n = 0; n < L.N; ++n)
      for (int64_t c = c0; c < c1; ++c) {
        const double kc = k[c - c0];
        double a = 0, b = 0;
        for_blocks(xp + (n * L.C + c) * L.S, L.S, [&](const C* v, int64_t, int64_t m) { shifted_sums(v, m, kc, a, b); });
        s1[c - c0] += a;
        s2[c - c0] += b;
      }
    for (int64_t c = c0; c < c1; ++c) {
      const double m1 = s1[c - c0] / M;
      mp[c] = static_cast<C>(k[c - c0] + m1);
      vp[c] = static_cast<C>(std::max(0.0, s2[c - c0] / M - m1 * m1));
    }
  });
}

// y[n, c, s] = x * scale[c] + shift[c] (+ residual when Residual), then the ReLU when Relu, plane by
// plane (S > 1), rounded to T once at the end.
template <class T, bool Relu, bool Residual>
void apply_planes(T* y, const T* x, const T* residual, const Layout& L, const compute_t<T>* scale,
                  const compute_t<T>* shift) {
  using C = compute_t<T>;
  auto value = [](C v, C a, C b, C r) {
    C z = v * a + b;
    if constexpr (Residual) z += r;
    return Relu ? relu_of(z) : z;
  };
  parallel_for(L.N * L.C, L.S, [&](int64_t r0, int64_t r1) {
    C z[kBlock];
    for (int64_t r = r0; r < r1; ++r) {
      const C a = scale[r % L.C], b = shift[r % L.C];
      T* o = y + r * L.S;
      const T* res = Residual ? residual + r * L.S : x + r * L.S;  // unread unless Residual
      if constexpr (std::is_same_v<T, C>) {
        const C* v = x + r * L.S;
        for (int64_t i = 0; i < L.S; ++i) o[i] = value(v[i], a, b, res[i]);
      } else {
        for_blocks2(x + r * L.S, res, L.S, [&](const C* v, const C* rv, int64_t off, int64_t m) {
          for (int64_t i = 0; i < m; ++i) z[i] = value(v[i], a, b, rv[i]);
          store_block(z, o + off, m);
        });
      }
    }
  });
}

template <class T>
void apply(const Tensor& y, const Tensor& x, const Tensor& scale, const Tensor& shift, bool relu, const Tensor& residual) {
  using C = compute_t<T>;
  const Layout L(x);
  const C* a = scale.data_ptr<C>();
  const C* b = shift.data_ptr<C>();
  T* yp = y.data_ptr<T>();
  const T* xp = x.data_ptr<T>();
  const T* rp = residual.defined() ? residual.data_ptr<T>() : nullptr;
  auto run = [&]<bool Relu, bool Residual>() {
    if (L.S == 1) bn_rows::apply<T, Relu, Residual>(yp, xp, rp, L.N, L.C, a, b);
    else apply_planes<T, Relu, Residual>(yp, xp, rp, L, a, b);
  };
  if (rp) {
    if (relu) run.template operator()<true, true>();
    else run.template operator()<false, true>();
  } else {
    if (relu) run.template operator()<true, false>();
    else run.template operator()<false, false>();
  }
}

template <class T, bool Masked>
void backward(const Tensor& gx, const Tensor& sum_dy, const Tensor& sum_dy_xhat, const Tensor& gy, const Tensor& x,
              const Tensor& mean, const Tensor& invstd, const Tensor& scale, bool training, const Tensor& relu_out) {
  using C = compute_t<T>;
  const Layout L(x);
  const T* xp = x.data_ptr<T>();
  const T* gp = gy.data_ptr<T>();
  const T* yp = Masked ? relu_out.data_ptr<T>() : xp;  // unread unless Masked
  const C* mp = mean.data_ptr<C>();
  const C* ip = invstd.data_ptr<C>();
  C* sdy = sum_dy.data_ptr<C>();
  C* sdx = sum_dy_xhat.data_ptr<C>();
  // Pass 1: per channel sum(dy) and sum(dy * (x - mean)).
  if (L.S == 1) {  // rows of channels
    std::vector<double> s1, s2;
    bn_rows::grad_sums<T, Masked>(gp, xp, yp, L.N, L.C, mp, s1, s2);
    for (int64_t c = 0; c < L.C; ++c) {
      sdy[c] = static_cast<C>(s1[c]);
      sdx[c] = static_cast<C>(s2[c] * ip[c]);
    }
  } else {  // channel planes, split by channels
    parallel_for(L.C, std::max<int64_t>(1, 2 * L.N * L.S), [&](int64_t c0, int64_t c1) {
      std::vector<double> s1(c1 - c0, 0.0), s2(c1 - c0, 0.0);
      for (int64_t n = 0; n < L.N; ++n)
        for (int64_t c = c0; c < c1; ++c) {
          const double mc = mp[c];
          GradSums sums;
          const int64_t base = (n * L.C + c) * L.S;
          for_grad_blocks<Masked>(gp + base, xp + base, yp + base, L.S,
                                  [&](const C* g, const C* v, int64_t, int64_t m) { sums.add(g, v, m, mc); });
          double a = 0, b = 0;
          sums.add_to(a, b);
          s1[c - c0] += a;
          s2[c - c0] += b;
        }
      for (int64_t c = c0; c < c1; ++c) {
        sdy[c] = static_cast<C>(s1[c - c0]);
        sdx[c] = static_cast<C>(s2[c - c0] * ip[c]);
      }
    });
  }
  if (!gx.defined()) return;
  // Pass 2: dx = a*dy + b*x + d per channel.
  const C* sp = scale.data_ptr<C>();
  const double M = static_cast<double>(L.N * L.S);
  std::vector<C> ca(L.C), cb(L.C), cd(L.C);
  for (int64_t c = 0; c < L.C; ++c) {
    ca[c] = sp[c];
    if (training) {
      const double k = static_cast<double>(sp[c]) * ip[c] * sdx[c] / M;
      cb[c] = static_cast<C>(-k);
      cd[c] = static_cast<C>(-static_cast<double>(sp[c]) * sdy[c] / M + static_cast<double>(mp[c]) * k);
    } else {
      cb[c] = 0;
      cd[c] = 0;
    }
  }
  T* out = gx.data_ptr<T>();
  const C *A = ca.data(), *B = cb.data(), *D = cd.data();
  if (L.S == 1) return bn_rows::grad_input<T, Masked>(out, gp, xp, yp, L.N, L.C, A, B, D);
  parallel_for(L.N * L.C, 2 * L.S, [&](int64_t r0, int64_t r1) {
    C z[kBlock];
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c = r % L.C;
      const C a = A[c], b = B[c], d = D[c];
      if constexpr (std::is_same_v<T, C>) {  // one loop over the plane, the mask inside it
        const C* g = gp + r * L.S;
        const C* v = xp + r * L.S;
        const C* y = yp + r * L.S;
        C* o = out + r * L.S;
        if constexpr (Masked)
          for (int64_t i = 0; i < L.S; ++i) o[i] = a * (y[i] <= C(0) ? C(0) : g[i]) + b * v[i] + d;
        else
          for (int64_t i = 0; i < L.S; ++i) o[i] = a * g[i] + b * v[i] + d;
      } else {
        for_grad_blocks<Masked>(gp + r * L.S, xp + r * L.S, yp + r * L.S, L.S, [&](const C* g, const C* v, int64_t off, int64_t m) {
          for (int64_t i = 0; i < m; ++i) z[i] = a * g[i] + b * v[i] + d;
          store_block(z, out + r * L.S + off, m);
        });
      }
    }
  });
}

void stats_fn(const Tensor& mean, const Tensor& var, const Tensor& x) {
  visit_floating(x.dtype(), "batch_norm_stats", [&]<class T>() { stats<T>(mean, var, x); });
}
void apply_fn(const Tensor& y, const Tensor& x, const Tensor& scale, const Tensor& shift, bool relu, const Tensor& residual) {
  visit_floating(x.dtype(), "batch_norm_apply", [&]<class T>() { apply<T>(y, x, scale, shift, relu, residual); });
}
void backward_fn(const Tensor& gx, const Tensor& sum_dy, const Tensor& sum_dy_xhat, const Tensor& gy, const Tensor& x,
                 const Tensor& mean, const Tensor& invstd, const Tensor& scale, bool training, const Tensor& relu_out) {
  visit_floating(x.dtype(), "batch_norm_backward", [&]<class T>() {
    if (relu_out.defined()) backward<T, true>(gx, sum_dy, sum_dy_xhat, gy, x, mean, invstd, scale, training, relu_out);
    else backward<T, false>(gx, sum_dy, sum_dy_xhat, gy, x, mean, invstd, scale, training, relu_out);
  });
}
}  // namespace

void register_batch_norm(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    r.batch_norm_stats.set(DeviceType::CPU, t, stats_fn);
    r.batch_norm_apply.set(DeviceType::CPU, t, apply_fn);
    r.batch_norm_backward.set(DeviceType::CPU, t, backward_fn);
  }
}

}  // namespace minidl::kernels::cpu
