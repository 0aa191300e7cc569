// Element-wise arithmetic with broadcasting and type promotion: add, sub, mul, div (true, floor and
// trunc), pow, maximum, minimum, remainder, fmod, atan2 and their scalar forms. Autocast policy: None
// (runs in the promoted input dtype; pow is f32 on CUDA, atan2 promotes there). Backward formulas are written in these same ops, so they are
// differentiable again.
#include <cmath>

#include "framework/half.h"
#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;

// Autocast policies of this family (the policy table is built from these rows).
namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kPow{"pow", P::None, P::FP32};
// On none of PyTorch's autocast lists (torch 1.13 under autocast('cpu'): remainder and fmod of f32
// tensors give f32, of a bf16 and an f32 tensor f32, of a bf16 tensor and a scalar bf16; not in
// CUDA's autocast_mode.cpp): they run in the promoted input dtype. Rows so that they can be overridden.
const amp::OpPolicy kRemainder{"remainder", P::None, P::None};
const amp::OpPolicy kFmod{"fmod", P::None, P::None};
// atan2: on CUDA's promote list (the widest input dtype), on no CPU list.
const amp::OpPolicy kAtan2{"atan2", P::None, P::Promote};
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::binary_policies() { return {&kPow, &kRemainder, &kFmod, &kAtan2}; }

namespace {
using kernels::BinaryOp;

const char* op_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
    case BinaryOp::Pow: return "pow";
    case BinaryOp::Max: return "maximum";
    case BinaryOp::Min: return "minimum";
    case BinaryOp::Remainder: return "remainder";
    case BinaryOp::Fmod: return "fmod";
    case BinaryOp::DivFloor:
    case BinaryOp::DivTrunc: return "div";
    case BinaryOp::Atan2: return "atan2";
    default: return "binary";
  }
}

bool is_modulo(BinaryOp op) { return op == BinaryOp::Remainder || op == BinaryOp::Fmod; }
// The integer ops that refuse a zero divisor.
bool divides_integers(BinaryOp op) { return is_modulo(op) || op == BinaryOp::DivFloor || op == BinaryOp::DivTrunc; }

// An integer remainder, fmod or rounded division by zero is an error, as PyTorch's ZeroDivisionError (its CPU
// kernels check every element); one check of the (promoted) divisor, on any device, before the
// kernel runs. Only a non-empty result reads the divisor (every element of it, when broadcast).
void check_integer_divisor(const char* name, const Tensor& b, const Shape& out_shape) {
  if (numel_of(out_shape) == 0) return;
  NoGradGuard ng;
  const int64_t zeros_found = sum(eq(b, 0.0)).item_int();
  MINIDL_CHECK(zeros_found == 0, name, "ZeroDivisionError: integer division by zero (the divisor, ", b.meta_str(), ", has ",
               zeros_found, zeros_found == 1 ? " zero)" : " zeros)");
}

// The scalar divisor of remainder, fmod and rounded div as the kernel of dtype t uses it, checked as above: an integer
// one wraps to t (as the kernels convert it: u8 256 is 0), a floating one is rounded to t (PyTorch's
// kernels take an f16/bf16 divisor, unlike mul's f32 scalar: fmod(f16 5.5, 0.3) uses 0.30005).
double scalar_divisor(const char* name, DType t, double s) {
  if (!is_floating(t)) {
    const int64_t v = static_cast<int64_t>(s);  // result_type made t integral only for an integral s that fits
    const bool zero = t == DType::U8 ? static_cast<uint8_t>(v) == 0 : (t == DType::I32 ? static_cast<int32_t>(v) == 0 : v == 0);
    MINIDL_CHECK(!zero, name, "ZeroDivisionError: integer division by zero (the divisor ", s, " is 0 as ", dtype_name(t), ")");
    return s;
  }
  if (t == DType::F16) return static_cast<float>(half(static_cast<float>(s)));
  if (t == DType::BF16) return static_cast<float>(bfloat16(static_cast<float>(s)));
  return s;
}

