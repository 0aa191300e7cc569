// CPU element-wise kernels: binary (with broadcasting, modulo and fused activation backward), unary
// and where. f32/f64 run directly in vectorizable loops; f16/bf16 rows are widened to f32 in blocks,
// computed, and narrowed back. Transcendental unary ops in f32 (and f16/bf16) run on Eigen's packet
// math (AVX-512 exp, log, tanh): std::exp and friends do not vectorize, and were up to
// 30x slower; f64 keeps the C library's functions (the gradient checks' reference precision).
// The exact GELU does not use 1 + erf(x / sqrt 2), which cancels for negative x, but
// erfc(|x| / sqrt 2) from a Chebyshev fit with relative error < 1.2e-7 everywhere (Numerical
// Recipes' erfcc): x * erfc(-x / sqrt 2) / 2 on both sides, vectorized (f64: the C library's erfc). The Eigen expressions run on
// aligned, padded blocks (array_blocks.h): every value takes the packet path wherever the tensor lies.
#include <Eigen/Core>
#include <cmath>
#include <limits>

#include "ops/cpu/array_blocks.h"
#include "ops/cpu/erfinv.h"
#include "ops/cpu/loops.h"
#include "ops/cpu/scalar.h"
#include "ops/kernels.h"

namespace minidl::kernels::cpu {

namespace {
constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;

// m values of a row whose elements are `stride` apart, as compute-type values (widened f16/bf16).
template <class T>
void gather_block(const T* p, int64_t stride, compute_t<T>* dst, int64_t m) {
  if (stride == 1) load_block(p, dst, m);
  else for (int64_t i = 0; i < m; ++i) dst[i] = static_cast<compute_t<T>>(p[i * stride]);
}

// The temporaries of an array function (fixed capacity: one block, array_blocks.h).
using BlockArray = Eigen::Array<float, Eigen::Dynamic, 1, Eigen::ColMajor, kArrayBlock, 1>;

// erfc(z) for z >= 0 (NaN stays NaN), relative error < 1.2e-7 before f32 rounding (after it,
// about ulp(z^2) relative: z^2 is rounded in exp's argument; 4e-6 at z = 8.5, where erfc ~ 1e-33):
// t exp(-z^2 + P(t)), t = 1 / (1 + z / 2), P a degree-9 Chebyshev-derived polynomial.
template <class A>
BlockArray erfc_nonnegative(const A& z) {
  const BlockArray t = 1.0f / (1.0f + 0.5f * z);
  BlockArray p = BlockArray::Constant(t.size(), 0.17087277f);
  for (float c : {-0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f, -0.18628806f, 0.09678418f, 0.37409196f, 1.00002368f,
                  -1.26551223f})
    p = c + t * p;
  return t * (p - z.square()).exp();
}

// y[i] = redo(v[i]) wherever rare(v[i]): the inputs a packet function does not cover.
template <class In, class Out, class Rare, class Redo>
void fix_where(const In& v, Out& y, Rare rare, Redo redo) {
  for (Eigen::Index i = 0; i < v.size(); ++i)
    if (rare(v[i])) y[i] = redo(v[i]);
}

// f(a, b, out) over blocks of at most kArrayBlock compute-type values of two operands (gathered
// into aligned, padded blocks; f16/bf16 widened), as Eigen array maps: for the fused activation
// gradients whose transcendental parts vectorize only through Eigen's packet math.
template <class T, class F>
void binary_array_rows(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  using C = compute_t<T>;
  T* o = static_cast<T*>(out.raw_data());
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  auto loop = make_loop<3>(out.shape(), {&out, &a, &b});
  for_each_row(loop, [&](const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& st) {
    ArrayBlock<C> xa, xb, z;
    for (int64_t s = 0; s < n; s += kArrayBlock) {
      const int64_t m = std::min(kArrayBlock, n - s);
      gather_block(pa + off[1] + s * st[1], st[1], xa.v, m);
      gather_block(pb + off[2] + s * st[2], st[2], xb.v, m);
      const int64_t p = pad_block(xa.v, m);
      pad_block(xb.v, m);
      f(ConstAlignedArray<C>(xa.v, p), ConstAlignedArray<C>(xb.v, p), AlignedArray<C>(z.v, p));
      store_block(z.v, o + off[0] + s, m);
    }
  });
}

// Applies f(x, y) -> z over rows; out is contiguous so its inner stride is 1.
template <class T, class Out, class F>
void binary_rows(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  using C = compute_t<T>;
  Out* o = static_cast<Out*>(out.raw_data());
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  auto loop = make_loop<3>(out.shape(), {&out, &a, &b});
  for_each_row(loop, [&](const std::array<int64_t, 3>& off, int64_t n, const std::array<int64_t, 3>& st) {
    Out* op = o + off[0];
    const T* ap = pa + off[1];
    const T* bp = pb + off[2];
    const int64_t sa = st[1], sb = st[2];
    if constexpr (is_low_precision_v<T>) {
      C xa[kBlock], xb[kBlock], z[kBlock];
      for (int64_t s = 0; s < n; s += kBlock) {
        const int64_t m = std::min(kBlock, n - s);
        gather_block(ap + s * sa, sa, xa, m);
        gather_block(bp + s * sb, sb, xb, m);
        if constexpr (std::is_same_v<Out, T>) {
          for (int64_t i = 0; i < m; ++i) z[i] = f(xa[i], xb[i]);
          store_block(z, op + s, m);
        } else {
          for (int64_t i = 0; i < m; ++i) op[s + i] = f(xa[i], xb[i]);
        }
      }
    } else if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < n; ++i) op[i] = f(ap[i], bp[i]);
    } else if (sa == 1 && sb == 0) {
      const C y = bp[0];
      for (int64_t i = 0; i < n; ++i) op[i] = f(ap[i], y);
    } else if (sa == 0 && sb == 1) {
      const C x = ap[0];
      for (int64_t i = 0; i < n; ++i) op[i] = f(x, bp[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) op[i] = f(ap[i * sa], bp[i * sb]);
    }
  });
}

// The f32 forms of the activation gradients with transcendental parts; false for other ops.
template <class T>
bool binary_vectorized(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, float al, float sc) {
  auto run = [&](auto f) {
    binary_array_rows<T>(out, a, b, f);
    return true;
  };
  switch (op) {
    case BinaryOp::GeluBackward:  // g * (Phi(x) + x phi(x)), Phi through erfc (no cancellation)
      return run([](auto g, auto x, auto y) {
        const auto e = erfc_nonnegative((x * float(kSqrt1_2)).abs());
        const BlockArray cdf = 0.5f * (x >= 0.0f).select(2.0f - e, e);
        y = g * (cdf + x * float(kInvSqrt2Pi) * (-0.5f * x.square()).exp());
      });
    case BinaryOp::GeluTanhBackward:  // s = 0.5 (1 + tanh z) as a sigmoid (no cancellation), 1 - tanh^2 z = 4 s (1 - s)
      return run([](auto g, auto x, auto y) {
        const BlockArray s = 1.0f / (1.0f + (-2.0f * float(kSqrt2OverPi) * (x + 0.044715f * x.cube())).exp());
        const BlockArray dz = float(kSqrt2OverPi) * (1.0f + float(3 * 0.044715) * x.square());
        y = g * (s + 2.0f * x * s * (1.0f - s) * dz);
      });
    case BinaryOp::SoftplusBackward:
      return run([al, sc](auto g, auto x, auto y) {
        y = g / (1.0f + (-al * x).exp());
        if (!((al * x).maxCoeff() <= sc))
          for (Eigen::Index i = 0; i < x.size(); ++i)
            if (al * x[i] > sc) y[i] = g[i];
      });
    default: return false;
  }
}

template <class T>
void binary_typed(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b_in, double scalar, double alpha) {
  using C = compute_t<T>;
  // A scalar operand becomes a 0-dim tensor in the compute type's storage (exact for f32/f64).
  Tensor b = b_in;
  if (!b.defined()) {
    b = empty({}, TensorOptions(a.dtype()));
    *static_cast<T*>(b.raw_data()) = cast_scalar<T>(scalar);
  }
  const C al = cast_scalar<C>(alpha);  // wraps into a narrow integer type instead of undefined behaviour
  const C sc = cast_scalar<C>(scalar);
  // For f16/bf16 the 0-dim b above holds the scalar rounded to T; arithmetic uses it at compute
  // precision instead (PyTorch's opmath), so mul(x, 0.1) is round(x * 0.1f), not x * round(0.1).
  const bool scalar_operand = !b_in.defined();
  auto run = [&](auto f) {
    if constexpr (is_low_precision_v<T>)
      if (scalar_operand) return binary_rows<T, T>(out, a, b, [f, sc](C x, C) -> C { return f(x, sc); });
    binary_rows<T, T>(out, a, b, f);
  };
  if constexpr (std::is_same_v<C, float>) {
    if (!scalar_operand && binary_vectorized<T>(op, out, a, b, al, sc)) return;
  }
  auto cmp = [&](auto f) { binary_rows<T, bool>(out, a, b, f); };
  if (op >= BinaryOp::Eq && op <= BinaryOp::Ge) {
    switch (op) {
      case BinaryOp::Eq: return cmp([](C x, C y) { return x == y; });
      case BinaryOp::Ne: return cmp([](C x, C y) { return x != y; });
      case BinaryOp::Lt: return cmp([](C x, C y) { return x < y; });
      case BinaryOp::Le: return cmp([](C x, C y) { return x <= y; });
      case BinaryOp::Gt: return cmp([](C x, C y) { return x > y; });
      case BinaryOp::Ge: return cmp([](C x, C y) { return x >= y; });
      default: break;
    }
  }
  if constexpr (std::is_same_v<T, bool>) {
    switch (op) {
      case BinaryOp::Add:
      case BinaryOp::Max: return binary_rows<T, T>(out, a, b, [](C x, C y) -> C { return x || y; });
      case BinaryOp::Mul:
      case BinaryOp::Min: return binary_rows<T, T>(out, a, b, [](C x, C y) -> C { return x && y; });
      default: MINIDL_FAIL("binary", "arithmetic on bool tensors is not supported");
    }
  } else {
    if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
      // Signed overflow wraps, as in PyTorch: computed in the unsigned type (C++ would call a
      // signed overflow undefined; the conversion back is modular since C++20).
      using U = std::make_unsigned_t<C>;
      switch (op) {
        case BinaryOp::Add: return run([al](C x, C y) -> C { return static_cast<C>(U(x) + U(al) * U(y)); });
        case BinaryOp::Sub: return run([al](C x, C y) -> C { return static_cast<C>(U(x) - U(al) * U(y)); });
        case BinaryOp::Mul: return run([](C x, C y) -> C { return static_cast<C>(U(x) * U(y)); });
        default: break;
      }
    }
    switch (op) {
      case BinaryOp::Add:
        if (alpha == 1.0) return run([](C x, C y) -> C { return x + y; });
        return run([al](C x, C y) -> C { return x + al * y; });
      case BinaryOp::Sub:
        if (alpha == 1.0) return run([](C x, C y) -> C { return x - y; });
        return run([al](C x, C y) -> C { return x - al * y; });
      case BinaryOp::Mul: return run([](C x, C y) -> C { return x * y; });
      case BinaryOp::Div: return run([](C x, C y) -> C { return x / y; });
      case BinaryOp::Max: return run([](C x, C y) -> C { return (x != x || x > y) ? x : y; });
      case BinaryOp::Min: return run([](C x, C y) -> C { return (x != x || x < y) ? x : y; });
      default: break;
    }
    if constexpr (std::is_floating_point_v<C>) {
      switch (op) {
        case BinaryOp::Pow: return run([](C x, C y) -> C { return std::pow(x, y); });
        // As threshold_backward: the gradient passes where the output is NaN.
        case BinaryOp::ReluBackward: return run([](C g, C y) -> C { return y <= C(0) ? C(0) : g; });
        case BinaryOp::LeakyReluBackward: return run([al](C g, C x) -> C { return x > C(0) ? g : g * al; });
        case BinaryOp::SigmoidBackward: return run([](C g, C y) -> C { return g * y * (C(1) - y); });
        case BinaryOp::TanhBackward: return run([](C g, C y) -> C { return g * (C(1) - y * y); });
        case BinaryOp::GeluBackward:
          return run([](C g, C x) -> C {
            const C cdf = C(0.5) * std::erfc(-x * C(kSqrt1_2));  // no cancellation for negative x
            C pdf = C(kInvSqrt2Pi) * std::exp(C(-0.5) * x * x);
            return g * (cdf + x * pdf);
          });
        case BinaryOp::GeluTanhBackward:
          return run([](C g, C x) -> C {
            const C x2 = x * x;
            const C s = C(1) / (C(1) + std::exp(C(-2) * C(kSqrt2OverPi) * (x + C(0.044715) * x2 * x)));
            const C dz = C(kSqrt2OverPi) * (C(1) + C(3 * 0.044715) * x2);
            return g * (s + C(2) * x * s * (C(1) - s) * dz);
          });
        case BinaryOp::SoftplusBackward:
          return run([al, sc](C g, C x) -> C {
            C z = al * x;
            return z > sc ? g : g / (C(1) + std::exp(-z));
          });
        case BinaryOp::Remainder: return run([](C x, C y) -> C { return floating_remainder(x, y); });
        case BinaryOp::Fmod: return run([](C x, C y) -> C { return std::fmod(x, y); });
        case BinaryOp::DivFloor: return run([](C x, C y) -> C { return floating_floor_divide(x, y); });
        case BinaryOp::DivTrunc: return run([](C x, C y) -> C { return std::trunc(x / y); });
        case BinaryOp::Atan2: return run([](C x, C y) -> C { return std::atan2(x, y); });
        default: break;
      }
    } else {
      switch (op) {
        case BinaryOp::Pow: return run([](C x, C y) -> C { return integer_pow(x, y); });
        case BinaryOp::Remainder: return run([](C x, C y) -> C { return integer_remainder(x, y); });
        case BinaryOp::Fmod: return run([](C x, C y) -> C { return integer_fmod(x, y); });
        case BinaryOp::DivFloor: return run([](C x, C y) -> C { return integer_floor_divide(x, y); });
        case BinaryOp::DivTrunc: return run([](C x, C y) -> C { return integer_trunc_divide(x, y); });
        default: break;
      }
    }
    MINIDL_FAIL("binary", "op ", static_cast<int>(op), " is not supported for ", dtype_name(a.dtype()));
  }
}

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, double scalar, double alpha) {
  visit_dtype(a.dtype(), "binary", [&]<class T>() { binary_typed<T>(op, out, a, b, scalar, alpha); });
}

