// Activations: tanh, sigmoid, relu, leaky_relu, gelu (erf and tanh forms), softplus; silu, elu,
// hardtanh, relu6 and prelu as composites of them. Autocast policy: None (prelu: lower precision). Each backward is a fused kernel (one pass over memory) exposed as a differentiable
// op of its own, so second derivatives still work.
#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;
using kernels::BinaryOp;
using kernels::UnaryOp;

// Autocast policies of this family (the policy table is built from these rows).
namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kSoftplus{"softplus", P::None, P::FP32};
// prelu: lower precision on both devices, as PyTorch 2.x (1.13's CPU list did not have it).
const amp::OpPolicy kPrelu{"prelu", P::LowerPrecision, P::LowerPrecision};
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::activation_policies() { return {&kSoftplus, &kPrelu}; }

namespace ops_detail {
// grad_in = g * f'(saved), one kernel; differentiable in g (linear) and, through `d_saved`, in saved
// (no d_saved: f'' is 0).
Tensor fused_backward(BinaryOp op, const char* name, const Tensor& g, const Tensor& saved, double scalar, double alpha,
                      std::function<Tensor(const Tensor& gg, const Tensor& g, const Tensor& saved)> d_saved) {
  Tensor out = new_empty_like(g.shape(), g.dtype(), g.device(), {&g, &saved});
  K().binary.get(g.device(), g.dtype())(op, out, g, saved.dtype() == g.dtype() ? saved : cast(saved, g.dtype()), scalar, alpha);
  autograd::record(name, {g, saved}, {out}, {g, saved},
                   [op, name, scalar, alpha, d_saved](const TensorList& gg, const TensorList& s) {
                     Tensor dg = fused_backward(op, name, gg[0], s[1], scalar, alpha, d_saved);
                     // A piecewise-linear f (relu, leaky_relu) has f'' = 0: the gradient for saved is zeros, not
                     // "unused", so grad(g . g, x) gives zeros as PyTorch's.
                     return TensorList{dg, d_saved ? d_saved(gg[0], s[0], s[1]) : zeros_like(s[1])};
                   });
  return out;
}
}  // namespace ops_detail

Tensor tanh(const Tensor& x) {
  Tensor out = unary_forward(UnaryOp::Tanh, "tanh", x);
  autograd::record("TanhBackward", {x}, {out}, {autograd::output(out)}, [](const TensorList& g, const TensorList& s) {
    // d/dy [g (1 - y^2)] = -2 g y
    return TensorList{fused_backward(BinaryOp::TanhBackward, "TanhBackwardBackward", g[0], s[0], 0, 0,
                                     [](const Tensor& gg, const Tensor& gv, const Tensor& y) { return mul(mul(mul(gg, gv), y), -2.0); })};
  });
  return out;
}

Tensor sigmoid(const Tensor& x) {
  Tensor out = unary_forward(UnaryOp::Sigmoid, "sigmoid", x);
  autograd::record("SigmoidBackward", {x}, {out}, {autograd::output(out)}, [](const TensorList& g, const TensorList& s) {
    // d/dy [g y (1 - y)] = g (1 - 2y)
    return TensorList{fused_backward(BinaryOp::SigmoidBackward, "SigmoidBackwardBackward", g[0], s[0], 0, 0,
                                     [](const Tensor& gg, const Tensor& gv, const Tensor& y) {
                                       return mul(mul(gg, gv), rsub(mul(y, 2.0), 1.0));
                                     })};
  });
  return out;
}

Tensor relu(const Tensor& x) {
  // Integer tensors stay integer, as torch.relu (max(x, 0) in their own dtype); bool is refused.
  if (x.defined() && !x.is_floating_point()) {
    MINIDL_CHECK(x.dtype() != DType::Bool, "relu", "Boolean inputs not supported for relu (got ", x.meta_str(), ")");
    return clamp(x, 0.0, std::nullopt);
  }
  Tensor out = unary_forward(UnaryOp::Relu, "relu", x);
  autograd::record("ReluBackward", {x}, {out}, {autograd::output(out)}, [](const TensorList& g, const TensorList& s) {
    return TensorList{fused_backward(BinaryOp::ReluBackward, "ReluBackwardBackward", g[0], s[0], 0, 0, nullptr)};
  });
  return out;
}

Tensor leaky_relu(const Tensor& x, double slope) {
  check_defined(x, "leaky_relu", "input");
  check_floating("leaky_relu", x);  // PyTorch has no integer kernel (relu keeps integers)
  Tensor out = unary_forward(UnaryOp::LeakyRelu, "leaky_relu", x, slope);
  autograd::record("LeakyReluBackward", {x}, {out}, {x}, [slope](const TensorList& g, const TensorList& s) {
    return TensorList{fused_backward(BinaryOp::LeakyReluBackward, "LeakyReluBackwardBackward", g[0], s[0], 0, slope, nullptr)};
  });
  return out;
}

