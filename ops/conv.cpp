// Convolutions: conv2d (explicit or "same"/"valid" padding, stride, dilation, groups) and
// conv_transpose2d. Autocast policy: LowerPrecision (declared below; both ops consult it at entry).
//
// Everything is built on three differentiable primitives over one geometry (kernels::Conv2dGeometry):
//   F(x, w)   = the convolution                          -> y   [N, O, OH, OW]
//   Bi(gy, w) = the adjoint of F in x (a transposed conv) -> gx  [N, C, H, W]
//   Bw(x, gy) = the adjoint of F in w                     -> gw  [O, C/groups, kH, kW]
// with <F(x, w), gy> = <x, Bi(gy, w)> = <w, Bw(x, gy)>. Each is bilinear and its partial
// derivatives are the other two, so each backward is written in the primitives themselves and
// gradients of any order are exact (create_graph works through conv layers). A bias is fused into
// F (+ b[o]), into Bi (conv_transpose2d's + b[c]) and into Bw (gb = sum of gy over N, H, W).
#include "ops/common.h"
#include "ops/nn_ops.h"
#include "ops/sequence_ops.h"
#include "ops/window_args.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;
using kernels::Conv2dGeometry;

// Autocast policies of this family (the policy table is built from these rows).
namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kConv2d{"conv2d", P::LowerPrecision, P::LowerPrecision};
const amp::OpPolicy kConvTranspose2d{"conv_transpose2d", P::LowerPrecision, P::LowerPrecision};
const amp::OpPolicy kConv1d{"conv1d", P::LowerPrecision, P::LowerPrecision};
const amp::OpPolicy kConvTranspose1d{"conv_transpose1d", P::LowerPrecision, P::LowerPrecision};
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::conv_policies() { return {&kConv2d, &kConvTranspose2d, &kConv1d, &kConvTranspose1d}; }

namespace {

// The layout of a convolution's images, as PyTorch's rule: channels-last when `images` (the input,
// or the output gradient of a transposed use) is, and the kernels of (device, dtype) take this
// geometry so (the CPU's oneDNN convolutions read and write NHWC without a reorder); else NCHW.
// Deliberate difference: where the kernels do not take it (CUDA; channel counts oneDNN runs slowly
// in NHWC) the result is NCHW, where PyTorch's keeps the input's format.
MemoryFormat image_format(const Tensor& images, DType dtype, const Conv2dGeometry& g) {
  const auto& table = K().conv2d_channels_last;
  const Device device = images.device();
  const bool cl = images.suggest_memory_format() == MemoryFormat::ChannelsLast && table.has(device.type, dtype) &&
                  table.get(device, dtype)(g);
  return cl ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
}

// A kernel operand: no graph, the compute dtype, dense in format f (weights and biases: contiguous).
Tensor operand(const Tensor& t, DType dtype, MemoryFormat f = MemoryFormat::Contiguous) {
  if (!t.defined()) return t;
  Tensor d = t.detach();
  if (d.dtype() != dtype) d = cast(d, dtype);
  return d.contiguous(f);
}
Tensor image_buffer(const Shape& shape, DType dtype, Device device, MemoryFormat f) {
  return empty(shape, TensorOptions(dtype).device(device).memory_format(f));
}

Tensor conv_input_grad(const char* name, const Tensor& gy, const Tensor& w, const Tensor& b, const Conv2dGeometry& g);
TensorList conv_weight_grad(const Tensor& x, const Tensor& gy, bool with_bias, const Conv2dGeometry& g);
TensorList conv_backward(const Tensor& x, const Tensor& gy, const Tensor& w, bool with_bias, const Conv2dGeometry& g);

// F(x, w) + b.
Tensor conv_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dGeometry& g) {
  const DType dt = x.dtype();
  const MemoryFormat f = image_format(x, dt, g);
  Tensor y = image_buffer({g.N, g.O, g.OH, g.OW}, dt, x.device(), f);
  K().conv2d.get(x.device(), dt)(y, operand(x, dt, f), operand(w, dt), operand(b, dt), g);
  const bool need_x = x.requires_grad(), need_w = w.requires_grad(), need_b = b.defined() && b.requires_grad();
  autograd::record("ConvolutionBackward", {x, w, b}, {y}, {need_w ? x : Tensor(), need_x ? w : Tensor()},
                   [g, need_x, need_w, need_b](const TensorList& grads, const TensorList& s) {
                     TensorList r(3);
                     if (need_x && need_w && !GradMode::is_enabled()) return conv_backward(s[0], grads[0], s[1], need_b, g);
                     if (need_x) r[0] = conv_input_grad("ConvolutionBackwardInput", grads[0], s[1], Tensor(), g);
                     if (need_w) {
                       TensorList wb = conv_weight_grad(s[0], grads[0], need_b, g);
                       r[1] = wb[0];
                       if (need_b) r[2] = wb[1];
                     } else if (need_b) {
                       r[2] = sum(grads[0], {0, 2, 3});
                     }
                     return r;
                   });
  return y;
}

