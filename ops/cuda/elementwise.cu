// CUDA element-wise kernels: binary (broadcasting, comparisons, modulo, fused activation backward), unary
// math and where. Arithmetic runs in the compute type (f32 for f16/bf16), as on the CPU; a scalar
// operand is used at compute precision (PyTorch's opmath). The op is a kernel argument switched on
// inside the kernel (uniform across the grid, so it costs a branch, not divergence), which keeps
// one instantiation per dtype and layout instead of one per op.
//
// Layouts: when every operand is contiguous with out's shape (or b is a scalar), a flat kernel with
// kVec coalesced loads in flight per thread; otherwise a strided kernel over coalesced dims.
#include <cmath>

#include "ops/cuda/common.cuh"

namespace minidl::kernels::cuda {

namespace {
constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kSqrt2OverPi = 0.79788456080286535588;

// Operand kinds of the flat path.
enum : int { kDense = 0, kScalar = 1 };

struct BinaryArgs {
  BinaryOp op;
  double alpha;
  double scalar;
};

// Phi(x), the normal CDF, as the CPU kernels compute it: through erfc, so no cancellation for
// negative x (1 + erf(x/sqrt2) rounds to 0 in f32 below x ~ -5.4 and loses most digits before:
// gelu(-4) is off by ~3e-4 relative, gelu(-6) is 0 instead of -5.9e-9; f64 likewise further out).
template <class C>
__device__ __forceinline__ C gelu_cdf(C x) {
  return C(0.5) * erfc(-x * C(kSqrt1_2));
}

// Float-only parts of binary ops (C is float or double).
template <class C>
__device__ __forceinline__ C binary_float(BinaryOp op, C x, C y, C al, C sc) {
  switch (op) {
    case BinaryOp::Pow: return pow(x, y);
    case BinaryOp::ReluBackward: return y <= C(0) ? C(0) : x;  // passes at NaN, as threshold_backward
    case BinaryOp::LeakyReluBackward: return y > C(0) ? x : x * al;
    case BinaryOp::SigmoidBackward: return x * y * (C(1) - y);
    case BinaryOp::TanhBackward: return x * (C(1) - y * y);
    case BinaryOp::GeluBackward: {
      const C cdf = gelu_cdf(y);
      const C pdf = C(kInvSqrt2Pi) * exp(C(-0.5) * y * y);
      return x * (cdf + y * pdf);
    }
    case BinaryOp::GeluTanhBackward: {  // as the CPU kernel: 0.5 (1 + tanh z) as a sigmoid, no cancellation
      const C y2 = y * y;
      const C s = C(1) / (C(1) + exp(C(-2) * C(kSqrt2OverPi) * (y + C(0.044715) * y2 * y)));
      const C dz = C(kSqrt2OverPi) * (C(1) + C(3 * 0.044715) * y2);
      return x * (s + C(2) * y * s * (C(1) - s) * dz);
    }
    case BinaryOp::SoftplusBackward: {
      const C z = al * y;
      return z > sc ? x : x / (C(1) + exp(-z));
    }
    case BinaryOp::Remainder: return floating_remainder(x, y);
    case BinaryOp::Fmod: return std::fmod(x, y);
    case BinaryOp::DivFloor: return floating_floor_divide(x, y);
    case BinaryOp::DivTrunc: return std::trunc(x / y);
    case BinaryOp::Atan2: return atan2(x, y);
    default: return C(0);
  }
}

// a op b in compute type C (arithmetic ops; comparisons are handled by compare()).
template <class C>
__device__ __forceinline__ C binary_apply(BinaryOp op, C x, C y, C al, C sc) {
  switch (op) {
    case BinaryOp::Add: return x + al * y;
    case BinaryOp::Sub: return x - al * y;
    case BinaryOp::Mul: return x * y;
    case BinaryOp::Div: return x / y;
    case BinaryOp::Max: return (x != x || x > y) ? x : y;
    case BinaryOp::Min: return (x != x || x < y) ? x : y;
    default: break;
  }
  if constexpr (std::is_floating_point_v<C>) {
    return binary_float<C>(op, x, y, al, sc);
  } else {
    switch (op) {
      case BinaryOp::Pow: return integer_pow(x, y);
      case BinaryOp::Remainder: return integer_remainder(x, y);
      case BinaryOp::Fmod: return integer_fmod(x, y);
      case BinaryOp::DivFloor: return integer_floor_divide(x, y);
      case BinaryOp::DivTrunc: return integer_trunc_divide(x, y);
      default: return C(0);
    }
  }
}

template <class C>
__device__ __forceinline__ bool compare(BinaryOp op, C x, C y) {
  switch (op) {
    case BinaryOp::Eq: return x == y;
    case BinaryOp::Ne: return x != y;
    case BinaryOp::Lt: return x < y;
    case BinaryOp::Le: return x <= y;
    case BinaryOp::Gt: return x > y;
    default: return x >= y;  // Ge
  }
}

template <class T, class Out>
__device__ __forceinline__ Out binary_one(BinaryOp op, compute_t<T> x, compute_t<T> y, compute_t<T> al, compute_t<T> sc) {
  if constexpr (std::is_same_v<T, bool>) {
    // Two bools: binary() passes Add/Max as Max (logical or), Mul/Min as Min (logical and).
    if (op == BinaryOp::Max) return x || y;
    if (op == BinaryOp::Min) return x && y;
    return compare(op, x, y);
  } else if constexpr (std::is_same_v<Out, bool>) {
    return compare(op, x, y);
  } else {
    return convert<T>(binary_apply(op, x, y, al, sc));
  }
}

// Flat path: out, a dense; b dense or a scalar (b_scalar: read nothing, use sc). A block takes
// tiles of kThreads * kVec elements; thread t handles t, t + kThreads, ... of its tile, so every
// load instruction of a warp reads one contiguous run, and kVec independent loads are in flight.
constexpr int kVec = 4;

template <class T, class Out>
__global__ void binary_flat_kernel(Out* out, const T* a, const T* b, bool b_scalar, int64_t n, BinaryOp op,
                                   compute_t<T> al, compute_t<T> sc) {
  using C = compute_t<T>;
  constexpr int64_t kTile = int64_t{kThreads} * kVec;
  for (int64_t start = blockIdx.x * kTile; start < n; start += int64_t{gridDim.x} * kTile) {
    C xa[kVec], xb[kVec];
#pragma unroll
    for (int v = 0; v < kVec; ++v) {
      const int64_t i = start + threadIdx.x + v * kThreads;
      xa[v] = i < n ? load(a[i]) : C(0);
      xb[v] = b_scalar ? sc : (i < n ? load(b[i]) : C(0));
    }
#pragma unroll
    for (int v = 0; v < kVec; ++v) {
      const int64_t i = start + threadIdx.x + v * kThreads;
      if (i < n) out[i] = binary_one<T, Out>(op, xa[v], xb[v], al, sc);
    }
  }
}

// N = 3 operands (out, a, b), or N = 2 (out, a) when b is the scalar sc.
template <class T, class Out, int N>
__global__ void binary_strided_kernel(Out* out, const T* a, const T* b, int64_t n, OffsetCalc<N> oc, BinaryOp op,
                                      compute_t<T> al, compute_t<T> sc) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[N];
    oc.get(i, off);
    compute_t<T> y = sc;
    if constexpr (N == 3) y = load(b[off[2]]);
    out[off[0]] = binary_one<T, Out>(op, load(a[off[1]]), y, al, sc);
  }
}