// f(out_row, x_row, n, x_stride) for every row of a unary op; out rows are contiguous.
template <class T, class F>
void for_each_unary_row(const Tensor& out, const Tensor& x, F f) {
  T* o = static_cast<T*>(out.raw_data());
  const T* px = static_cast<const T*>(x.raw_data());
  auto loop = make_loop<2>(out.shape(), {&out, &x});
  for_each_row(loop, [&](const std::array<int64_t, 2>& off, int64_t n, const std::array<int64_t, 2>& st) {
    f(o + off[0], px + off[1], n, st[1]);
  });
}

template <class T, class F>
void unary_rows(const Tensor& out, const Tensor& x, F f) {
  using C = compute_t<T>;
  for_each_unary_row<T>(out, x, [&](T* op, const T* xp, int64_t n, int64_t sx) {
    if constexpr (is_low_precision_v<T>) {
      C xa[kBlock], z[kBlock];
      for (int64_t s = 0; s < n; s += kBlock) {
        const int64_t m = std::min(kBlock, n - s);
        gather_block(xp + s * sx, sx, xa, m);
        for (int64_t i = 0; i < m; ++i) z[i] = f(xa[i]);
        store_block(z, op + s, m);
      }
    } else if (sx == 1) {
      for (int64_t i = 0; i < n; ++i) op[i] = f(xp[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) op[i] = f(xp[i * sx]);
    }
  });
}

// Applies f(in, out) to blocks of at most kArrayBlock compute-type values, gathered (and widened)
// into aligned, padded blocks, as Eigen array maps.
template <class T, class F>
void unary_array_rows(const Tensor& out, const Tensor& x, F f) {
  using C = compute_t<T>;
  for_each_unary_row<T>(out, x, [&](T* op, const T* xp, int64_t n, int64_t sx) {
    ArrayBlock<C> xa, z;
    for (int64_t s = 0; s < n; s += kArrayBlock) {
      const int64_t m = std::min(kArrayBlock, n - s);
      gather_block(xp + s * sx, sx, xa.v, m);
      const int64_t p = pad_block(xa.v, m);
      f(ConstAlignedArray<C>(xa.v, p), AlignedArray<C>(z.v, p));
      store_block(z.v, op + s, m);
    }
  });
}

// The f32 forms of the transcendental unary ops; false when op has none (it runs scalar).
template <class T>
bool unary_vectorized(UnaryOp op, const Tensor& out, const Tensor& x, float a, float b) {
  auto run = [&](auto f) {
    unary_array_rows<T>(out, x, f);
    return true;
  };
  switch (op) {
    // Eigen's select() evaluates coefficient by coefficient (no packets), so the rare inputs a
    // packet function gets wrong are redone by a scalar pass instead of selected.
    case UnaryOp::Exp:
      // Eigen's exp overflows from 88.38 (f32 reaches 88.72) and flushes results below 2^-126 to 0.
      return run([](auto v, auto y) {
        y = v.exp();
        if (!(v.minCoeff() > -87.0f && v.maxCoeff() < 87.0f))  // vectorized check first: rare inputs
          fix_where(v, y, [](float x) { return !(std::abs(x) < 87.0f); }, [](float x) { return std::exp(x); });
      });
    case UnaryOp::Log:
      // Eigen's log clamps subnormal inputs to the smallest normal.
      return run([](auto v, auto y) {
        y = v.log();
        if (!(v.minCoeff() >= std::numeric_limits<float>::min()))
          fix_where(v, y, [](float x) { return x > 0.0f && x < std::numeric_limits<float>::min(); },
                  [](float x) { return std::log(x); });
      });
    case UnaryOp::Tanh: return run([](auto v, auto y) { y = v.tanh(); });
    // Not Eigen's logistic(): its 0.5 + p/q cancels for negative inputs (1e-4 relative error).
    case UnaryOp::Sigmoid: return run([](auto v, auto y) { y = 1.0f / (1.0f + (-v).exp()); });
    case UnaryOp::Gelu:
      return run([](auto v, auto y) {
        const auto e = erfc_nonnegative((v * float(kSqrt1_2)).abs());
        y = 0.5f * v * (v >= 0.0f).select(2.0f - e, e);
      });
    // 0.5 v (1 + tanh z) written as v * sigmoid(2z): 1 + tanh z cancels for negative z (about 1e-3
    // relative error in f32 at v = -4, and two tanh implementations differ there by as much).
    case UnaryOp::GeluTanh:
      return run([](auto v, auto y) { y = v / (1.0f + (-2.0f * float(kSqrt2OverPi) * (v + 0.044715f * v.cube())).exp()); });
    case UnaryOp::Softplus:
      return run([a, b](auto v, auto y) {
        y = (a * v).exp().log1p() / a;
        if (!((a * v).maxCoeff() <= b)) fix_where(v, y, [a, b](float x) { return a * x > b; }, [](float x) { return x; });
      });
    default: return false;
  }
}

// Integer negation and abs wrap at the most negative value, as PyTorch's (two's complement): done
// in unsigned arithmetic, where the signed overflow would be undefined behaviour.
template <class C>
C wrapping_neg(C v) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) return static_cast<C>(-static_cast<std::make_unsigned_t<C>>(v));
  else return -v;
}
template <class C>
C wrapping_abs(C v) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) return v < C(0) ? wrapping_neg(v) : v;
  else return std::abs(v);
}

