// Element-wise math: exp, log, sqrt, rsqrt, abs, sign. Autocast policy: None on CPU (FP32 on CUDA
// for exp/log/rsqrt, set in amp/policy). Backward in differentiable ops.
#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;
using kernels::UnaryOp;

// Autocast policies of this family (the policy table is built from these rows).
namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kExp{"exp", P::None, P::FP32};
const amp::OpPolicy kLog{"log", P::None, P::FP32};
const amp::OpPolicy kRsqrt{"rsqrt", P::None, P::FP32};
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::unary_policies() { return {&kExp, &kLog, &kRsqrt}; }

namespace ops_detail {
Tensor unary_forward(UnaryOp op, const char* name, const Tensor& x_in, double p0, double p1) {
  check_defined(x_in, name, "self");
  Tensor x = x_in.is_floating_point() ? x_in : cast(x_in, DType::F32);
  auto kernel = K().unary.get(x.device(), x.dtype(), name);
  Tensor out = new_empty_like(x.shape(), x.dtype(), x.device(), {&x});
  kernel(op, out, x, p0, p1);
  return out;
}
}  // namespace ops_detail

Tensor exp(const Tensor& x_arg) {
  amp::AutocastInputs in(kExp, {x_arg});
  const Tensor& x = in[0];
  Tensor out = unary_forward(UnaryOp::Exp, "exp", x);
  autograd::record("ExpBackward", {x}, {out}, {autograd::output(out)},
                   [](const TensorList& g, const TensorList& s) { return TensorList{mul(g[0], s[0])}; });
  return out;
}

Tensor log(const Tensor& x_arg) {
  amp::AutocastInputs in(kLog, {x_arg});
  const Tensor& x = in[0];
  Tensor out = unary_forward(UnaryOp::Log, "log", x);
  autograd::record("LogBackward", {x}, {out}, {x}, [](const TensorList& g, const TensorList& s) { return TensorList{div(g[0], s[0])}; });
  return out;
}

Tensor sqrt(const Tensor& x) {
  Tensor out = unary_forward(UnaryOp::Sqrt, "sqrt", x);
  autograd::record("SqrtBackward", {x}, {out}, {autograd::output(out)},
                   [](const TensorList& g, const TensorList& s) { return TensorList{div(g[0], mul(s[0], 2.0))}; });
  return out;
}

Tensor rsqrt(const Tensor& x_arg) {
  amp::AutocastInputs in(kRsqrt, {x_arg});
  const Tensor& x = in[0];
  Tensor out = unary_forward(UnaryOp::Rsqrt, "rsqrt", x);
  // d/dx x^-1/2 = -1/2 x^-3/2 = -1/2 out^3
  autograd::record("RsqrtBackward", {x}, {out}, {autograd::output(out)}, [](const TensorList& g, const TensorList& s) {
    return TensorList{mul(mul(g[0], pow(s[0], 3.0)), -0.5)};
  });
  return out;
}

Tensor abs(const Tensor& x) {
  check_defined(x, "abs", "self");
  if (!x.is_floating_point()) {
    // Integers keep their dtype, as torch.abs (abs of the most negative value wraps to itself).
    MINIDL_CHECK(x.dtype() != DType::Bool, "abs", "not supported for bool tensors (got ", x.meta_str(), ")");
    if (x.dtype() == DType::U8) return x.clone();
    return where(lt(x, 0.0), neg(x), x);
  }
  Tensor out = unary_forward(UnaryOp::Abs, "abs", x);
  autograd::record("AbsBackward", {x}, {out}, {x}, [](const TensorList& g, const TensorList& s) { return TensorList{mul(g[0], sign(s[0]))}; });
  return out;
}

Tensor sign(const Tensor& x) {
  check_defined(x, "sign", "self");
  // Integers and bools keep their dtype, as torch.sign.
  if (x.dtype() == DType::Bool) return x.detach().clone();
  if (!x.is_floating_point()) return sub(cast(gt(x, 0.0), x.dtype()), cast(lt(x, 0.0), x.dtype()));
  Tensor out = unary_forward(UnaryOp::Sign, "sign", x);
  // Differentiable with a zero gradient, as PyTorch's SignBackward: sign(x) of a tensor that
  // requires grad requires grad too, so backward() and grad() through it give zeros, not an error.
  autograd::record("SignBackward", {x}, {out}, {}, [](const TensorList& g, const TensorList&) { return TensorList{zeros_like(g[0])}; });
  return out;
}

}  // namespace minidl
