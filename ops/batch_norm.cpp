// Batch normalization (torch.nn.functional.batch_norm) and channel dropout (dropout2d), the
// per-channel layers of a CNN. Autocast policy: None; batch_norm takes a low-precision input with
// f32 weight, bias and running stats, computes the statistics in f32 and returns the input dtype
// (PyTorch's CPU/CUDA behaviour under autocast).
//
// batch_norm runs three fused kernels: statistics (one pass), normalize (one pass) and, backward,
// sum(dy) and sum(dy*xhat) (one pass) followed by the closed form
//   dx = (w*invstd/M) * (M*dy - sum(dy) - xhat*sum(dy*xhat))   (one pass).
// When the backward itself is being recorded (create_graph), the same formula is written in
// differentiable ops, with the statistics recomputed from x, so second derivatives are exact too.
//
// batch_norm_relu is relu(batch_norm(...)) with the ReLU inside those kernels: the normalize pass
// clamps before it rounds (the same value: rounding keeps the sign), and the backward reads the
// output alongside gy and zeroes gy where the output is <= 0 (ReluBackward's rule, NaN kept).
// batch_norm_add_relu is relu(batch_norm(x) + residual), a ResNet block's tail: the normalize pass
// also reads the residual (one pass instead of three); its backward masks gy once into the
// residual's gradient, which batch norm's backward then reads as its gy.
#include <atomic>

#include "ops/common.h"
#include "ops/nn_ops.h"
#include "framework/warning.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;

// Autocast policies of this family (the policy table is built from these rows).
namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kBatchNorm{"batch_norm", P::None, P::None};
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::batch_norm_policies() { return {&kBatchNorm}; }

namespace {

DType compute_dtype(const Tensor& x) { return x.dtype() == DType::F64 ? DType::F64 : DType::F32; }

// [1, C, 1, ...] for broadcasting a per-channel vector against x.
Shape channel_shape(const Tensor& x) {
  Shape s(x.dim(), 1);
  s[1] = x.size(1);
  return s;
}

std::vector<int64_t> reduce_dims(const Tensor& x) {
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  return dims;
}

void check_channel_vector(const Tensor& t, const char* name, const Tensor& x) {
  if (!t.defined()) return;
  check_same_device("batch_norm", x, t);
  check_floating("batch_norm", t);
  MINIDL_CHECK(t.dim() == 1 && t.size(0) == x.size(1), "batch_norm", name, " should contain ", x.size(1),
               " elements (one per channel of input ", x.meta_str(), "), got ", t.meta_str());
}

// 1/sqrt(var + eps) of batch statistics, as PyTorch's InvStd: 0 where var + eps is 0 (eps 0 and a
// constant channel), so that channel's output is its bias and its input gradient 0 instead of
// 0 * inf. Differentiable (the composite backward uses it), with a zero gradient at those channels.
Tensor batch_invstd(const Tensor& var, double eps) {
  if (eps > 0) return rsqrt(add(var, eps));
  const Tensor zero = eq(var, 0.0);
  return where(zero, zeros_like(var), rsqrt(where(zero, ones_like(var), var)));
}

// The backward as differentiable ops (used under create_graph).
TensorList composite_backward(const Tensor& gy, const Tensor& x, const Tensor& w, const Tensor& saved_mean,
                              const Tensor& saved_invstd, bool training, double eps) {
  const DType cd = compute_dtype(x);
  const Shape cs = channel_shape(x);
  const std::vector<int64_t> dims = reduce_dims(x);
  const double M = static_cast<double>(x.numel() / x.size(1));
  Tensor xc = cast(x, cd), gyc = cast(gy, cd);
  Tensor mu, inv;
  if (training) {
    mu = mean(xc, dims, true);
    Tensor xm = sub(xc, mu);
    inv = batch_invstd(mean(mul(xm, xm), dims, true), eps);
  } else {
    mu = saved_mean.reshape(cs);
    inv = saved_invstd.reshape(cs);
  }
  Tensor xhat = mul(sub(xc, mu), inv);
  Tensor sdy = sum(gyc, dims, true);
  Tensor sdx = sum(mul(gyc, xhat), dims, true);
  Tensor scale = w.defined() ? mul(cast(w, cd).reshape(cs), inv) : inv;
  Tensor gx = training ? mul(scale, sub(sub(gyc, div(sdy, M)), mul(xhat, div(sdx, M)))) : mul(gyc, scale);
  return {gx, sdx.reshape({x.size(1)}), sdy.reshape({x.size(1)})};
}

}  // namespace