// Promotes, broadcasts and runs the kernel; no autograd. Returns the output and the promoted inputs.
struct Prepared {
  Tensor a, b, out;
};
Prepared prepare(BinaryOp op, const Tensor& a_in, const Tensor& b_in, double alpha) {
  const char* name = op_name(op);
  check_defined(a_in, name, "self");
  check_defined(b_in, name, "other");
  check_same_device(name, a_in, b_in);
  DType t = result_type(a_in, b_in);
  // True division and atan2 give floats, as torch's; pow of integers stays integer, as torch.pow.
  if ((op == BinaryOp::Div || op == BinaryOp::Atan2) && !is_floating(t)) t = DType::F32;
  MINIDL_CHECK(!(op == BinaryOp::Sub && (a_in.dtype() == DType::Bool || b_in.dtype() == DType::Bool)), name,
               "subtraction with a bool tensor is not supported (got ", a_in.meta_str(), " and ", b_in.meta_str(),
               "); to invert a mask use eq(mask, 0)");
  // Two bools: add and maximum are a logical or, mul and minimum a logical and, as PyTorch.
  const bool logical = op == BinaryOp::Mul || op == BinaryOp::Max || op == BinaryOp::Min || (op == BinaryOp::Add && alpha == 1.0);
  MINIDL_CHECK(t != DType::Bool || logical, name, "arithmetic on two bool tensors is not supported (got ", a_in.meta_str(),
               " and ", b_in.meta_str(), "); cast one to an integer or floating dtype first");
  check_integer_alpha(name, t, alpha);
  const Shape shape = broadcast_shapes(a_in.shape(), b_in.shape(), name);
  auto kernel = K().binary.get(a_in.device(), t, name);
  Prepared p{cast(a_in, t), cast(b_in, t), Tensor()};
  if (divides_integers(op) && !is_floating(t)) check_integer_divisor(name, p.b, shape);
  p.out = new_empty_like(shape, t, p.a.device(), {&p.a, &p.b});
  kernel(op, p.out, p.a, p.b, 0.0, alpha);
  return p;
}

Tensor run_scalar(BinaryOp op, const Tensor& a_in, double s, double alpha = 1.0, const char* name = nullptr) {
  if (!name) name = op_name(op);
  check_defined(a_in, name, "self");
  DType t = result_type(a_in, s);
  if (op == BinaryOp::Div && !is_floating(t)) t = DType::F32;
  MINIDL_CHECK(!(op == BinaryOp::Pow && !is_floating(t) && s < 0), name,
               "integers to negative integer powers are not allowed (", a_in.meta_str(), " ** ", s, ")");
  if (divides_integers(op)) s = scalar_divisor(name, t, s);
  auto kernel = K().binary.get(a_in.device(), t, name);
  Tensor a = cast(a_in, t);
  Tensor out = new_empty_like(a.shape(), t, a.device(), {&a});
  kernel(op, out, a, Tensor(), s, alpha);
  return out;
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  Prepared p = prepare(BinaryOp::Add, a, b, alpha);
  autograd::record("AddBackward", {p.a, p.b}, {p.out}, {},
                   [sa = p.a.shape(), sb = p.b.shape(), alpha](const TensorList& g, const TensorList&) {
                     return TensorList{sum_to(g[0], sa), sum_to(alpha == 1.0 ? g[0] : mul(g[0], alpha), sb)};
                   });
  return p.out;
}