template <class T, class Out>
void binary_launch(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, double scalar, double alpha) {
  using C = compute_t<T>;
  const int64_t n = out.numel();
  if (n == 0) return;
  const int dev = out.device().index;
  cudaStream_t s = stream_of(out);
  // A scalar operand: the compute-type value; for f16/bf16 arithmetic kept at f32 (opmath), for
  // integer types truncated as the CPU's cast_scalar does. A defined 0-dim b that broadcasts
  // everywhere is read from memory by the strided path.
  const bool b_scalar = !b.defined();
  // Comparisons see the scalar rounded to T first, as the CPU kernels do (they compare against a
  // 0-dim T tensor): eq(half_tensor, 0.1) is true where the tensor holds 0.1's f16 rounding.
  const C sc = std::is_same_v<Out, bool> ? load(convert<T>(scalar)) : convert<C>(scalar);
  const C al = convert<C>(alpha);  // x + 1 * y is exactly x + y in every type
  Out* po = static_cast<Out*>(out.raw_data());
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = b_scalar ? nullptr : static_cast<const T*>(b.raw_data());
  const bool flat = out.is_contiguous() && a.shape() == out.shape() && a.is_contiguous() &&
                    (b_scalar || (b.shape() == out.shape() && b.is_contiguous()));
  if (flat) {
    binary_flat_kernel<T, Out><<<grid_for(n, dev, kVec), kThreads, 0, s>>>(po, pa, pb, b_scalar, n, op, al, sc);
  } else if (b_scalar) {
    auto oc = make_offset_calc<2>(out.shape(), {&out, &a}, "binary");
    binary_strided_kernel<T, Out, 2><<<grid_for(n, dev), kThreads, 0, s>>>(po, pa, nullptr, n, oc, op, al, sc);
  } else {
    auto oc = make_offset_calc<3>(out.shape(), {&out, &a, &b}, "binary");
    binary_strided_kernel<T, Out, 3><<<grid_for(n, dev), kThreads, 0, s>>>(po, pa, pb, n, oc, op, al, sc);
  }
  MINIDL_CUDA_CHECK_LAUNCH("binary");
}

