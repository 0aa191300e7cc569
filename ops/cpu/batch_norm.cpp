// CPU batch norm kernels over x viewed as [N, C, S]: per-channel statistics (one pass, shifted sums
// accumulated in f64), the per-channel affine apply y = x*scale + shift (one pass), and the backward
// (one pass for sum(dy) and sum(dy*xhat), one pass writing dx = a*dy + b*x + d with per-channel
// constants). f16/bf16 are widened to f32 in blocks. Channels (statistics) or rows (element-wise
// passes) are split across the OpenMP pool. With S == 1 (2-D input) the contiguous run is a row of
// channels, so those loops walk rows instead of channel planes.
#include <algorithm>
#include <cmath>
#include <vector>

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

// Adds sum(g) and sum(g * (v - mean)) over [0, n) to s1, s2 (eight f64 lanes, as above).
template <class C>
inline void grad_sums(const C* g, const C* v, int64_t n, double mean, double& s1, double& s2) {
  double a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
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
  for (int l = 0; l < 8; ++l) {
    s1 += a[l];
    s2 += b[l];
  }
}

template <class T>
void stats(const Tensor& mean, const Tensor& var, const Tensor& x) {
  using C = compute_t<T>;
  const Layout L(x);
  const T* xp = x.data_ptr<T>();
  C* mp = mean.data_ptr<C>();
  C* vp = var.data_ptr<C>();
  const double M = static_cast<double>(L.N * L.S);
  parallel_for(L.C, std::max<int64_t>(1, L.N * L.S), [&](int64_t c0, int64_t c1) {
    // Sums of (x - k) with k = the channel's first value: no cancellation when |mean| >> std.
    std::vector<double> k(c1 - c0), s1(c1 - c0, 0.0), s2(c1 - c0, 0.0);
    if (L.N * L.S > 0)
      for (int64_t c = c0; c < c1; ++c) k[c - c0] = static_cast<double>(static_cast<C>(xp[c * L.S]));
    for (int64_t n = 0; n < L.N; ++n) {
      if (L.S == 1) {
        for_blocks(xp + n * L.C + c0, c1 - c0, [&](const C* v, int64_t off, int64_t m) {
          for (int64_t i = 0; i < m; ++i) {
            const double d = static_cast<double>(v[i]) - k[off + i];
            s1[off + i] += d;
            s2[off + i] += d * d;
          }
        });
      } else {
        for (int64_t c = c0; c < c1; ++c) {
          const double kc = k[c - c0];
          double a = 0, b = 0;
          for_blocks(xp + (n * L.C + c) * L.S, L.S, [&](const C* v, int64_t, int64_t m) { shifted_sums(v, m, kc, a, b); });
          s1[c - c0] += a;
          s2[c - c0] += b;
        }
      }
    }
    for (int64_t c = c0; c < c1; ++c) {
      const double m1 = s1[c - c0] / M;
      mp[c] = static_cast<C>(k[c - c0] + m1);
      vp[c] = static_cast<C>(std::max(0.0, s2[c - c0] / M - m1 * m1));
    }
  });
}

// out[n, c, s] = f(c, in values...) for every element; rows are (n, c) planes (S > 1) or (n) rows.
template <class T, class F>
void per_channel_map(T* out, const T* x, const Layout& L, F&& f) {
  using C = compute_t<T>;
  if (L.S == 1) {
    parallel_for(L.N, std::max<int64_t>(1, L.C), [&](int64_t n0, int64_t n1) {
      C z[kBlock];
      for (int64_t n = n0; n < n1; ++n)
        for_blocks(x + n * L.C, L.C, [&](const C* v, int64_t off, int64_t m) {
          for (int64_t i = 0; i < m; ++i) z[i] = f(off + i, v[i]);
          store_block(z, out + n * L.C + off, m);
        });
    });
    return;
  }
  parallel_for(L.N * L.C, L.S, [&](int64_t r0, int64_t r1) {
    C z[kBlock];
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c = r % L.C;
      T* o = out + r * L.S;
      if constexpr (std::is_same_v<T, C>) {
        const C* v = x + r * L.S;
        for (int64_t i = 0; i < L.S; ++i) o[i] = f(c, v[i]);
      } else {
        for_blocks(x + r * L.S, L.S, [&](const C* v, int64_t off, int64_t m) {
          for (int64_t i = 0; i < m; ++i) z[i] = f(c, v[i]);
          store_block(z, o + off, m);
        });
      }
    }
  });
}

