// Softmax family: softmax, log_softmax and their backward, along any dim. The kernels work on the
// last dim of a contiguous tensor; another dim is transposed last (one copy) and back. f16/bf16
// compute in f32 inside the kernel and return the input dtype. Autocast policy: None on CPU
// (FP32SetOptDtype on CUDA, set in amp/policy); a call with an explicit dtype is not autocast.
//
// Backward is the differentiable op softmax_backward (one fused kernel); its own backward is
// written in differentiable ops, so gradients of any order work:
//   softmax:     gx = y * (g - sum(g * y))        log_softmax: gx = g - exp(y) * sum(g)
#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;

// Autocast policies of this family (the policy table is built from these rows).
namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kSoftmax{"softmax", P::None, P::FP32SetOptDtype};
const amp::OpPolicy kLogSoftmax{"log_softmax", P::None, P::FP32SetOptDtype};
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::softmax_policies() { return {&kSoftmax, &kLogSoftmax}; }

namespace {
// x with `dim` moved last, contiguous. No autograd: callers pass detached tensors.
Tensor dim_last(const Tensor& x, int64_t dim) {
  return dim == x.dim() - 1 ? x.contiguous() : x.transpose(dim, -1).contiguous();
}
// The inverse of dim_last, again contiguous (the result keeps the input's layout, as PyTorch).
Tensor dim_back(const Tensor& y, int64_t dim) {
  return dim == y.dim() - 1 ? y : y.transpose(dim, -1).contiguous();
}

// x cast to the dtype a caller asked for (a floating one, as PyTorch's softmax(dtype=)).
Tensor cast_to_requested(const Tensor& x, DType dtype, const char* name) {
  check_defined(x, name, "self");
  MINIDL_CHECK(is_floating(dtype), name, "dtype must be a floating point type, got ", dtype_name(dtype));
  return cast(x, dtype);
}

Tensor softmax_forward(const char* name, const Tensor& x, int64_t dim, bool log) {
  check_defined(x, name, "self");
  MINIDL_CHECK(x.is_floating_point(), name, "expected a floating point input, got ", x.meta_str(),
               "; cast it first");
  if (x.dim() == 0) {
    wrap_dim(dim, 1, name);
    return softmax_forward(name, x.reshape({1}), 0, log).reshape({});
  }
  dim = wrap_dim(dim, x.dim(), name);
  const Tensor xl = dim_last(x.detach(), dim);
  Tensor out = new_empty(xl.shape(), x.dtype(), x.device());
  K().softmax.get(x.device(), x.dtype())(out, xl, log);
  out = dim_back(out, dim);
  autograd::record(log ? "LogSoftmaxBackward" : "SoftmaxBackward", {x}, {out}, {autograd::output(out)},
                   [dim, log](const TensorList& g, const TensorList& s) {
                     return TensorList{softmax_backward(g[0], s[0], dim, log)};
                   });
  return out;
}
}  // namespace

// With an explicit dtype the input is cast to it (a differentiable cast: the gradient returns in
// x's dtype) and autocast is not consulted, as PyTorch's fp32_set_opt_dtype keeps a given dtype.
Tensor softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  if (dtype) return softmax_forward("softmax", cast_to_requested(x, *dtype, "softmax"), dim, false);
  amp::AutocastInputs in(kSoftmax, {x});
  return softmax_forward("softmax", in[0], dim, false);
}
Tensor log_softmax(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  if (dtype) return softmax_forward("log_softmax", cast_to_requested(x, *dtype, "log_softmax"), dim, true);
  amp::AutocastInputs in(kLogSoftmax, {x});
  return softmax_forward("log_softmax", in[0], dim, true);
}

Tensor softmax_backward(const Tensor& g_in, const Tensor& y, int64_t dim, bool log) {
  const char* name = "softmax_backward";
  check_defined(g_in, name, "grad_output");
  check_defined(y, name, "output");
  check_same_device(name, g_in, y);
  MINIDL_CHECK(g_in.shape() == y.shape(), name, "grad_output ", g_in.meta_str(), " and output ", y.meta_str(),
               " must have the same shape");
  if (y.dim() == 0) return softmax_backward(g_in.reshape({1}), y.reshape({1}), 0, log).reshape({});
  dim = wrap_dim(dim, y.dim(), name);
  const Tensor g = cast(g_in, y.dtype());
  const Tensor gl = dim_last(g.detach(), dim), yl = dim_last(y.detach(), dim);
  Tensor out = new_empty(yl.shape(), y.dtype(), y.device());
  K().softmax_backward.get(y.device(), y.dtype())(out, gl, yl, log);
  out = dim_back(out, dim);
  autograd::record(log ? "LogSoftmaxBackwardBackward" : "SoftmaxBackwardBackward", {g, y}, {out}, {g, y},
                   [dim, log](const TensorList& gg_list, const TensorList& s) {
                     const Tensor &gg = gg_list[0], &gv = s[0], &yv = s[1];
                     if (log) {
                       // gx = g - e^y S(g):  dg = gg - S(gg e^y),  dy = -gg e^y S(g)
                       Tensor ey = exp(yv);
                       Tensor dg = sub(gg, sum(mul(gg, ey), {dim}, true));
                       Tensor dy = neg(mul(mul(gg, ey), sum(gv, {dim}, true)));
                       return TensorList{dg, dy};
                     }
                     // gx = y (g - S(g y)):  dg = softmax_backward(gg, y),  dy = gg (g - S(g y)) - g S(gg y)
                     Tensor dg = softmax_backward(gg, yv, dim, false);
                     Tensor dy = sub(mul(gg, sub(gv, sum(mul(gv, yv), {dim}, true))), mul(gv, sum(mul(gg, yv), {dim}, true)));
                     return TensorList{dg, dy};
                   });
  return out;
}

}  // namespace minidl
