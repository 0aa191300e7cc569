// Pooling: max_pool2d (+ indices), avg_pool2d, adaptive_avg_pool2d and adaptive_max_pool2d (+
// indices), with PyTorch's output sizes
// (ceil_mode included), windows and divisors (divisor_override included). Autocast policy: None
// (declared below, so that a policy override applies). Every backward is a differentiable op:
// the max-pool backward scatters by the saved indices and its own derivative gathers by them; the
// average-pool backward is the adjoint of the (linear) forward and vice versa. So second order works.
#include "ops/common.h"
#include "ops/nn_ops.h"
#include "ops/window_args.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;
using kernels::Pool2dGeometry;

// Autocast policies of this family (the policy table is built from these rows).
namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kMaxPool2d{"max_pool2d", P::None, P::None};
const amp::OpPolicy kAvgPool2d{"avg_pool2d", P::None, P::None};
const amp::OpPolicy kAdaptiveAvgPool2d{"adaptive_avg_pool2d", P::None, P::None};
const amp::OpPolicy kAdaptiveMaxPool2d{"adaptive_max_pool2d", P::None, P::None};
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::pool_policies() {
  return {&kMaxPool2d, &kAvgPool2d, &kAdaptiveAvgPool2d, &kAdaptiveMaxPool2d};
}