Tensor sub(const Tensor& a, const Tensor& b, double alpha) {
  Prepared p = prepare(BinaryOp::Sub, a, b, alpha);
  autograd::record("SubBackward", {p.a, p.b}, {p.out}, {},
                   [sa = p.a.shape(), sb = p.b.shape(), alpha](const TensorList& g, const TensorList&) {
                     return TensorList{sum_to(g[0], sa), sum_to(mul(g[0], -alpha), sb)};
                   });
  return p.out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Prepared p = prepare(BinaryOp::Mul, a, b, 1.0);
  const bool ga = p.a.requires_grad(), gb = p.b.requires_grad();
  // Save an operand only if the other's gradient needs it.
  autograd::record("MulBackward", {p.a, p.b}, {p.out}, {gb ? p.a : Tensor(), ga ? p.b : Tensor()},
                   [sa = p.a.shape(), sb = p.b.shape(), ga, gb](const TensorList& g, const TensorList& s) {
                     return TensorList{ga ? sum_to(mul(g[0], s[1]), sa) : Tensor(),
                                       gb ? sum_to(mul(g[0], s[0]), sb) : Tensor()};
                   });
  return p.out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  Prepared p = prepare(BinaryOp::Div, a, b, 1.0);
  const bool gb = p.b.requires_grad();
  autograd::record("DivBackward", {p.a, p.b}, {p.out}, {gb ? p.a : Tensor(), p.b},
                   [sa = p.a.shape(), sb = p.b.shape(), gb](const TensorList& g, const TensorList& s) {
                     Tensor ga = sum_to(div(g[0], s[1]), sa);
                     // -g (a / b) / b, as PyTorch's: b * b would overflow for |b| above the dtype's sqrt(max).
                     Tensor gbv = gb ? sum_to(neg(mul(g[0], div(div(s[0], s[1]), s[1]))), sb) : Tensor();
                     return TensorList{ga, gbv};
                   });
  return p.out;
}

Tensor pow(const Tensor& a_arg, const Tensor& b_arg) {
  amp::AutocastInputs in(kPow, {a_arg, b_arg});
  const Tensor &a = in[0], &b = in[1];
  Prepared p = prepare(BinaryOp::Pow, a, b, 1.0);
  autograd::record("PowBackward", {p.a, p.b}, {p.out}, {p.a, p.b, autograd::output(p.out)},
                   [sa = p.a.shape(), sb = p.b.shape()](const TensorList& g, const TensorList& s) {
                     const Tensor &x = s[0], &y = s[1], &out = s[2];
                     // As PyTorch's pow_backward_self and pow_backward_exponent: d/dx = y x^(y-1), taken
                     // as 0 where y == 0 (so 0^0 has gradient 0, not 0 * 0^-1 = NaN); d/dy = x^y log x,
                     // taken as 0 where x == 0 and y >= 0 (x == 0 with y < 0 gives inf * -inf = -inf).
                     const Tensor zero = zeros_like(g[0]);
                     Tensor ga = sum_to(where(eq(y, 0.0), zero, mul(g[0], mul(y, pow(x, sub(y, 1.0))))), sa);
                     Tensor at_zero = mul(eq(x, 0.0), ge(y, 0.0));  // logical and of two bool tensors
                     Tensor gb = sum_to(mul(g[0], where(at_zero, zero, mul(out, log(x)))), sb);
                     return TensorList{ga, gb};
                   });
  return p.out;
}