// Bi(gy, w) + b. Derivatives: d/dgy <- F(ggx, w), d/dw <- Bw(ggx, gy), d/db <- sum(ggx).
Tensor conv_input_grad(const char* name, const Tensor& gy, const Tensor& w, const Tensor& b, const Conv2dGeometry& g) {
  const DType dt = gy.dtype();
  // With a bias (conv_transpose2d's) the kernels add it over NCHW planes.
  const MemoryFormat f = b.defined() ? MemoryFormat::Contiguous : image_format(gy, dt, g);
  Tensor gx = image_buffer({g.N, g.C, g.H, g.W}, dt, gy.device(), f);
  K().conv2d_input_grad.get(gy.device(), dt)(gx, operand(gy, dt, f), operand(w, dt), operand(b, dt), g);
  const bool need_gy = gy.requires_grad(), need_w = w.requires_grad(), need_b = b.defined() && b.requires_grad();
  autograd::record(name, {gy, w, b}, {gx}, {need_w ? gy : Tensor(), need_gy ? w : Tensor()},
                   [g, need_gy, need_w, need_b](const TensorList& grads, const TensorList& s) {
                     TensorList r(3);
                     if (need_gy) r[0] = conv_forward(grads[0], s[1], Tensor(), g);
                     if (need_w) r[1] = conv_weight_grad(grads[0], s[0], false, g)[0];
                     if (need_b) r[2] = sum(grads[0], {0, 2, 3});
                     return r;
                   });
  return gx;
}

// {Bw(x, gy), sum of gy over N, H, W (when with_bias)}. Derivatives: d/dx <- Bi(gy, ggw),
// d/dgy <- F(x, ggw) + ggb.
TensorList conv_weight_grad(const Tensor& x, const Tensor& gy, bool with_bias, const Conv2dGeometry& g) {
  const DType dt = gy.dtype();
  const MemoryFormat f = image_format(x, dt, g);
  Tensor gw = new_empty({g.O, g.C / g.groups, g.kH, g.kW}, dt, gy.device());
  Tensor gb = with_bias ? new_empty({g.O}, dt, gy.device()) : Tensor();
  K().conv2d_weight_grad.get(gy.device(), dt)(gw, gb, operand(x, dt, f), operand(gy, dt, f), g);
  const bool need_x = x.requires_grad(), need_gy = gy.requires_grad();
  TensorList outs{gw};
  if (with_bias) outs.push_back(gb);
  autograd::record("ConvolutionBackwardWeight", {x, gy}, outs, {need_gy ? x : Tensor(), need_x ? gy : Tensor()},
                   [g, need_x, need_gy, with_bias](const TensorList& grads, const TensorList& s) {
                     TensorList r(2);
                     if (need_x) r[0] = conv_input_grad("ConvolutionBackwardInput", s[1], grads[0], Tensor(), g);
                     if (need_gy) r[1] = conv_forward(s[0], grads[0], with_bias ? grads[1] : Tensor(), g);
                     return r;
                   });
  return {gw, gb};
}

// {Bi(gy, w), Bw(x, gy), sum of gy (when with_bias)} in one kernel call, for a backward that
// builds no graph (create_graph=False): the kernel may share work between the two (kernels.h).
TensorList conv_backward(const Tensor& x, const Tensor& gy, const Tensor& w, bool with_bias, const Conv2dGeometry& g) {
  const DType dt = gy.dtype();
  const MemoryFormat f = image_format(x, dt, g);  // gx in the input's format, as PyTorch's
  Tensor gx = image_buffer({g.N, g.C, g.H, g.W}, dt, gy.device(), f);
  Tensor gw = new_empty({g.O, g.C / g.groups, g.kH, g.kW}, dt, gy.device());
  Tensor gb = with_bias ? new_empty({g.O}, dt, gy.device()) : Tensor();
  K().conv2d_backward.get(gy.device(), dt)(gx, gw, gb, operand(x, dt, f), operand(gy, dt, f), operand(w, dt), g);
  return {gx, gw, gb};
}

std::string size_str(const Tensor& t) { return shape_str(t.shape()); }