namespace {

// A kernel operand: no graph, the compute dtype, dense in format f.
Tensor operand(const Tensor& t, DType dtype, MemoryFormat f = MemoryFormat::Contiguous) {
  Tensor d = t.detach();
  if (d.dtype() != dtype) d = cast(d, dtype);
  return d.contiguous(f);
}

// Max pooling keeps channels-last images so on the CPU (its kernels take them: a convolution's
// output on oneDNN then needs no copy to NCHW and back); everything else runs on NCHW images.
MemoryFormat max_pool_format(const Tensor& x) {
  return x.device().is_cpu() && x.dim() == 4 ? x.suggest_memory_format() : MemoryFormat::Contiguous;
}

// PyTorch's pooling_output_shape.
int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  const int64_t num = in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// Validates a pooling call and fills the geometry (x made 4-D by the caller).
Pool2dGeometry pool_geometry(const char* op, const Tensor& x_in, const Tensor& x, Size2 kernel, Size2& stride, Size2 padding,
                             Size2 dilation, bool ceil_mode, bool is_max) {
  if (stride[0] == 0 && stride[1] == 0) stride = kernel;  // PyTorch's default: stride = kernel_size
  MINIDL_CHECK(kernel[0] > 0 && kernel[1] > 0, op, "kernel size should be greater than zero, but got kH: ", kernel[0],
               " kW: ", kernel[1]);
  MINIDL_CHECK(stride[0] > 0 && stride[1] > 0, op, "stride should be greater than zero, but got dH: ", stride[0], " dW: ",
               stride[1]);
  MINIDL_CHECK(dilation[0] > 0 && dilation[1] > 0, op, "dilation should be greater than zero, but got dilationH: ",
               dilation[0], " dilationW: ", dilation[1]);
  for (int i = 0; i < 2; ++i) {
    const int64_t eff = is_max ? ((kernel[i] - 1) * dilation[i] + 1) : kernel[i];
    MINIDL_CHECK(padding[i] >= 0 && padding[i] <= eff / 2, op,
                 "pad should be at most half of effective kernel size, but got pad=", padding[i], ", kernel_size=", kernel[i],
                 " and dilation=", dilation[i]);
  }
  Pool2dGeometry g;
  set_input_size(g, x);
  set_window(g, kernel, stride, padding, dilation);
  g.OH = pooled_size(g.H, g.kH, g.ph, g.sh, g.dh, ceil_mode);
  g.OW = pooled_size(g.W, g.kW, g.pw, g.sw, g.dw, ceil_mode);
  MINIDL_CHECK(g.OH >= 1 && g.OW >= 1, op, "given input size ", shape_str(x_in.shape()), ", calculated output size: (",
               g.C, "x", g.OH, "x", g.OW, "). Output size is too small");
  return g;
}

void check_input(const char* op, const Tensor& x) {
  check_defined(x, op, "input");
  check_image_rank(op, x);
  check_floating(op, x);
  for (int64_t d = x.dim() - 2; d < x.dim(); ++d)
    MINIDL_CHECK(x.size(d) > 0, op, "expected input to have non-zero size for non-batch dimensions, but got input of size ",
                 shape_str(x.shape()));
}

Tensor max_backward(const char* node, const Tensor& gy, const Tensor& indices, const Pool2dGeometry& g);

// Values at the saved indices (the derivative of max_backward in gy; a gather).
Tensor max_gather(const Tensor& gx, const Tensor& indices, const Pool2dGeometry& g) {
  Tensor v = gather(gx.reshape({g.N, g.C, g.H * g.W}), 2, indices.reshape({g.N, g.C, g.OH * g.OW}));
  return v.reshape({g.N, g.C, g.OH, g.OW});
}

// The gradient of a max pool (node: the forward's backward node name) at its saved indices.
Tensor max_backward(const char* node, const Tensor& gy, const Tensor& indices, const Pool2dGeometry& g) {
  const MemoryFormat f = max_pool_format(indices);  // the forward's
  Tensor gx = empty({g.N, g.C, g.H, g.W}, TensorOptions(gy.dtype()).device(gy.device()).memory_format(f));
  K().max_pool2d_backward.get(gy.device(), gy.dtype())(gx, operand(gy, gy.dtype(), f), indices.contiguous(f), g);
  autograd::record(detail::concat(node, "Backward").c_str(), {gy}, {gx}, {indices},
                   [g](const TensorList& grads, const TensorList& s) { return TensorList{max_gather(grads[0], s[0], g)}; });
  return gx;
}

// A max pool of the (4-D) x over g's windows, values and indices, recorded as `node`; for a 3-D
// x_in the leading dim added for it is taken off again.
MaxPoolResult max_forward(const char* op, const char* node, const Tensor& x_in, const Tensor& x, const Pool2dGeometry& g) {
  const MemoryFormat f = max_pool_format(x);
  Tensor y = empty({g.N, g.C, g.OH, g.OW}, TensorOptions(x.dtype()).device(x.device()).memory_format(f));
  Tensor indices = empty({g.N, g.C, g.OH, g.OW}, TensorOptions(DType::I64).device(x.device()).memory_format(f));
  K().max_pool2d.get(x.device(), x.dtype(), op)(y, indices, operand(x, x.dtype(), f), g);
  autograd::record(node, {x}, {y}, {indices}, [g, node](const TensorList& grads, const TensorList& s) {
    return TensorList{max_backward(node, grads[0], s[0], g)};
  });
  if (x_in.dim() == 3) return {y.squeeze(0), indices.squeeze(0)};
  return {y, indices};
}

Tensor avg_backward(const Tensor& gy, const Pool2dGeometry& g);

Tensor avg_forward(const char* name, const Tensor& x, const Pool2dGeometry& g) {
  Tensor y = new_empty({g.N, g.C, g.OH, g.OW}, x.dtype(), x.device());
  K().avg_pool2d.get(x.device(), x.dtype())(y, operand(x, x.dtype()), g);
  autograd::record(name, {x}, {y}, {}, [g](const TensorList& grads, const TensorList&) {
    return TensorList{avg_backward(grads[0], g)};
  });
  return y;
}

Tensor avg_backward(const Tensor& gy, const Pool2dGeometry& g) {
  Tensor gx = new_empty({g.N, g.C, g.H, g.W}, gy.dtype(), gy.device());
  K().avg_pool2d_backward.get(gy.device(), gy.dtype())(gx, operand(gy, gy.dtype()), g);
  autograd::record("AvgPool2DBackwardBackward", {gy}, {gx}, {}, [g](const TensorList& grads, const TensorList&) {
    return TensorList{avg_forward("AvgPool2DBackward", grads[0], g)};
  });
  return gx;
}

}  // namespace