namespace {
// The layout the kernels see x in: a channels-last image batch on the CPU stays so (its rows of
// channels are the kernels' [M, C] case, S == 1); anything else is made NCHW-contiguous.
MemoryFormat kernel_format(const Tensor& x) {
  return x.device().is_cpu() ? x.suggest_memory_format() : MemoryFormat::Contiguous;
}

// The kernels' view of a tensor dense in format f: itself for NCHW ([N, C, S] planes), the
// [N*H*W, C] rows of channels for channels-last. No graph: the kernels' operands are detached.
Tensor kernel_view(const Tensor& t, MemoryFormat f) {
  if (f != MemoryFormat::ChannelsLast) return t;
  const int64_t C = t.size(1);
  return make_view(t, {C > 0 ? t.numel() / C : 0, C}, {C, 1}, t.offset());
}

// Training on an empty batch (N = 0 or an empty spatial size): PyTorch returns input * weight[0] +
// bias[0], connected to the graph (the parameters get zero gradients), and leaves the running
// statistics alone.
Tensor empty_batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& residual, bool relu) {
  Tensor out = mul(x, 1.0);
  if (weight.defined() && weight.numel() > 0) out = mul(out, cast(weight.narrow(0, 0, 1), x.dtype()));
  if (bias.defined() && bias.numel() > 0) out = add(out, cast(bias.narrow(0, 0, 1), x.dtype()));
  if (residual.defined()) out = add(out, residual);
  return relu || residual.defined() ? minidl::relu(out) : out;
}

// The arguments every batch-norm op takes, checked alike.
void check_batch_norm_args(const char* op, const Tensor& x, const Tensor& residual, const Tensor& running_mean,
                           const Tensor& running_var, const Tensor& weight, const Tensor& bias, double eps) {
  check_defined(x, op, "input");
  MINIDL_CHECK(x.dim() >= 2, op, "expected input with at least 2 dims [N, C, ...], got ", x.meta_str());
  check_floating(op, x);
  check_channel_vector(weight, "weight", x);
  check_channel_vector(bias, "bias", x);
  check_channel_vector(running_mean, "running_mean", x);
  check_channel_vector(running_var, "running_var", x);
  MINIDL_CHECK(running_mean.defined() == running_var.defined(), op,
               "running_mean and running_var must both be given or both be undefined");
  MINIDL_CHECK(eps >= 0, op, "eps must be non-negative, got ", eps);
  if (!residual.defined()) return;
  check_same_device(op, x, residual);
  MINIDL_CHECK(residual.shape() == x.shape() && residual.dtype() == x.dtype(), op,
               "the residual must have the input's shape and dtype (it is added to the normalized input), got input ",
               x.meta_str(), " and residual ", residual.meta_str());
}