// How a convolution's errors describe it: by the name of the op called, and for conv1d (run as conv2d
// over a height of 1) with its own 3-D shapes and 1-D hyper-parameters, the unit height left out.
struct ConvNaming {
  const char* op;
  bool one_d = false;
  // t's shape as the caller passed it: a conv1d operand without the unit height (dim -2).
  std::string shape(const Tensor& t) const {
    Shape s = t.shape();
    if (one_d && s.size() >= 2) s.erase(s.end() - 2);
    return shape_str(s);
  }
  // A (height, width) hyper-parameter: "[h, w]", or conv1d's "w".
  std::string pair(Size2 v) const {
    return one_d ? std::to_string(v[1]) : "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "]";
  }
};
const ConvNaming kConv2dNaming{"conv2d"};

// Checks shared by conv2d, conv1d and conv_transpose2d: ranks, dtypes, devices, positive hyper-parameters.
void check_common(const ConvNaming& nm, const Tensor& x, const Tensor& w, const Tensor& b, Size2 stride, Size2 dilation,
                  int64_t groups) {
  const char* op = nm.op;
  check_defined(x, op, "input");
  check_defined(w, op, "weight");
  check_image_rank(op, x);
  MINIDL_CHECK(w.dim() == 4, op, "expected a 4-D weight, but got weight of size ", nm.shape(w));
  check_floating(op, x);
  check_same_device(op, x, w);
  MINIDL_CHECK(x.dtype() == w.dtype(), op, "input type (", dtype_name(x.dtype()), ") and weight type (", dtype_name(w.dtype()),
               ") should be the same");
  if (b.defined()) {
    check_same_device(op, x, b);
    MINIDL_CHECK(x.dtype() == b.dtype(), op, "input type (", dtype_name(x.dtype()), ") and bias type (", dtype_name(b.dtype()),
                 ") should be the same");
  }
  MINIDL_CHECK(stride[0] > 0 && stride[1] > 0, op, "non-positive stride is not supported, got stride ", nm.pair(stride));
  MINIDL_CHECK(dilation[0] > 0 && dilation[1] > 0, op, "dilation should be greater than zero, got dilation ", nm.pair(dilation));
  MINIDL_CHECK(groups > 0, op, "non-positive groups is not supported, got groups=", groups);
}

// conv2d (or conv1d, as nm says) on a validated 4-D input with top/left padding lo and bottom/right padding hi.
Tensor conv2d_impl(const ConvNaming& nm, const Tensor& x_in, const Tensor& w, const Tensor& b, Size2 stride, Size2 lo,
                   Size2 hi, Size2 dilation, int64_t groups) {
  const char* op = nm.op;
  check_common(nm, x_in, w, b, stride, dilation, groups);
  MINIDL_CHECK(lo[0] >= 0 && lo[1] >= 0 && hi[0] >= 0 && hi[1] >= 0, op, "negative padding is not supported, got padding ",
               nm.pair(lo));
  const bool batched = x_in.dim() == 4;
  Tensor x = batched ? x_in : x_in.unsqueeze(0);
  const int64_t O = w.size(0);
  MINIDL_CHECK(O % groups == 0, op, "given groups=", groups, ", expected weight to be divisible by ", groups,
               " at dimension 0, but got weight of size ", nm.shape(w), " instead");
  MINIDL_CHECK(x.size(1) == w.size(1) * groups, op, "given groups=", groups, ", weight of size ", nm.shape(w),
               ", expected input", nm.shape(x_in), " to have ", w.size(1) * groups, " channels, but got ", x.size(1),
               " channels instead");
  if (b.defined())
    MINIDL_CHECK(b.dim() == 1 && b.size(0) == O, op, "given weight of size ", nm.shape(w),
                 ", expected bias to be 1-dimensional with ", O, " elements, but got bias of size ", size_str(b),
                 " instead");
  Conv2dGeometry g;
  set_input_size(g, x);
  g.O = O;
  set_window(g, {w.size(2), w.size(3)}, stride, lo, dilation);
  g.groups = groups;
  const int64_t eff_h = g.dh * (g.kH - 1) + 1, eff_w = g.dw * (g.kW - 1) + 1;
  const int64_t padded_h = g.H + lo[0] + hi[0], padded_w = g.W + lo[1] + hi[1];
  MINIDL_CHECK(padded_h >= eff_h && padded_w >= eff_w, op, "calculated padded input size per channel: (",
               nm.one_d ? "" : std::to_string(padded_h) + " x ", padded_w, "). Kernel size: (",
               nm.one_d ? "" : std::to_string(eff_h) + " x ", eff_w, "). Kernel size can't be greater than actual input size");
  g.OH = (padded_h - eff_h) / g.sh + 1;
  g.OW = (padded_w - eff_w) / g.sw + 1;
  Tensor y = conv_forward(x, w, b, g);
  return batched ? y : y.squeeze(0);
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, Size2 stride, Size2 padding, Size2 dilation, int64_t groups) {
  amp::AutocastInputs in(kConv2d, {x, w, b});
  return conv2d_impl(kConv2dNaming, in[0], in[1], in[2], stride, padding, padding, dilation, groups);
}

