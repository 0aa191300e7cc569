// The rest of torch.nn's activations: hardswish, hardsigmoid, mish and logsigmoid on kernels of
// their own (one pass, PyTorch's formulas: ops/kernels.h UnaryOp), selu, celu, softsign,
// tanhshrink, softshrink, hardshrink, threshold and glu as composites. No autocast row (none is
// on PyTorch's lists): each runs in its input's dtype. Backwards are differentiable ops, with
// PyTorch's values at the kinks (noted per op); the piecewise-linear ones (hardsigmoid, the
// shrinks, threshold, and hardtanh in ops/activation.cpp) record one node whose second derivative
// is 0, as PyTorch's native kernels.
#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;
using kernels::UnaryOp;

// x where x <= 0, else 0: the argument of the exponential branch of elu, selu and celu. The unused
// branch then stays finite (exp of a large x would be inf) and a NaN x, which takes the linear
// branch as in PyTorch, sends no 0 * NaN gradient through it (clamp would pass the NaN on).
Tensor ops_detail::nonpositive_part(const Tensor& x) { return where(le(x, 0.0), x, zeros_like(x)); }

namespace {
// A floating activation on its kernel; backward `grad(g, input)`.
Tensor activation_kernel_op(UnaryOp op, const char* name, const char* node, const Tensor& x,
                            Tensor (*grad)(const Tensor& g, const Tensor& x)) {
  check_defined(x, name, "input");
  check_floating(name, x);
  Tensor out = unary_forward(op, name, x);
  autograd::record(node, {x}, {out}, {x}, [grad](const TensorList& g, const TensorList& s) { return TensorList{grad(g[0], s[0])}; });
  return out;
}

// g * passes(x) * scale, recorded on (g, x): differentiable in g (the same mask), zero in x.
Tensor masked_gradient(const std::string& node, const Tensor& g, const Tensor& x, const std::function<Tensor(const Tensor&)>& passes,
                       double scale) {
  Tensor out;
  {
    NoGradGuard no_grad;
    const Tensor mask = cast(passes(x), g.dtype());
    out = mul(g, scale == 1.0 ? mask : mul(mask, scale));
  }
  autograd::record(node.c_str(), {g, x}, {out}, {x}, [node, passes, scale](const TensorList& gg, const TensorList& s) {
    return TensorList{masked_gradient(node, gg[0], s[0], passes, scale), zeros_like(s[0])};
  });
  return out;
}

Tensor floating_input(const Tensor& x, const char* name) {
  check_defined(x, name, "input");
  check_floating(name, x);
  return x;
}
}  // namespace

Tensor ops_detail::piecewise_linear(const char* node, const Tensor& x, const std::function<Tensor(const Tensor&)>& value,
                                   const std::function<Tensor(const Tensor&)>& passes, double scale) {
  Tensor out;
  {
    NoGradGuard no_grad;
    out = value(x);
  }
  const std::string backward_node = std::string(node) + "Backward";
  autograd::record(node, {x}, {out}, {x}, [backward_node, passes, scale](const TensorList& g, const TensorList& s) {
    return TensorList{masked_gradient(backward_node, g[0], s[0], passes, scale)};
  });
  return out;
}

Tensor hardswish(const Tensor& x) {
  // PyTorch's hardswish_backward: 0 below -3, x / 3 + 1/2 on [-3, 3], 1 above.
  return activation_kernel_op(UnaryOp::Hardswish, "hardswish", "HardswishBackward", x, [](const Tensor& g, const Tensor& v) {
    Tensor inside = mul(g, add(div(v, 3.0), 0.5));
    return where(lt(v, -3.0), zeros_like(g), where(le(v, 3.0), inside, g));
  });
}

Tensor hardsigmoid(const Tensor& x) {
  check_defined(x, "hardsigmoid", "input");
  check_floating("hardsigmoid", x);
  // PyTorch's hardsigmoid_backward: 1/6 strictly inside (-3, 3), 0 elsewhere (its kernel's 1/6 is an
  // f32 constant, so its f64 gradient is 0.16666667163; here 1/6 in the gradient's dtype).
  return piecewise_linear(
      "HardsigmoidBackward", x, [](const Tensor& v) { return unary_forward(UnaryOp::Hardsigmoid, "hardsigmoid", v); },
      [](const Tensor& v) { return logical_and(gt(v, -3.0), lt(v, 3.0)); }, 1.0 / 6.0);
}

Tensor mish(const Tensor& x) {
  // tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2), sp = softplus(x), as PyTorch's mish_backward
  // (softplus with its threshold: log1p(exp x) would make the second derivative NaN where exp overflows).
  return activation_kernel_op(UnaryOp::Mish, "mish", "MishBackward", x, [](const Tensor& g, const Tensor& v) {
    Tensor t = tanh(softplus(v));
    return mul(g, add(t, mul(mul(v, sigmoid(v)), rsub(mul(t, t), 1.0))));
  });
}