template <class T>
void unary_typed(UnaryOp op, const Tensor& out, const Tensor& x, double p0, double p1) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<C, float>) {
    if (unary_vectorized<T>(op, out, x, static_cast<float>(p0), static_cast<float>(p1))) return;
  }
  auto run = [&](auto f) { unary_rows<T>(out, x, f); };
  const C a = static_cast<C>(p0), b = static_cast<C>(p1);
  switch (op) {
    case UnaryOp::Neg: return run([](C v) -> C { return wrapping_neg(v); });
    case UnaryOp::Exp: return run([](C v) -> C { return std::exp(v); });
    case UnaryOp::Log: return run([](C v) -> C { return std::log(v); });
    case UnaryOp::Sqrt: return run([](C v) -> C { return std::sqrt(v); });
    case UnaryOp::Rsqrt: return run([](C v) -> C { return C(1) / std::sqrt(v); });
    case UnaryOp::Abs: return run([](C v) -> C { return wrapping_abs(v); });
    case UnaryOp::Sign: return run([](C v) -> C { return static_cast<C>((v > C(0)) - (v < C(0))); });
    case UnaryOp::Tanh: return run([](C v) -> C { return std::tanh(v); });
    case UnaryOp::Sigmoid: return run([](C v) -> C { return C(1) / (C(1) + std::exp(-v)); });
    case UnaryOp::Relu: return run([](C v) -> C { return v <= C(0) ? C(0) : v; });  // NaN propagates
    case UnaryOp::LeakyRelu: return run([a](C v) -> C { return v > C(0) ? v : v * a; });
    case UnaryOp::Gelu: return run([](C v) -> C { return C(0.5) * v * std::erfc(-v * C(kSqrt1_2)); });  // as the f32 form
    case UnaryOp::GeluTanh:  // v * sigmoid(2z), as the f32 form above
      return run([](C v) -> C { return v / (C(1) + std::exp(C(-2) * C(kSqrt2OverPi) * (v + C(0.044715) * v * v * v))); });
    case UnaryOp::Softplus:
      return run([a, b](C v) -> C { return a * v > b ? v : std::log1p(std::exp(a * v)) / a; });
    case UnaryOp::Square: return run([](C v) -> C { return v * v; });
    case UnaryOp::Reciprocal: return run([](C v) -> C { return C(1) / v; });
    case UnaryOp::Clamp:
      // NaN propagates, as in PyTorch.
      return run([a, b](C v) -> C { return v != v ? v : (v < a ? a : (v > b ? b : v)); });
    case UnaryOp::Sin: return run([](C v) -> C { return std::sin(v); });
    case UnaryOp::Cos: return run([](C v) -> C { return std::cos(v); });
    case UnaryOp::Tan: return run([](C v) -> C { return std::tan(v); });
    case UnaryOp::Asin: return run([](C v) -> C { return std::asin(v); });
    case UnaryOp::Acos: return run([](C v) -> C { return std::acos(v); });
    case UnaryOp::Atan: return run([](C v) -> C { return std::atan(v); });
    case UnaryOp::Sinh: return run([](C v) -> C { return std::sinh(v); });
    case UnaryOp::Cosh: return run([](C v) -> C { return std::cosh(v); });
    case UnaryOp::Asinh: return run([](C v) -> C { return std::asinh(v); });
    case UnaryOp::Acosh: return run([](C v) -> C { return std::acosh(v); });
    case UnaryOp::Atanh: return run([](C v) -> C { return std::atanh(v); });
    case UnaryOp::Log1p: return run([](C v) -> C { return std::log1p(v); });
    case UnaryOp::Expm1: return run([](C v) -> C { return std::expm1(v); });
    case UnaryOp::Log2: return run([](C v) -> C { return std::log2(v); });
    case UnaryOp::Log10: return run([](C v) -> C { return std::log10(v); });
    case UnaryOp::Exp2: return run([](C v) -> C { return std::exp2(v); });
    case UnaryOp::Erf: return run([](C v) -> C { return std::erf(v); });
    case UnaryOp::Erfc: return run([](C v) -> C { return std::erfc(v); });
    case UnaryOp::Erfinv: return run([](C v) -> C { return static_cast<C>(erfinv(static_cast<double>(v))); });
    case UnaryOp::Floor: return run([](C v) -> C { return std::floor(v); });
    case UnaryOp::Ceil: return run([](C v) -> C { return std::ceil(v); });
    case UnaryOp::Round: return run([](C v) -> C { return std::nearbyint(v); });  // half to even
    case UnaryOp::Trunc: return run([](C v) -> C { return std::trunc(v); });
    // relu6(v + 3) with NaN propagating, as PyTorch's kernels (their min/max keep a NaN).
    case UnaryOp::Hardswish: return run([](C v) -> C { return v != v ? v : v * std::min(std::max(v + C(3), C(0)), C(6)) / C(6); });
    case UnaryOp::Hardsigmoid: return run([](C v) -> C { return v != v ? v : std::min(std::max(v + C(3), C(0)), C(6)) / C(6); });
    case UnaryOp::Mish: return run([](C v) -> C { return v * std::tanh(std::log1p(std::exp(v))); });
    case UnaryOp::LogSigmoid: return run([](C v) -> C { return std::min(v, C(0)) - std::log1p(std::exp(-std::abs(v))); });
  }
}

void unary(UnaryOp op, const Tensor& out, const Tensor& x, double p0, double p1) {
  visit_floating(x.dtype(), "unary", [&]<class T>() { unary_typed<T>(op, out, x, p0, p1); });
}

void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  visit_dtype(out.dtype(), "where", [&]<class T>() {
    T* o = static_cast<T*>(out.raw_data());
    const bool* pc = static_cast<const bool*>(cond.raw_data());
    const T* pa = static_cast<const T*>(a.raw_data());
    const T* pb = static_cast<const T*>(b.raw_data());
    auto loop = make_loop<4>(out.shape(), {&out, &cond, &a, &b});
    for_each_row(loop, [&](const std::array<int64_t, 4>& off, int64_t n, const std::array<int64_t, 4>& st) {
      for (int64_t i = 0; i < n; ++i)
        o[off[0] + i] = pc[off[1] + i * st[1]] ? pa[off[2] + i * st[2]] : pb[off[3] + i * st[3]];
    });
  });
}
}  // namespace

void register_elementwise(Registry& r) {
  r.binary.set_all(DeviceType::CPU, binary);
  r.where.set_all(DeviceType::CPU, where);
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) r.unary.set(DeviceType::CPU, t, unary);
}

}  // namespace minidl::kernels::cpu