// relu(batch_norm(x) + residual) when residual is defined (batch_norm_add_relu), relu(batch_norm(x))
// when relu, else batch_norm(x).
Tensor batch_norm_impl(const char* op, bool relu, const Tensor& x_arg, const Tensor& residual_arg,
                       const Tensor& running_mean, const Tensor& running_var, const Tensor& weight_arg,
                       const Tensor& bias_arg, bool training, double momentum, double eps) {
  amp::AutocastInputs in(kBatchNorm, {x_arg, weight_arg, bias_arg, residual_arg});
  const Tensor &x_in = in[0], &weight = in[1], &bias = in[2], &residual_in = in[3];
  check_batch_norm_args(op, x_in, residual_in, running_mean, running_var, weight, bias, eps);
  const bool has_residual = residual_in.defined();
  if (training && x_in.numel() == 0) return empty_batch_norm(x_in, weight, bias, residual_in, relu);
  const int64_t C = x_in.size(1);
  const int64_t M = C > 0 ? x_in.numel() / C : 0;
  const DType cd = compute_dtype(x_in);
  const Device dev = x_in.device();
  const MemoryFormat fmt = kernel_format(x_in);
  Tensor x = x_in.detach().contiguous(fmt);
  Tensor mean_c, invstd;
  {
    NoGradGuard ng;
    if (training) {
      MINIDL_CHECK(M > 1, op, "expected more than 1 value per channel when training, got input size ",
                   shape_str(x_in.shape()));
      mean_c = new_empty({C}, cd, dev);
      Tensor var_c = new_empty({C}, cd, dev);
      K().batch_norm_stats.get(dev, x.dtype())(mean_c, var_c, kernel_view(x, fmt));
      invstd = batch_invstd(var_c, eps);
      if (running_mean.defined()) {
        // running = (1 - m) * running + m * batch, with the unbiased variance; in place, new version.
        running_mean.mul_(1.0 - momentum);
        running_mean.add_(mean_c, momentum);
        running_var.mul_(1.0 - momentum);
        running_var.add_(var_c, momentum * static_cast<double>(M) / static_cast<double>(M - 1));
      }
    } else {
      MINIDL_CHECK(running_mean.defined(), op, "running_mean and running_var must be defined in evaluation mode");
      mean_c = cast(running_mean.detach(), cd).clone();  // a copy: later running updates must not touch it
      invstd = rsqrt(add(cast(running_var.detach(), cd), eps));
    }
  }
  Tensor scale, shift;
  {
    NoGradGuard ng;
    scale = weight.defined() ? mul(cast(weight.detach(), cd), invstd) : invstd;
    shift = mul(mean_c, scale).mul_(-1.0);
    if (bias.defined()) shift = add(shift, cast(bias.detach(), cd));
    scale = scale.contiguous();
    shift = shift.contiguous();
  }
  Tensor y = empty(x.shape(), TensorOptions(x.dtype()).device(dev).memory_format(fmt));
  const Tensor residual = has_residual ? residual_in.detach().contiguous(fmt) : Tensor();
  K().batch_norm_apply.get(dev, x.dtype())(kernel_view(y, fmt), kernel_view(x, fmt), scale, shift, relu,
                                           has_residual ? kernel_view(residual, fmt) : residual);
  const bool need_x = x_in.requires_grad(), need_w = weight.defined() && weight.requires_grad(),
             need_b = bias.defined() && bias.requires_grad(), need_r = has_residual && residual_in.requires_grad();
  std::vector<autograd::Saved> saved{x_in, weight, mean_c, invstd};
  if (relu) saved.push_back(autograd::output(y));  // the ReLU's mask
  autograd::record(
      has_residual ? "BatchNormAddReluBackward" : relu ? "BatchNormReluBackward" : "NativeBatchNormBackward",
      {x_in, weight, bias, residual_in}, {y}, saved,
      [training, eps, need_x, need_w, need_b, need_r, relu, has_residual](const TensorList& grads, const TensorList& s) {
        const Tensor &xs = s[0], &w = s[1], &mu = s[2], &inv = s[3];
        const Tensor relu_out = relu ? s[4] : Tensor();
        TensorList r(4);
        if (GradMode::is_enabled()) {  // create_graph: differentiable form
          // ReluBackward's rule as ops: the mask is a constant, as in relu's own double backward.
          const Tensor g = relu ? where(le(relu_out.detach(), 0.0), zeros_like(grads[0]), grads[0]) : grads[0];
          TensorList c = composite_backward(g, xs, w, mu, inv, training, eps);
          if (need_x) r[0] = c[0];
          if (need_w) r[1] = c[1];
          if (need_b) r[2] = c[2];
          if (need_r) r[3] = g;
          return r;
        }
        const DType cdt = compute_dtype(xs);
        const Device d = xs.device();
        const MemoryFormat f = kernel_format(xs);
        Tensor xk = xs.detach().contiguous(f);
        Tensor gy = grads[0].detach();
        if (has_residual) {
          // The residual's gradient is gy through the ReLU's mask; batch norm's backward then reads
          // it unmasked (one pass writes it, none re-reads the mask).
          const Tensor out = relu_out.detach();
          Tensor masked = new_empty_like(out.shape(), out.dtype(), d, {&out});
          K().binary.get(d, out.dtype())(kernels::BinaryOp::ReluBackward, masked,
                                          gy.dtype() == out.dtype() ? gy : cast(gy, out.dtype()), out, 0, 0);
          if (need_r) r[3] = masked;
          gy = masked;
        }
        if (gy.dtype() != xk.dtype()) gy = cast(gy, xk.dtype());
        gy = gy.contiguous(f);
        Tensor scale = w.defined() ? mul(cast(w.detach(), cdt), inv).contiguous() : inv;
        Tensor sum_dy = new_empty({xs.size(1)}, cdt, d), sum_dy_xhat = new_empty({xs.size(1)}, cdt, d);
        Tensor gx = need_x ? empty(xs.shape(), TensorOptions(xs.dtype()).device(d).memory_format(f)) : Tensor();
        const bool masked_here = relu && !has_residual;
        const Tensor mask = masked_here ? relu_out.detach().contiguous(f) : Tensor();
        K().batch_norm_backward.get(d, xk.dtype())(gx.defined() ? kernel_view(gx, f) : gx, sum_dy, sum_dy_xhat,
                                                   kernel_view(gy, f), kernel_view(xk, f), mu, inv, scale, training,
                                                   masked_here ? kernel_view(mask, f) : mask);
        r[0] = gx;
        if (need_w) r[1] = sum_dy_xhat;
        if (need_b) r[2] = sum_dy;
        return r;
      });
  return y;
}
}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  return batch_norm_impl("batch_norm", false, x, Tensor(), running_mean, running_var, weight, bias, training, momentum, eps);
}