Tensor gelu(const Tensor& x, bool tanh_approximation) {
  check_defined(x, "gelu", "input");
  check_floating("gelu", x);  // PyTorch has no integer kernel (relu keeps integers)
  Tensor out = unary_forward(tanh_approximation ? UnaryOp::GeluTanh : UnaryOp::Gelu, "gelu", x);
  autograd::record("GeluBackward", {x}, {out}, {x}, [tanh_approximation](const TensorList& g, const TensorList& s) {
    // Second derivative (erf form): gelu''(x) = pdf(x) (2 - x^2); composite for the tanh form.
    auto d2 = [tanh_approximation](const Tensor& gg, const Tensor& gv, const Tensor& xv) {
      if (tanh_approximation) {
        const double k = 0.7978845608028654, c = 0.044715;
        Tensor x2 = mul(xv, xv);
        Tensor t = tanh(mul(add(xv, mul(mul(x2, xv), c)), k));
        Tensor du = mul(add(mul(x2, 3 * c), 1.0), k);       // u'
        Tensor sech2 = rsub(mul(t, t), 1.0);                  // 1 - t^2
        // f' = 0.5(1+t) + 0.5 x sech2 u'; f'' = sech2 u' - x t sech2 u'^2 + 0.5 x sech2 u''
        Tensor f2 = add(sub(mul(sech2, du), mul(mul(mul(xv, t), sech2), mul(du, du))),
                        mul(mul(mul(xv, sech2), mul(xv, 6 * c * k)), 0.5));
        return mul(mul(gg, gv), f2);
      }
      Tensor pdf = mul(exp(mul(mul(xv, xv), -0.5)), 0.3989422804014327);
      return mul(mul(gg, gv), mul(pdf, rsub(mul(xv, xv), 2.0)));
    };
    return TensorList{fused_backward(tanh_approximation ? BinaryOp::GeluTanhBackward : BinaryOp::GeluBackward,
                                     "GeluBackwardBackward", g[0], s[0], 0, 0, d2)};
  });
  return out;
}

Tensor softplus(const Tensor& x_arg, double beta, double threshold) {
  check_defined(x_arg, "softplus", "input");
  check_floating("softplus", x_arg);
  amp::AutocastInputs in(kSoftplus, {x_arg});
  const Tensor& x = in[0];
  Tensor out = unary_forward(UnaryOp::Softplus, "softplus", x, beta, threshold);
  autograd::record("SoftplusBackward", {x}, {out}, {x}, [beta, threshold](const TensorList& g, const TensorList& s) {
    auto d2 = [beta, threshold](const Tensor& gg, const Tensor& gv, const Tensor& xv) {
      // d/dx sigmoid(beta x) = beta s (1 - s), zero above the threshold.
      Tensor sg = sigmoid(mul(xv, beta));
      Tensor below = cast(le(mul(xv, beta), threshold), gv.dtype());
      return mul(mul(mul(gg, gv), mul(mul(sg, rsub(sg, 1.0)), beta)), below);
    };
    return TensorList{fused_backward(BinaryOp::SoftplusBackward, "SoftplusBackwardBackward", g[0], s[0], threshold, beta, d2)};
  });
  return out;
}

// Composites: two or three passes where PyTorch has one fused kernel, but every backend and every
// derivative order comes from the ops they are made of.
Tensor silu(const Tensor& x) {
  check_defined(x, "silu", "input");
  check_floating("silu", x);
  return mul(x, sigmoid(x));
}

Tensor elu(const Tensor& x, double alpha) {
  check_defined(x, "elu", "input");
  check_floating("elu", x);
  // exp of the non-positive part only: exp(x) of a large positive x would be inf in the unused
  // branch, and its zero gradient times inf a NaN. At x = 0 the gradient is alpha and at NaN 1, as
  // PyTorch's elu_backward.
  Tensor negative = mul(sub(exp(nonpositive_part(x)), 1.0), alpha);
  return where(le(x, 0.0), negative, x);
}

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  check_defined(x, "hardtanh", "input");
  check_floating("hardtanh", x);
  MINIDL_CHECK(min_val <= max_val, "hardtanh", "min_val (", min_val, ") must not be greater than max_val (", max_val, ")");
  // Not clamp: PyTorch's hardtanh_backward passes the gradient only strictly inside (min_val, max_val)
  // and at NaN, where clamp's passes it at the bounds too.
  return piecewise_linear(
      "HardtanhBackward", x,
      [min_val, max_val](const Tensor& v) { return where(le(v, min_val), full_like(v, min_val), where(ge(v, max_val), full_like(v, max_val), v)); },
      [min_val, max_val](const Tensor& v) { return logical_not(logical_or(le(v, min_val), ge(v, max_val))); });
}

Tensor relu6(const Tensor& x) { return hardtanh(x, 0.0, 6.0); }

Tensor prelu(const Tensor& x_arg, const Tensor& weight_arg) {
  check_defined(x_arg, "prelu", "input");
  check_defined(weight_arg, "prelu", "weight");
  amp::AutocastInputs in(kPrelu, {x_arg, weight_arg});
  const Tensor &x = in[0], &weight = in[1];
  check_floating("prelu", x);
  check_floating("prelu", weight);
  MINIDL_CHECK(weight.dim() <= 1, "prelu", "Expected `weight` to be a scalar or 1D tensor, but got ndim = ", weight.dim());
  const int64_t channels = x.dim() >= 2 ? x.size(1) : 1;
  MINIDL_CHECK(weight.numel() == 1 || weight.numel() == channels, "prelu",
               "Mismatch of parameter numbers and input channel size. Found parameter numbers = ", weight.numel(),
               " and channel size = ", channels, ".");
  // One slope for every element, or one per channel (dim 1) broadcast over the dims after it. The
  // result has the input's dtype (an f32 weight with a bf16 input gives bf16, as PyTorch's).
  Shape slope_shape;
  if (weight.numel() > 1) {
    slope_shape.assign(x.dim() - 1, 1);
    slope_shape[0] = channels;
  }
  Tensor slope = (weight.dtype() == x.dtype() ? weight : cast(weight, x.dtype())).reshape(slope_shape);
  // At x = 0 the input's gradient is the slope and the slope's is 0, as PyTorch's prelu_backward.
  return where(gt(x, 0.0), x, mul(slope, x));
}

}  // namespace minidl
