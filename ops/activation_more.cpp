// The rest of torch.nn's activations: hardswish, hardsigmoid, mish and logsigmoid on kernels of
// their own (one pass, PyTorch's formulas: ops/kernels.h UnaryOp), selu, celu, softsign,
// tanhshrink, softshrink, hardshrink, threshold and glu as composites. No autocast row (none is
// on PyTorch's lists): each runs in its input's dtype. Backwards are differentiable ops, with
// PyTorch's values at the kinks (noted per op).
#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;
using kernels::UnaryOp;

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

Tensor floating_input(const Tensor& x, const char* name) {
  check_defined(x, name, "input");
  check_floating(name, x);
  return x;
}
}  // namespace

Tensor hardswish(const Tensor& x) {
  // PyTorch's hardswish_backward: 0 below -3, x / 3 + 1/2 on [-3, 3], 1 above.
  return activation_kernel_op(UnaryOp::Hardswish, "hardswish", "HardswishBackward", x, [](const Tensor& g, const Tensor& v) {
    Tensor inside = mul(g, add(div(v, 3.0), 0.5));
    return where(lt(v, -3.0), zeros_like(g), where(le(v, 3.0), inside, g));
  });
}

Tensor hardsigmoid(const Tensor& x) {
  // PyTorch's hardsigmoid_backward: 1/6 strictly inside (-3, 3), 0 elsewhere (its kernel's 1/6 is an
  // f32 constant, so its f64 gradient is 0.16666667163; here 1/6 in the gradient's dtype).
  return activation_kernel_op(UnaryOp::Hardsigmoid, "hardsigmoid", "HardsigmoidBackward", x, [](const Tensor& g, const Tensor& v) {
    return where(gt(v, -3.0), where(lt(v, 3.0), div(g, 6.0), zeros_like(g)), zeros_like(g));
  });
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
  return where(gt(x, 0.0), mul(x, scale), mul(sub(exp(clamp(x, std::nullopt, 0.0)), 1.0), alpha * scale));
}

Tensor celu(const Tensor& x_in, double alpha) {
  const Tensor& x = floating_input(x_in, "celu");
  MINIDL_CHECK(alpha != 0.0, "celu", "ZeroDivisionError: alpha cannot be 0 for CELU");
  // alpha (exp(x / alpha) - 1) for x <= 0, as selu: exp of min(x, 0) only, so the unused branch
  // stays finite. PyTorch's backward rounds 1 / alpha to f32 (derivatives.yaml: 1.0/alpha.toFloat()),
  // so its f64 gradients are about 1e-8 off; these are not.
  return where(gt(x, 0.0), x, mul(sub(exp(div(clamp(x, std::nullopt, 0.0), alpha)), 1.0), alpha));
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
  // x -+ lambd outside [-lambd, lambd], 0 inside and at NaN (torch 1.13's kernel compares too).
  return where(gt(x, lambd), sub(x, lambd), where(lt(x, -lambd), add(x, lambd), zeros_like(x)));
}

Tensor hardshrink(const Tensor& x_in, double lambd) {
  const Tensor& x = floating_input(x_in, "hardshrink");
  // 0 on [-lambd, lambd] (bounds included, as PyTorch's), x elsewhere: NaN passes.
  return where(ge(x, -lambd), where(le(x, lambd), zeros_like(x), x), x);
}

Tensor threshold(const Tensor& x, double threshold_value, double value) {
  check_defined(x, "threshold", "input");
  MINIDL_CHECK(x.dtype() != DType::Bool, "threshold", "not implemented for 'Bool' (got ", x.meta_str(), ")");
  return where(le(x, threshold_value), full_like(x, value), x);  // NaN is not <=: it passes
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