Tensor batch_norm_relu(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                       const Tensor& bias, bool training, double momentum, double eps) {
  return batch_norm_impl("batch_norm_relu", true, x, Tensor(), running_mean, running_var, weight, bias, training, momentum,
                         eps);
}

Tensor batch_norm_add_relu(const Tensor& x, const Tensor& residual, const Tensor& running_mean, const Tensor& running_var,
                           const Tensor& weight, const Tensor& bias, bool training, double momentum, double eps) {
  check_defined(residual, "batch_norm_add_relu", "residual");
  return batch_norm_impl("batch_norm_add_relu", true, x, residual, running_mean, running_var, weight, bias, training,
                         momentum, eps);
}

Tensor batch_norm_synced(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                         const Tensor& bias, double momentum, double eps, const AllSum& all_sum, bool relu,
                         const Tensor& residual) {
  const char* op = "batch_norm_synced";
  check_batch_norm_args(op, x, residual, running_mean, running_var, weight, bias, eps);
  MINIDL_CHECK(all_sum != nullptr, op, "no all_sum function was given");
  amp::AutocastDisabled no_autocast;
  const DType compute = x.dtype() == DType::F64 ? DType::F64 : DType::F32;
  const int64_t C = x.size(1);
  std::vector<int64_t> reduce_dims{0}, channel_shape(static_cast<size_t>(x.dim()), 1);
  for (int64_t d = 2; d < x.dim(); ++d) reduce_dims.push_back(d);
  channel_shape[1] = C;
  const Tensor xc = cast(x, compute);
  // The local sums and the local count in one collective; the count is the last element.
  const double local_count = static_cast<double>(C > 0 ? x.numel() / C : 0);
  const Tensor sums = all_sum(cat({sum(xc, reduce_dims), full({1}, local_count, TensorOptions(compute).device(x.device()))}));
  const double count = sums.narrow(0, C, 1).item();
  MINIDL_CHECK(count > 1, op, "expected more than 1 value per channel when training, got ", count,
               " over all processes for input size ", shape_str(x.shape()));
  const Tensor mean_c = div(sums.narrow(0, 0, C), count);
  const Tensor centered = sub(xc, mean_c.view(channel_shape));
  const Tensor var_c = div(all_sum(sum(mul(centered, centered), reduce_dims)), count);
  Tensor y = mul(centered, rsqrt(add(var_c, eps)).view(channel_shape));
  if (weight.defined()) y = mul(y, cast(weight, compute).view(channel_shape));
  if (bias.defined()) y = add(y, cast(bias, compute).view(channel_shape));
  y = cast(y, x.dtype());
  if (residual.defined()) y = add(y, residual);
  if (relu || residual.defined()) y = minidl::relu(y);
  if (running_mean.defined()) {
    NoGradGuard no_grad;
    running_mean.mul_(1.0 - momentum).add_(cast(mean_c.detach(), running_mean.dtype()), momentum);
    running_var.mul_(1.0 - momentum).add_(cast(var_c.detach(), running_var.dtype()), momentum * count / (count - 1));
  }
  return y;
}

