// Element-wise math as torch's: trigonometric and hyperbolic functions and their inverses, log1p,
// expm1, log2, log10, exp2, erf, erfc, erfinv, reciprocal and square, and the rounding functions
// floor, ceil, round (half to even), trunc and frac. Integer and bool inputs give f32 (the rounding
// functions keep an integer tensor's dtype, as torch's). Autocast: the rows PyTorch's CUDA FP32 list
// has (tan, asin, acos, sinh, cosh, log1p, expm1, log2, log10, erfinv, reciprocal; square through
// pow); on the CPU none is on a list. Each backward is written in differentiable ops, so every
// derivative order works.
#include <numbers>
#include <optional>

#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;
using kernels::UnaryOp;

namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kTan{"tan", P::None, P::FP32};
const amp::OpPolicy kAsin{"asin", P::None, P::FP32};
const amp::OpPolicy kAcos{"acos", P::None, P::FP32};
const amp::OpPolicy kSinh{"sinh", P::None, P::FP32};
const amp::OpPolicy kCosh{"cosh", P::None, P::FP32};
const amp::OpPolicy kLog1p{"log1p", P::None, P::FP32};
const amp::OpPolicy kExpm1{"expm1", P::None, P::FP32};
const amp::OpPolicy kLog2{"log2", P::None, P::FP32};
const amp::OpPolicy kLog10{"log10", P::None, P::FP32};
const amp::OpPolicy kErfinv{"erfinv", P::None, P::FP32};
const amp::OpPolicy kReciprocal{"reciprocal", P::None, P::FP32};
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::math_policies() {
  return {&kTan, &kAsin, &kAcos, &kSinh, &kCosh, &kLog1p, &kExpm1, &kLog2, &kLog10, &kErfinv, &kReciprocal};
}

namespace {
// What a backward saves: the op's input, its result, or nothing.
enum class Save { Input, Output, Nothing };
// The input gradient from the output gradient g and the saved tensor.
using GradFormula = Tensor (*)(const Tensor& g, const Tensor& saved);

// One op of this family: autocast (where it has a row), the kernel, and the backward.
Tensor math_op(UnaryOp op, const char* name, const char* node, const amp::OpPolicy* policy, const Tensor& x_arg,
               Save save, GradFormula grad) {
  check_defined(x_arg, name, "input");
  std::optional<amp::AutocastInputs> in;
  if (policy) in.emplace(*policy, TensorList{x_arg});
  const Tensor& x = policy ? (*in)[0] : x_arg;
  Tensor out = unary_forward(op, name, x);
  std::vector<autograd::Saved> saved;
  if (save != Save::Nothing) saved.push_back(save == Save::Output ? autograd::output(out) : autograd::Saved(x));
  autograd::record(node, {x}, {out}, std::move(saved),
                   [grad](const TensorList& g, const TensorList& s) { return TensorList{grad(g[0], s.empty() ? Tensor() : s[0])}; });
  return out;
}

// floor, ceil, round, trunc: an integer tensor is returned as a copy (nothing to round), bool is
// refused, as torch's; the gradient is zero (as PyTorch's: defined, not an error).
Tensor rounding_op(UnaryOp op, const char* name, const char* node, const Tensor& x) {
  check_defined(x, name, "input");
  MINIDL_CHECK(x.dtype() != DType::Bool, name, "not implemented for 'Bool' (got ", x.meta_str(), ")");
  if (!x.is_floating_point()) return x.clone();
  return math_op(op, name, node, nullptr, x, Save::Nothing, [](const Tensor& g, const Tensor&) { return zeros_like(g); });
}

Tensor one_minus_square(const Tensor& x) { return rsub(mul(x, x), 1.0); }
constexpr double kTwoOverSqrtPi = 2.0 * std::numbers::inv_sqrtpi;
}  // namespace

Tensor sin(const Tensor& x) {
  return math_op(UnaryOp::Sin, "sin", "SinBackward", nullptr, x, Save::Input,
                 [](const Tensor& g, const Tensor& v) { return mul(g, cos(v)); });
}
Tensor cos(const Tensor& x) {
  return math_op(UnaryOp::Cos, "cos", "CosBackward", nullptr, x, Save::Input,
                 [](const Tensor& g, const Tensor& v) { return mul(g, neg(sin(v))); });
}
Tensor tan(const Tensor& x) {  // 1 + tan^2
  return math_op(UnaryOp::Tan, "tan", "TanBackward", &kTan, x, Save::Output,
                 [](const Tensor& g, const Tensor& y) { return mul(g, add(mul(y, y), 1.0)); });
}
Tensor asin(const Tensor& x) {
  return math_op(UnaryOp::Asin, "asin", "AsinBackward", &kAsin, x, Save::Input,
                 [](const Tensor& g, const Tensor& v) { return mul(g, rsqrt(one_minus_square(v))); });
}
Tensor acos(const Tensor& x) {
  return math_op(UnaryOp::Acos, "acos", "AcosBackward", &kAcos, x, Save::Input,
                 [](const Tensor& g, const Tensor& v) { return mul(g, neg(rsqrt(one_minus_square(v)))); });
}
Tensor atan(const Tensor& x) {
  return math_op(UnaryOp::Atan, "atan", "AtanBackward", nullptr, x, Save::Input,
                 [](const Tensor& g, const Tensor& v) { return div(g, add(mul(v, v), 1.0)); });
}
Tensor sinh(const Tensor& x) {
  return math_op(UnaryOp::Sinh, "sinh", "SinhBackward", &kSinh, x, Save::Input,
                 [](const Tensor& g, const Tensor& v) { return mul(g, cosh(v)); });
}
Tensor cosh(const Tensor& x) {
  return math_op(UnaryOp::Cosh, "cosh", "CoshBackward", &kCosh, x, Save::Input,
                 [](const Tensor& g, const Tensor& v) { return mul(g, sinh(v)); });
}
Tensor asinh(const Tensor& x) {
  return math_op(UnaryOp::Asinh, "asinh", "AsinhBackward", nullptr, x, Save::Input,
                 [](const Tensor& g, const Tensor& v) { return mul(g, rsqrt(add(mul(v, v), 1.0))); });
}
Tensor acosh(const Tensor& x) {
  return math_op(UnaryOp::Acosh, "acosh", "AcoshBackward", nullptr, x, Save::Input,
                 [](const Tensor& g, const Tensor& v) { return mul(g, rsqrt(sub(mul(v, v), 1.0))); });
}
Tensor atanh(const Tensor& x) {
  return math_op(UnaryOp::Atanh, "atanh", "AtanhBackward", nullptr, x, Save::Input,
                 [](const Tensor& g, const Tensor& v) { return div(g, one_minus_square(v)); });
}