Tensor logsigmoid(const Tensor& x) {
  return activation_kernel_op(UnaryOp::LogSigmoid, "logsigmoid", "LogSigmoidBackward", x,
                              [](const Tensor& g, const Tensor& v) { return mul(g, sigmoid(neg(v))); });
}

Tensor selu(const Tensor& x_in) {
  const Tensor& x = floating_input(x_in, "selu");
  // PyTorch's constants; at 0 the gradient is alpha * scale, as its elu_backward. exp(x) - 1, not
  // expm1, as PyTorch's elu kernel: selu(-0) is +0, and the gradient is exp(x) itself (expm1's
  // backward, y + 1, would cancel for very negative x).
  constexpr double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
  // NaN takes the positive branch (NaN <= 0 is false), as PyTorch's elu_backward: gradient g scale.
  return where(le(x, 0.0), mul(sub(exp(nonpositive_part(x)), 1.0), alpha * scale), mul(x, scale));
}

Tensor celu(const Tensor& x_in, double alpha) {
  const Tensor& x = floating_input(x_in, "celu");
  MINIDL_CHECK(alpha != 0.0, "celu", "ZeroDivisionError: alpha cannot be 0 for CELU");
  // alpha (exp(x / alpha) - 1) for x <= 0, as selu. PyTorch's backward rounds 1 / alpha to f32
  // (derivatives.yaml: 1.0/alpha.toFloat()), so its f64 gradients are about 1e-8 off; these are not.
  return where(le(x, 0.0), mul(sub(exp(div(nonpositive_part(x), alpha)), 1.0), alpha), x);
}

Tensor softsign(const Tensor& x) {
  check_defined(x, "softsign", "input");
  return div(x, add(abs(x), 1.0));  // as torch.nn.functional's: integers give f32 through div
}

Tensor tanhshrink(const Tensor& x) {
  check_defined(x, "tanhshrink", "input");
  return sub(x, tanh(x));
}

Tensor softshrink(const Tensor& x_in, double lambd) {
  const Tensor& x = floating_input(x_in, "softshrink");
  MINIDL_CHECK(lambd >= 0, "softshrink", "lambda must be greater or equal to 0, but found to be ", lambd, ".");
  // x -+ lambd outside [-lambd, lambd], 0 inside and at NaN (torch 1.13's kernel compares too); the
  // gradient passes outside [-lambd, lambd] and at NaN, as PyTorch's softshrink_backward.
  return piecewise_linear(
      "SoftshrinkBackward", x,
      [lambd](const Tensor& v) { return where(gt(v, lambd), sub(v, lambd), where(lt(v, -lambd), add(v, lambd), zeros_like(v))); },
      [lambd](const Tensor& v) { return logical_not(logical_and(ge(v, -lambd), le(v, lambd))); });
}

Tensor hardshrink(const Tensor& x_in, double lambd) {
  const Tensor& x = floating_input(x_in, "hardshrink");
  // 0 on [-lambd, lambd] (bounds included, as PyTorch's), x elsewhere: NaN passes.
  auto outside = [lambd](const Tensor& v) { return logical_not(logical_and(ge(v, -lambd), le(v, lambd))); };
  return piecewise_linear(
      "HardshrinkBackward", x, [outside](const Tensor& v) { return where(outside(v), v, zeros_like(v)); }, outside);
}

Tensor threshold(const Tensor& x, double threshold_value, double value) {
  check_defined(x, "threshold", "input");
  MINIDL_CHECK(x.dtype() != DType::Bool, "threshold", "not implemented for 'Bool' (got ", x.meta_str(), ")");
  auto passes = [threshold_value](const Tensor& v) { return logical_not(le(v, threshold_value)); };  // NaN is not <=: it passes
  if (!x.is_floating_point()) return where(passes(x), x, full_like(x, value));
  return piecewise_linear("ThresholdBackward", x, [passes, value](const Tensor& v) { return where(passes(v), v, full_like(v, value)); },
                          passes);
}

Tensor glu(const Tensor& x_in, int64_t dim) {
  const Tensor& x = floating_input(x_in, "glu");
  MINIDL_CHECK(x.dim() > 0, "glu", "glu does not support scalars because halving size must be even");
  const int64_t d = wrap_dim(dim, x.dim(), "glu");
  const int64_t n = x.size(d);
  MINIDL_CHECK(n % 2 == 0, "glu", "Halving dimension must be even, but dimension ", d, " is size ", n);
  return mul(x.narrow(d, 0, n / 2), sigmoid(x.narrow(d, n / 2, n / 2)));
}

}  // namespace minidl