namespace {
// conv1d is conv2d over a height of 1 (a 1-row kernel, stride/padding/dilation 1/0/1 in height):
// the same kernels, so it is exact and has every order of gradient that conv2d has. Its errors name
// conv1d and show its own shapes. `pad_lo`/`pad_hi` pad the start and the end of the length; x, w and
// b are past autocast.
void check_conv1d(const Tensor& x, const Tensor& w) {
  const char* op = "conv1d";
  check_defined(x, op, "input");
  check_defined(w, op, "weight");
  MINIDL_CHECK(x.dim() == 2 || x.dim() == 3, op, "expected 2-D (unbatched) or 3-D (batched) input, but got input of size ",
               size_str(x));
  MINIDL_CHECK(w.dim() == 3, op, "expected a 3-D weight [out, in/groups, k], but got weight of size ", size_str(w));
  check_floating(op, x);  // here, so that the message shows the input as passed, not with its unit height
}

Tensor conv1d_padded(const Tensor& x, const Tensor& w, const Tensor& b, int64_t stride, int64_t pad_lo, int64_t pad_hi,
                     int64_t dilation, int64_t groups) {
  check_conv1d(x, w);
  const ConvNaming naming{"conv1d", true};
  return conv2d_impl(naming, x.unsqueeze(-2), w.unsqueeze(2), b, {1, stride}, {0, pad_lo}, {0, pad_hi}, {1, dilation}, groups)
      .squeeze(-2);
}

// PyTorch's padding='same' split of the total padding d*(k-1): an odd total puts the extra row or
// column at the end.
std::pair<int64_t, int64_t> same_padding(int64_t dilation, int64_t kernel) {
  const int64_t total = dilation * (kernel - 1);
  return {total / 2, total - total / 2};
}
}  // namespace

Tensor conv1d(const Tensor& x_arg, const Tensor& w_arg, const Tensor& b_arg, int64_t stride, int64_t padding,
              int64_t dilation, int64_t groups) {
  amp::AutocastInputs in(kConv1d, {x_arg, w_arg, b_arg});
  return conv1d_padded(in[0], in[1], in[2], stride, padding, padding, dilation, groups);
}

Tensor conv1d(const Tensor& x_arg, const Tensor& w_arg, const Tensor& b_arg, int64_t stride, ConvPadding padding,
              int64_t dilation, int64_t groups) {
  amp::AutocastInputs in(kConv1d, {x_arg, w_arg, b_arg});
  const Tensor &x = in[0], &w = in[1], &b = in[2];
  if (padding == ConvPadding::Valid) return conv1d_padded(x, w, b, stride, 0, 0, dilation, groups);
  MINIDL_CHECK(stride == 1, "conv1d", "padding='same' is not supported for strided convolutions (got stride ", stride, ")");
  check_conv1d(x, w);
  const auto [lo, hi] = same_padding(dilation, w.size(2));
  return conv1d_padded(x, w, b, stride, lo, hi, dilation, groups);
}

Tensor conv2d(const Tensor& x_arg, const Tensor& w_arg, const Tensor& b_arg, Size2 stride, ConvPadding padding,
              Size2 dilation, int64_t groups) {
  amp::AutocastInputs in(kConv2d, {x_arg, w_arg, b_arg});
  const Tensor &x = in[0], &w = in[1], &b = in[2];
  if (padding == ConvPadding::Valid) return conv2d_impl(kConv2dNaming, x, w, b, stride, {0, 0}, {0, 0}, dilation, groups);
  MINIDL_CHECK(stride[0] == 1 && stride[1] == 1, "conv2d", "padding='same' is not supported for strided convolutions (got stride [",
               stride[0], ", ", stride[1], "])");
  check_defined(w, "conv2d", "weight");
  MINIDL_CHECK(w.dim() == 4, "conv2d", "expected a 4-D weight, but got weight of size ", size_str(w));
  Size2 lo, hi;
  for (int i = 0; i < 2; ++i) std::tie(lo[i], hi[i]) = same_padding(dilation[i], w.size(2 + i));
  return conv2d_impl(kConv2dNaming, x, w, b, stride, lo, hi, dilation, groups);
}