template <class T>
void apply(const Tensor& y, const Tensor& x, const Tensor& scale, const Tensor& shift) {
  using C = compute_t<T>;
  const Layout L(x);
  const C* a = scale.data_ptr<C>();
  const C* b = shift.data_ptr<C>();
  per_channel_map<T>(y.data_ptr<T>(), x.data_ptr<T>(), L, [a, b](int64_t c, C v) { return v * a[c] + b[c]; });
}

template <class T>
void backward(const Tensor& gx, const Tensor& sum_dy, const Tensor& sum_dy_xhat, const Tensor& gy, const Tensor& x,
              const Tensor& mean, const Tensor& invstd, const Tensor& scale, bool training) {
  using C = compute_t<T>;
  const Layout L(x);
  const T* xp = x.data_ptr<T>();
  const T* gp = gy.data_ptr<T>();
  const C* mp = mean.data_ptr<C>();
  const C* ip = invstd.data_ptr<C>();
  C* sdy = sum_dy.data_ptr<C>();
  C* sdx = sum_dy_xhat.data_ptr<C>();
  // Pass 1: per channel sum(dy) and sum(dy * (x - mean)).
  parallel_for(L.C, std::max<int64_t>(1, 2 * L.N * L.S), [&](int64_t c0, int64_t c1) {
    std::vector<double> s1(c1 - c0, 0.0), s2(c1 - c0, 0.0);
    for (int64_t n = 0; n < L.N; ++n) {
      if (L.S == 1) {
        for_blocks2(gp + n * L.C + c0, xp + n * L.C + c0, c1 - c0, [&](const C* g, const C* v, int64_t off, int64_t m) {
          for (int64_t i = 0; i < m; ++i) {
            s1[off + i] += g[i];
            s2[off + i] += static_cast<double>(g[i]) * (static_cast<double>(v[i]) - mp[c0 + off + i]);
          }
        });
      } else {
        for (int64_t c = c0; c < c1; ++c) {
          const double mc = mp[c];
          double a = 0, b = 0;
          const int64_t base = (n * L.C + c) * L.S;
          for_blocks2(gp + base, xp + base, L.S, [&](const C* g, const C* v, int64_t, int64_t m) { grad_sums(g, v, m, mc, a, b); });
          s1[c - c0] += a;
          s2[c - c0] += b;
        }
      }
    }
    for (int64_t c = c0; c < c1; ++c) {
      sdy[c] = static_cast<C>(s1[c - c0]);
      sdx[c] = static_cast<C>(s2[c - c0] * ip[c]);
    }
  });
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
  if (L.S == 1) {
    parallel_for(L.N, std::max<int64_t>(1, L.C), [&](int64_t n0, int64_t n1) {
      C z[kBlock];
      for (int64_t n = n0; n < n1; ++n)
        for_blocks2(gp + n * L.C, xp + n * L.C, L.C, [&](const C* g, const C* v, int64_t off, int64_t m) {
          for (int64_t i = 0; i < m; ++i) {
            const int64_t c = off + i;
            z[i] = A[c] * g[i] + B[c] * v[i] + D[c];
          }
          store_block(z, out + n * L.C + off, m);
        });
    });
    return;
  }
  parallel_for(L.N * L.C, 2 * L.S, [&](int64_t r0, int64_t r1) {
    C z[kBlock];
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c = r % L.C;
      const C a = A[c], b = B[c], d = D[c];
      if constexpr (std::is_same_v<T, C>) {
        const C* g = gp + r * L.S;
        const C* v = xp + r * L.S;
        C* o = out + r * L.S;
        for (int64_t i = 0; i < L.S; ++i) o[i] = a * g[i] + b * v[i] + d;
      } else {
        for_blocks2(gp + r * L.S, xp + r * L.S, L.S, [&](const C* g, const C* v, int64_t off, int64_t m) {
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
void apply_fn(const Tensor& y, const Tensor& x, const Tensor& scale, const Tensor& shift) {
  visit_floating(x.dtype(), "batch_norm_apply", [&]<class T>() { apply<T>(y, x, scale, shift); });
}
void backward_fn(const Tensor& gx, const Tensor& sum_dy, const Tensor& sum_dy_xhat, const Tensor& gy, const Tensor& x,
                 const Tensor& mean, const Tensor& invstd, const Tensor& scale, bool training) {
  visit_floating(x.dtype(), "batch_norm_backward",
                 [&]<class T>() { backward<T>(gx, sum_dy, sum_dy_xhat, gy, x, mean, invstd, scale, training); });
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