bool is_compare(BinaryOp op) { return op >= BinaryOp::Eq && op <= BinaryOp::Ge; }
// The ops with an integer form (the others are floating only).
bool has_integer_form(BinaryOp op) {
  return op <= BinaryOp::Min || op == BinaryOp::Remainder || op == BinaryOp::Fmod || op == BinaryOp::DivFloor ||
         op == BinaryOp::DivTrunc;
}

void binary(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, double scalar, double alpha) {
  minidl::cuda::DeviceGuard guard(out.device());
  visit(a.dtype(), "binary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (is_compare(op)) return binary_launch<T, bool>(op, out, a, b, scalar, alpha);
    if constexpr (std::is_same_v<T, bool>) {
      // As the CPU kernel: add and maximum are a logical or, mul and minimum a logical and.
      if (op == BinaryOp::Add || op == BinaryOp::Max) return binary_launch<T, T>(BinaryOp::Max, out, a, b, scalar, alpha);
      if (op == BinaryOp::Mul || op == BinaryOp::Min) return binary_launch<T, T>(BinaryOp::Min, out, a, b, scalar, alpha);
      MINIDL_FAIL("binary", "arithmetic on bool tensors is not supported");
    } else {
      MINIDL_CHECK(is_float_v<T> || has_integer_form(op), "binary", "op ", static_cast<int>(op),
                   " is not supported for ", dtype_name(a.dtype()));
      binary_launch<T, T>(op, out, a, b, scalar, alpha);
    }
  });
}

// ---- unary

template <class C>
__device__ __forceinline__ C unary_apply(UnaryOp op, C v, C p0, C p1) {
  switch (op) {
    case UnaryOp::Neg: return -v;
    case UnaryOp::Exp: return exp(v);
    case UnaryOp::Log: return log(v);
    case UnaryOp::Sqrt: return sqrt(v);
    case UnaryOp::Rsqrt: return C(1) / sqrt(v);
    case UnaryOp::Abs: return fabs(v);
    case UnaryOp::Sign: return static_cast<C>((v > C(0)) - (v < C(0)));
    case UnaryOp::Tanh: return tanh(v);
    case UnaryOp::Sigmoid: return C(1) / (C(1) + exp(-v));
    case UnaryOp::Relu: return v <= C(0) ? C(0) : v;  // NaN propagates
    case UnaryOp::LeakyRelu: return v > C(0) ? v : v * p0;
    case UnaryOp::Gelu: return v * gelu_cdf(v);
    case UnaryOp::GeluTanh: return v / (C(1) + exp(C(-2) * C(kSqrt2OverPi) * (v + C(0.044715) * v * v * v)));  // v sigmoid(2z), as the CPU
    case UnaryOp::Softplus: return p0 * v > p1 ? v : log1p(exp(p0 * v)) / p0;
    case UnaryOp::Square: return v * v;
    case UnaryOp::Reciprocal: return C(1) / v;
    case UnaryOp::Clamp: return v != v ? v : (v < p0 ? p0 : (v > p1 ? p1 : v));  // NaN propagates
    case UnaryOp::Sin: return sin(v);
    case UnaryOp::Cos: return cos(v);
    case UnaryOp::Tan: return tan(v);
    case UnaryOp::Asin: return asin(v);
    case UnaryOp::Acos: return acos(v);
    case UnaryOp::Atan: return atan(v);
    case UnaryOp::Sinh: return sinh(v);
    case UnaryOp::Cosh: return cosh(v);
    case UnaryOp::Asinh: return asinh(v);
    case UnaryOp::Acosh: return acosh(v);
    case UnaryOp::Atanh: return atanh(v);
    case UnaryOp::Log1p: return log1p(v);
    case UnaryOp::Expm1: return expm1(v);
    case UnaryOp::Log2: return log2(v);
    case UnaryOp::Log10: return log10(v);
    case UnaryOp::Exp2: return exp2(v);
    case UnaryOp::Erf: return erf(v);
    case UnaryOp::Erfc: return erfc(v);
    case UnaryOp::Erfinv:
      if constexpr (std::is_same_v<C, float>) return erfinvf(v);
      else return erfinv(v);
    case UnaryOp::Floor: return floor(v);
    case UnaryOp::Ceil: return ceil(v);
    case UnaryOp::Round: return rint(v);  // half to even, as the CPU's nearbyint
    case UnaryOp::Trunc: return trunc(v);
    // As the CPU kernel: relu6(v + 3), NaN propagating.
    case UnaryOp::Hardswish: return v != v ? v : v * fmin(fmax(v + C(3), C(0)), C(6)) / C(6);
    case UnaryOp::Hardsigmoid: return v != v ? v : fmin(fmax(v + C(3), C(0)), C(6)) / C(6);
    case UnaryOp::Mish: return v * tanh(log1p(exp(v)));
    case UnaryOp::LogSigmoid: return fmin(v, C(0)) - log1p(exp(-fabs(v)));
  }
  return v;
}