namespace {
// Gradients of maximum (is_max) or minimum, as PyTorch: each side receives g except where it
// strictly loses (0) or ties (g / 2), so both sides receive g where either is NaN.
TensorList extreme_pair_backward(bool is_max, const Tensor& g, const Tensor& a, const Tensor& b, const Shape& sa, const Shape& sb) {
  const Tensor half_tie = mul(cast(eq(a, b), g.dtype()), 0.5);
  auto share = [&](const Tensor& loses) { return mul(g, rsub(add(cast(loses, g.dtype()), half_tie), 1.0)); };
  return TensorList{sum_to(share(is_max ? lt(a, b) : gt(a, b)), sa), sum_to(share(is_max ? gt(a, b) : lt(a, b)), sb)};
}

Tensor extreme_pair(bool is_max, const Tensor& a, const Tensor& b) {
  Prepared p = prepare(is_max ? BinaryOp::Max : BinaryOp::Min, a, b, 1.0);
  autograd::record(is_max ? "MaximumBackward" : "MinimumBackward", {p.a, p.b}, {p.out}, {p.a, p.b},
                   [is_max, sa = p.a.shape(), sb = p.b.shape()](const TensorList& g, const TensorList& s) {
                     return extreme_pair_backward(is_max, g[0], s[0], s[1], sa, sb);
                   });
  return p.out;
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) { return extreme_pair(true, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return extreme_pair(false, a, b); }

namespace {
// PyTorch's div(a, b, rounding_mode='floor') (DivFloor) or 'trunc' (DivTrunc) of floating a and b of
// one dtype: the quotient in the gradient of remainder or fmod. Not differentiable (piecewise constant).
Tensor rounded_quotient(BinaryOp op, const Tensor& a, const Tensor& b) { return prepare(op, a.detach(), b.detach(), 1.0).out; }

// remainder (Remainder: a - b floor(a / b)) or fmod (Fmod: a - b trunc(a / b)), after autocast.
// Gradients as PyTorch's: 1 in a; -floor(a / b) or -trunc(a / b) in b (computed as its div with that
// rounding mode, so -inf or NaN times g where b is 0).
Tensor modulo(BinaryOp op, const Tensor& a, const Tensor& b) {
  const bool is_remainder = op == BinaryOp::Remainder;
  Prepared p = prepare(op, a, b, 1.0);
  const bool gb = p.b.requires_grad();
  autograd::record(is_remainder ? "RemainderBackward" : "FmodBackward", {p.a, p.b}, {p.out},
                   {gb ? p.a : Tensor(), gb ? p.b : Tensor()},
                   [is_remainder, sa = p.a.shape(), sb = p.b.shape(), gb](const TensorList& g, const TensorList& s) {
                     Tensor gbv;
                     if (gb) {
                       const Tensor q = rounded_quotient(is_remainder ? BinaryOp::DivFloor : BinaryOp::DivTrunc, s[0], s[1]);
                       gbv = sum_to(mul(neg(g[0]), q), sb);
                     }
                     return TensorList{sum_to(g[0], sa), gbv};
                   });
  return p.out;
}

Tensor modulo(BinaryOp op, const Tensor& a, double b) {
  Tensor out = run_scalar(op, a, b);
  autograd::record(op == BinaryOp::Remainder ? "RemainderBackward" : "FmodBackward", {a}, {out}, {},
                   [](const TensorList& g, const TensorList&) { return TensorList{g[0]}; });
  return out;
}
}  // namespace

Tensor remainder(const Tensor& a, const Tensor& b) {
  amp::AutocastInputs in(kRemainder, {a, b});
  return modulo(BinaryOp::Remainder, in[0], in[1]);
}
Tensor remainder(const Tensor& a, double b) {
  amp::AutocastInputs in(kRemainder, {a});
  return modulo(BinaryOp::Remainder, in[0], b);
}
Tensor fmod(const Tensor& a, const Tensor& b) {
  amp::AutocastInputs in(kFmod, {a, b});
  return modulo(BinaryOp::Fmod, in[0], in[1]);
}
Tensor fmod(const Tensor& a, double b) {
  amp::AutocastInputs in(kFmod, {a});
  return modulo(BinaryOp::Fmod, in[0], b);
}

// ---- scalar forms

Tensor add(const Tensor& a, double b) {
  Tensor out = run_scalar(BinaryOp::Add, a, b);
  autograd::record("AddBackward", {a}, {out}, {},
                   [](const TensorList& g, const TensorList&) { return TensorList{g[0]}; });
  return out;
}

namespace {
void check_not_bool(const char* op, const char* what, const Tensor& a) {
  MINIDL_CHECK(!a.defined() || a.dtype() != DType::Bool, op, what, " a bool tensor is not supported (got ", a.meta_str(),
               "); to invert a mask use eq(mask, 0)");
}
}  // namespace

Tensor sub(const Tensor& a, double b) {
  check_not_bool("sub", "subtraction with", a);
  return add(a, -b);
}

Tensor rsub(const Tensor& a, double b) {
  check_not_bool("rsub", "subtraction with", a);
  // (-a) + b, which IEEE rounds as b - a: +0 where a == b, as PyTorch (negating a - b gave -0, so
  // 1 / (1 - p) at p = 1 was -inf).
  // Negated in the result's dtype: an integer tensor with a fractional b must not wrap first.
  Tensor negated = run_scalar(BinaryOp::Mul, cast(a, result_type(a, b)), -1.0, 1.0, "rsub");
  Tensor r = run_scalar(BinaryOp::Add, negated, b, 1.0, "rsub");
  autograd::record("RsubBackward", {a}, {r}, {}, [](const TensorList& g, const TensorList&) { return TensorList{neg(g[0])}; });
  return r;
}

Tensor mul(const Tensor& a, double b) {
  Tensor out = run_scalar(BinaryOp::Mul, a, b);
  autograd::record("MulBackward", {a}, {out}, {}, [b](const TensorList& g, const TensorList&) { return TensorList{mul(g[0], b)}; });
  return out;
}

Tensor div(const Tensor& a, double b) {
  Tensor out = run_scalar(BinaryOp::Div, a, b);
  autograd::record("DivBackward", {a}, {out}, {}, [b](const TensorList& g, const TensorList&) { return TensorList{div(g[0], b)}; });
  return out;
}

namespace {
BinaryOp rounding_op(const std::string& rounding_mode) {
  MINIDL_CHECK(rounding_mode == "floor" || rounding_mode == "trunc", "div",
               "expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", rounding_mode, "'");
  return rounding_mode == "floor" ? BinaryOp::DivFloor : BinaryOp::DivTrunc;
}
// The rounded quotient is piecewise constant: zero gradient for both inputs, as PyTorch's.
TensorList zero_gradients(const TensorList& g, const Shape& sa, const Shape& sb) {
  Tensor z = zeros_like(g[0]);
  return TensorList{sum_to(z, sa), sum_to(z, sb)};
}
}  // namespace

Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode) {
  Prepared p = prepare(rounding_op(rounding_mode), a, b, 1.0);
  if (p.out.is_floating_point())
    autograd::record("DivBackward", {p.a, p.b}, {p.out}, {}, [sa = p.a.shape(), sb = p.b.shape()](const TensorList& g, const TensorList&) {
      return zero_gradients(g, sa, sb);
    });
  return p.out;
}

Tensor div(const Tensor& a, double b, const std::string& rounding_mode) {
  Tensor out = run_scalar(rounding_op(rounding_mode), a, b);
  if (out.is_floating_point())
    autograd::record("DivBackward", {a}, {out}, {}, [](const TensorList& g, const TensorList&) { return TensorList{zeros_like(g[0])}; });
  return out;
}

Tensor floor_divide(const Tensor& a, const Tensor& b) { return div(a, b, "floor"); }
Tensor floor_divide(const Tensor& a, double b) { return div(a, b, "floor"); }

Tensor atan2(const Tensor& a_arg, const Tensor& b_arg) {
  amp::AutocastInputs in(kAtan2, {a_arg, b_arg});
  Prepared p = prepare(BinaryOp::Atan2, in[0], in[1], 1.0);
  // d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2), as PyTorch's atan2_backward.
  autograd::record("Atan2Backward", {p.a, p.b}, {p.out}, {p.a, p.b},
                   [sa = p.a.shape(), sb = p.b.shape()](const TensorList& g, const TensorList& s) {
                     const Tensor scale = div(g[0], add(mul(s[0], s[0]), mul(s[1], s[1])));
                     return TensorList{sum_to(mul(scale, s[1]), sa), sum_to(neg(mul(scale, s[0])), sb)};
                   });
  return p.out;
}

Tensor pow(const Tensor& a_arg, double e) {
  amp::AutocastInputs in(kPow, {a_arg});
  const Tensor& a = in[0];
  Tensor out = run_scalar(BinaryOp::Pow, a, e);
  autograd::record("PowBackward", {a}, {out}, {a}, [e](const TensorList& g, const TensorList& s) {
    if (e == 0.0) return TensorList{zeros_like(g[0])};
    return TensorList{mul(mul(g[0], pow(s[0], e - 1.0)), e)};
  });
  return out;
}

Tensor neg(const Tensor& a) {
  check_not_bool("neg", "negation of", a);
  Tensor out = run_scalar(BinaryOp::Mul, a, -1.0, 1.0, "neg");
  autograd::record("NegBackward", {a}, {out}, {}, [](const TensorList& g, const TensorList&) { return TensorList{neg(g[0])}; });
  return out;
}

}  // namespace minidl