Tensor log1p(const Tensor& x) {
  return math_op(UnaryOp::Log1p, "log1p", "Log1pBackward", &kLog1p, x, Save::Input,
                 [](const Tensor& g, const Tensor& v) { return div(g, add(v, 1.0)); });
}
Tensor expm1(const Tensor& x) {
  return math_op(UnaryOp::Expm1, "expm1", "Expm1Backward", &kExpm1, x, Save::Output,
                 [](const Tensor& g, const Tensor& y) { return mul(g, add(y, 1.0)); });
}
Tensor log2(const Tensor& x) {
  return math_op(UnaryOp::Log2, "log2", "Log2Backward", &kLog2, x, Save::Input,
                 [](const Tensor& g, const Tensor& v) { return div(g, mul(v, std::numbers::ln2)); });
}
Tensor log10(const Tensor& x) {
  return math_op(UnaryOp::Log10, "log10", "Log10Backward", &kLog10, x, Save::Input,
                 [](const Tensor& g, const Tensor& v) { return div(g, mul(v, std::numbers::ln10)); });
}
Tensor exp2(const Tensor& x) {
  return math_op(UnaryOp::Exp2, "exp2", "Exp2Backward", nullptr, x, Save::Output,
                 [](const Tensor& g, const Tensor& y) { return mul(g, mul(y, std::numbers::ln2)); });
}

Tensor erf(const Tensor& x) {  // 2 / sqrt(pi) exp(-x^2)
  return math_op(UnaryOp::Erf, "erf", "ErfBackward", nullptr, x, Save::Input,
                 [](const Tensor& g, const Tensor& v) { return mul(g, mul(exp(neg(mul(v, v))), kTwoOverSqrtPi)); });
}
Tensor erfc(const Tensor& x) {
  return math_op(UnaryOp::Erfc, "erfc", "ErfcBackward", nullptr, x, Save::Input,
                 [](const Tensor& g, const Tensor& v) { return mul(g, mul(exp(neg(mul(v, v))), -kTwoOverSqrtPi)); });
}
Tensor erfinv(const Tensor& x) {  // sqrt(pi) / 2 exp(y^2)
  return math_op(UnaryOp::Erfinv, "erfinv", "ErfinvBackward", &kErfinv, x, Save::Output,
                 [](const Tensor& g, const Tensor& y) { return mul(g, mul(exp(mul(y, y)), 1.0 / kTwoOverSqrtPi)); });
}

Tensor reciprocal(const Tensor& x) {  // -1 / x^2 = -y^2
  return math_op(UnaryOp::Reciprocal, "reciprocal", "ReciprocalBackward", &kReciprocal, x, Save::Output,
                 [](const Tensor& g, const Tensor& y) { return mul(g, neg(mul(y, y))); });
}

Tensor square(const Tensor& x) {
  check_defined(x, "square", "input");
  // torch.square is pow(x, 2): the same values, gradient and autocast row (FP32 on CUDA); a bool
  // tensor squares as i64, as PyTorch's pow promotes it.
  return pow(x.dtype() == DType::Bool ? cast(x, DType::I64) : x, 2.0);
}

Tensor floor(const Tensor& x) { return rounding_op(UnaryOp::Floor, "floor", "FloorBackward", x); }
Tensor ceil(const Tensor& x) { return rounding_op(UnaryOp::Ceil, "ceil", "CeilBackward", x); }
Tensor round(const Tensor& x) { return rounding_op(UnaryOp::Round, "round", "RoundBackward", x); }
Tensor trunc(const Tensor& x) { return rounding_op(UnaryOp::Trunc, "trunc", "TruncBackward", x); }

Tensor frac(const Tensor& x) {
  check_defined(x, "frac", "input");
  MINIDL_CHECK(x.is_floating_point(), "frac", "not implemented for '", dtype_name(x.dtype()), "' (got ", x.meta_str(), ")");
  return sub(x, trunc(x).detach());  // x - trunc(x); gradient 1 (trunc's is 0)
}

}  // namespace minidl