namespace {
// conv_transpose2d, or conv_transpose1d over a unit height (naming.one_d): the input gradient of
// the convolution whose output x is.
Tensor conv_transpose_impl(const ConvNaming& naming, const Tensor& x_in, const Tensor& w, const Tensor& b, Size2 stride,
                           Size2 padding, Size2 output_padding, int64_t groups, Size2 dilation) {
  const char* op = naming.op;
  check_common(naming, x_in, w, b, stride, dilation, groups);
  MINIDL_CHECK(padding[0] >= 0 && padding[1] >= 0, op, "negative padding is not supported, got padding ", naming.pair(padding));
  for (int i = 0; i < 2; ++i)
    MINIDL_CHECK(output_padding[i] >= 0 && (output_padding[i] < stride[i] || output_padding[i] < dilation[i]), op,
                 "output padding must be smaller than either stride or dilation, but got output_padding ",
                 naming.pair(output_padding), ", stride ", naming.pair(stride), ", dilation ", naming.pair(dilation));
  const bool batched = x_in.dim() == 4;
  Tensor x = batched ? x_in : x_in.unsqueeze(0);
  const int64_t Cin = w.size(0), Cout = w.size(1) * groups;
  MINIDL_CHECK(Cin % groups == 0, op, "given groups=", groups, ", expected weight to be divisible by ", groups,
               " at dimension 0, but got weight of size ", naming.shape(w), " instead");
  MINIDL_CHECK(x.size(1) == Cin, op, "given transposed=1, weight of size ", naming.shape(w), ", expected input", naming.shape(x_in),
               " to have ", Cin, " channels, but got ", x.size(1), " channels instead");
  if (b.defined())
    MINIDL_CHECK(b.dim() == 1 && b.size(0) == Cout, op, "given transposed=1, weight of size ", naming.shape(w),
                 ", expected bias to be 1-dimensional with ", Cout, " elements, but got bias of size ", size_str(b),
                 " instead");
  // In convolution terms: the transpose's output is the conv's input, x is the conv's output.
  Conv2dGeometry g;
  g.N = x.size(0);
  g.C = Cout;
  g.O = Cin;
  g.OH = x.size(2);
  g.OW = x.size(3);
  set_window(g, {w.size(2), w.size(3)}, stride, padding, dilation);
  g.groups = groups;
  g.H = (g.OH - 1) * g.sh - 2 * g.ph + g.dh * (g.kH - 1) + output_padding[0] + 1;
  g.W = (g.OW - 1) * g.sw - 2 * g.pw + g.dw * (g.kW - 1) + output_padding[1] + 1;
  MINIDL_CHECK(g.H > 0 && g.W > 0, op, "given input size per channel: (", g.OH, " x ", g.OW,
               "), calculated output size per channel: (", g.H, " x ", g.W, "). Output size is too small");
  Tensor y = conv_input_grad("ConvTranspose2dBackward", x, w, b, g);
  return batched ? y : y.squeeze(0);
}
}  // namespace

Tensor conv_transpose2d(const Tensor& x_arg, const Tensor& w_arg, const Tensor& b_arg, Size2 stride, Size2 padding,
                        Size2 output_padding, int64_t groups, Size2 dilation) {
  amp::AutocastInputs in(kConvTranspose2d, {x_arg, w_arg, b_arg});
  return conv_transpose_impl(ConvNaming{"conv_transpose2d"}, in[0], in[1], in[2], stride, padding, output_padding, groups,
                             dilation);
}

Tensor conv_transpose1d(const Tensor& x_arg, const Tensor& w_arg, const Tensor& b_arg, int64_t stride, int64_t padding,
                        int64_t output_padding, int64_t groups, int64_t dilation) {
  amp::AutocastInputs in(kConvTranspose1d, {x_arg, w_arg, b_arg});
  const Tensor &x = in[0], &w = in[1], &b = in[2];
  const char* op = "conv_transpose1d";
  check_defined(x, op, "input");
  check_defined(w, op, "weight");
  MINIDL_CHECK(x.dim() == 2 || x.dim() == 3, op, "expected 2-D (unbatched) or 3-D (batched) input, but got input of size ",
               size_str(x));
  MINIDL_CHECK(w.dim() == 3, op, "expected a 3-D weight [in, out/groups, k], but got weight of size ", size_str(w));
  check_floating(op, x);
  return conv_transpose_impl(ConvNaming{op, true}, x.unsqueeze(-2), w.unsqueeze(2), b, {1, stride}, {0, padding},
                             {0, output_padding}, groups, {1, dilation})
      .squeeze(-2);
}

}  // namespace minidl