MaxPoolResult max_pool2d_with_indices(const Tensor& x_arg, Size2 kernel, Size2 stride, Size2 padding, Size2 dilation,
                                      bool ceil_mode) {
  const char* op = "max_pool2d";
  amp::AutocastInputs in(kMaxPool2d, {x_arg});
  const Tensor& x_in = in[0];
  check_input(op, x_in);
  const bool batched = x_in.dim() == 4;
  Tensor x = batched ? x_in : x_in.unsqueeze(0);
  const Pool2dGeometry g = pool_geometry(op, x_in, x, kernel, stride, padding, dilation, ceil_mode, true);
  return max_forward(op, "MaxPool2DWithIndicesBackward", x_in, x, g);
}

Tensor max_pool2d(const Tensor& x, Size2 kernel, Size2 stride, Size2 padding, Size2 dilation, bool ceil_mode) {
  return max_pool2d_with_indices(x, kernel, stride, padding, dilation, ceil_mode).values;
}

Tensor avg_pool2d(const Tensor& x_arg, Size2 kernel, Size2 stride, Size2 padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  const char* op = "avg_pool2d";
  amp::AutocastInputs in(kAvgPool2d, {x_arg});
  const Tensor& x_in = in[0];
  check_input(op, x_in);
  MINIDL_CHECK(divisor_override.value_or(1) != 0, op, "divisor must be not zero");
  const bool batched = x_in.dim() == 4;
  Tensor x = batched ? x_in : x_in.unsqueeze(0);
  Pool2dGeometry g = pool_geometry(op, x_in, x, kernel, stride, padding, {1, 1}, ceil_mode, false);
  g.count_include_pad = count_include_pad;
  g.divisor_override = divisor_override.value_or(0);
  Tensor y = avg_forward("AvgPool2DBackward", x, g);
  return batched ? y : y.squeeze(0);
}

namespace {
// The geometry of an adaptive pool of the (made 4-D) x to output_size.
Pool2dGeometry adaptive_geometry(const char* op, const Tensor& x, Size2 output_size) {
  MINIDL_CHECK(output_size[0] > 0 && output_size[1] > 0, op, "output size must be positive, got [", output_size[0], ", ",
               output_size[1], "]");
  Pool2dGeometry g;
  set_input_size(g, x);
  g.OH = output_size[0];
  g.OW = output_size[1];
  g.adaptive = true;
  return g;
}
}  // namespace

Tensor adaptive_avg_pool2d(const Tensor& x_arg, Size2 output_size) {
  const char* op = "adaptive_avg_pool2d";
  amp::AutocastInputs in(kAdaptiveAvgPool2d, {x_arg});
  const Tensor& x_in = in[0];
  check_input(op, x_in);
  const bool batched = x_in.dim() == 4;
  Tensor x = batched ? x_in : x_in.unsqueeze(0);
  Tensor y = avg_forward("AdaptiveAvgPool2DBackward", x, adaptive_geometry(op, x, output_size));
  return batched ? y : y.squeeze(0);
}

MaxPoolResult adaptive_max_pool2d_with_indices(const Tensor& x_arg, Size2 output_size) {
  const char* op = "adaptive_max_pool2d";
  amp::AutocastInputs in(kAdaptiveMaxPool2d, {x_arg});
  const Tensor& x_in = in[0];
  check_input(op, x_in);
  const bool batched = x_in.dim() == 4;
  Tensor x = batched ? x_in : x_in.unsqueeze(0);
  return max_forward(op, "AdaptiveMaxPool2DBackward", x_in, x, adaptive_geometry(op, x, output_size));
}

Tensor adaptive_max_pool2d(const Tensor& x, Size2 output_size) { return adaptive_max_pool2d_with_indices(x, output_size).values; }

}  // namespace minidl