template <class T>
__global__ void unary_flat_kernel(T* out, const T* x, int64_t n, UnaryOp op, compute_t<T> p0, compute_t<T> p1) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{blockDim.x} * gridDim.x)
    out[i] = convert<T>(unary_apply(op, load(x[i]), p0, p1));
}

template <class T>
__global__ void unary_strided_kernel(T* out, const T* x, int64_t n, OffsetCalc<2> oc, UnaryOp op, compute_t<T> p0,
                                     compute_t<T> p1) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[2];
    oc.get(i, off);
    out[off[0]] = convert<T>(unary_apply(op, load(x[off[1]]), p0, p1));
  }
}

void unary(UnaryOp op, const Tensor& out, const Tensor& x, double p0, double p1) {
  const int64_t n = out.numel();
  if (n == 0) return;
  minidl::cuda::DeviceGuard guard(out.device());
  const int dev = out.device().index;
  cudaStream_t s = stream_of(out);
  visit_floating(x.dtype(), "unary", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const C a = static_cast<C>(p0), b = static_cast<C>(p1);
    T* po = static_cast<T*>(out.raw_data());
    const T* px = static_cast<const T*>(x.raw_data());
    if (out.is_contiguous() && x.is_contiguous()) {
      unary_flat_kernel<T><<<grid_for(n, dev), kThreads, 0, s>>>(po, px, n, op, a, b);
    } else {
      auto oc = make_offset_calc<2>(out.shape(), {&out, &x}, "unary");
      unary_strided_kernel<T><<<grid_for(n, dev), kThreads, 0, s>>>(po, px, n, oc, op, a, b);
    }
  });
  MINIDL_CUDA_CHECK_LAUNCH("unary");
}

// ---- where: moves bytes, so one instantiation per element size.

template <class U>
__global__ void where_kernel(U* out, const bool* cond, const U* a, const U* b, int64_t n, OffsetCalc<4> oc) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{blockDim.x} * gridDim.x) {
    int64_t off[4];
    oc.get(i, off);
    out[off[0]] = cond[off[1]] ? a[off[2]] : b[off[3]];
  }
}

void where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  const int64_t n = out.numel();
  if (n == 0) return;
  minidl::cuda::DeviceGuard guard(out.device());
  const int dev = out.device().index;
  auto oc = make_offset_calc<4>(out.shape(), {&out, &cond, &a, &b}, "where");
  auto run = [&](auto tag) {
    using U = typename decltype(tag)::type;
    where_kernel<U><<<grid_for(n, dev), kThreads, 0, stream_of(out)>>>(
        static_cast<U*>(out.raw_data()), static_cast<const bool*>(cond.raw_data()), static_cast<const U*>(a.raw_data()),
        static_cast<const U*>(b.raw_data()), n, oc);
  };
  switch (element_size(out.dtype())) {
    case 1: run(TypeTag<uint8_t>{}); break;
    case 2: run(TypeTag<uint16_t>{}); break;
    case 4: run(TypeTag<uint32_t>{}); break;
    case 8: run(TypeTag<uint64_t>{}); break;
    default: MINIDL_FAIL("where", "unsupported element size");
  }
  MINIDL_CUDA_CHECK_LAUNCH("where");
}
}  // namespace

void register_elementwise(Registry& r) {
  r.binary.set_all(DeviceType::CUDA, binary);
  r.where.set_all(DeviceType::CUDA, where);
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) r.unary.set(DeviceType::CUDA, t, unary);
}

}  // namespace minidl::kernels::cuda