// Channel dropout (torch.nn.functional.dropout2d): one keep/drop draw per (n, c) slice from the
// Philox stream, kept slices scaled by 1/(1-p); the mask [N, C, 1, ...] broadcasts through mul.
// As PyTorch (1.13 and 2.x), a 3-D input is read as (N, C, L), channel-wise 1-D dropout, not as an
// unbatched (C, H, W); other ranks from 2 up are dropped per (d0, d1) too; both with its warnings.
Tensor dropout2d(const Tensor& x, double p, bool training, Generator* gen) {
  const char* op = "dropout2d";
  check_defined(x, op, "input");
  MINIDL_CHECK(p >= 0.0 && p <= 1.0, op, "dropout probability has to be between 0 and 1, but got ", p);
  MINIDL_CHECK(x.dim() >= 2, op, "expected a batched input with channels ([N, C, H, W]), but got input of size ",
               shape_str(x.shape()));
  // Once per process each, as Python shows a warning once per call site.
  static std::atomic<bool> warned_rank{false}, warned_3d{false};
  if (x.dim() != 3 && x.dim() != 4 && !warned_rank.exchange(true))
    warn("dropout2d: received a " + std::to_string(x.dim()) +
         "-D input, which is deprecated and will result in an error in a future release. To retain the behavior "
         "and silence this warning, please use dropout instead. Note that dropout2d exists to provide channel-wise "
         "dropout on inputs with 2 spatial dimensions, a channel dimension, and an optional batch dimension "
         "(i.e. 3D or 4D inputs).");
  if (x.dim() == 3 && !warned_3d.exchange(true))
    warn("dropout2d: received a 3-D input and assuming that channel-wise 1-D dropout behavior is desired - input "
         "is interpreted as shape (N, C, L), where C is the channel dim. To maintain the 1-D channel-wise dropout "
         "behavior, please switch to using dropout1d instead.");
  if (!training || p == 0.0) return x;
  check_floating(op, x);
  if (p == 1.0) return mul(x, 0.0);
  return mul(x, random_keep_mask(feature_mask_shape(x), x, p, 1.0 / (1.0 - p), gen));
}

}  // namespace minidl
