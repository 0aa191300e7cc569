// Convolution, pooling, batch norm and channel dropout: the CNN layer ops of the functional API
// (torch.nn.functional names and semantics). Included by ops/ops.h.
//   conv2d, conv_transpose2d (ops/conv.cpp): autocast LowerPrecision; first- and second-order
//     gradients for input, weight and bias.
//   max_pool2d, avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d (ops/pool.cpp): autocast None;
//   first and second order.
//   batch_norm, batch_norm_relu, batch_norm_add_relu (ops/batch_norm.cpp): autocast None; a low-precision input with f32
//     weight, bias and running stats computes its statistics in f32 and returns the input dtype.
//   batch_norm_synced (ops/batch_norm.cpp): a composite of differentiable ops run with autocast off,
//     in f32 (f64 for f64), returning the input dtype; differentiable to any order.
//   dropout2d (ops/batch_norm.cpp), dropout1d, alpha_dropout, feature_alpha_dropout
//     (ops/dropout_variants.cpp): autocast None.
//   pad (ops/pad.cpp): a composite of narrow, cat and index_select, so differentiable to any order;
//     autocast f32 on the CPU for reflect (1-2 dims) and replicate (1-3 dims), as PyTorch's lists.
//   interpolate (ops/interpolate.cpp): a composite of index_select, mul and add; autocast None.
//   grid_sample (ops/grid_sample.cpp): autocast f32 on both (PyTorch's lists); affine_grid: none of its
//     own (its matmul follows matmul's row, as PyTorch's bmm: bf16 theta products under CPU autocast).
//   lp_pool1d/2d, max_unpool1d/2d, local_response_norm: composites of the ops above (max_unpool
//     with its own backward, a gather); autocast None.
// Spatial arguments are {height, width} pairs. Inputs are [N, C, H, W] or unbatched [C, H, W].
#pragma once
#include <array>
#include <functional>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "framework/generator.h"
#include "ops/tensor.h"

namespace minidl {

using Size2 = std::array<int64_t, 2>;

// ---- convolution (ops/conv.cpp)
// x [N, C, H, W], weight [O, C/groups, kH, kW], bias [O] (optional) -> [N, O, OH, OW] with
// OH = (H + 2*padding[0] - dilation[0]*(kH-1) - 1) / stride[0] + 1 (likewise OW).
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), Size2 stride = {1, 1},
              Size2 padding = {0, 0}, Size2 dilation = {1, 1}, int64_t groups = 1);

// padding="valid" (no padding) or "same" (output size = input size; stride must be 1; an odd total
// padding puts the extra row/column at the bottom/right, as PyTorch).
enum class ConvPadding { Valid, Same };
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Size2 stride, ConvPadding padding,
              Size2 dilation = {1, 1}, int64_t groups = 1);

// x [N, Cin, H, W], weight [Cin, Cout/groups, kH, kW], bias [Cout] -> [N, Cout, OH, OW] with
// OH = (H-1)*stride[0] - 2*padding[0] + dilation[0]*(kH-1) + output_padding[0] + 1. The gradient of
// conv2d with respect to its input.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), Size2 stride = {1, 1},
                        Size2 padding = {0, 0}, Size2 output_padding = {0, 0}, int64_t groups = 1,
                        Size2 dilation = {1, 1});

// ---- pooling (ops/pool.cpp). stride {0, 0} means stride = kernel_size (PyTorch's default).
struct MaxPoolResult {
  Tensor values;
  Tensor indices;  // i64, flat index ih*W + iw into each input plane (PyTorch's convention)
};
Tensor max_pool2d(const Tensor& x, Size2 kernel_size, Size2 stride = {0, 0}, Size2 padding = {0, 0},
                  Size2 dilation = {1, 1}, bool ceil_mode = false);
MaxPoolResult max_pool2d_with_indices(const Tensor& x, Size2 kernel_size, Size2 stride = {0, 0},
                                      Size2 padding = {0, 0}, Size2 dilation = {1, 1}, bool ceil_mode = false);
// divisor_override (PyTorch's): when given, every window's sum is divided by it instead of the
// window's size (forward and backward); it must not be 0 (negative values are taken, as PyTorch).
Tensor avg_pool2d(const Tensor& x, Size2 kernel_size, Size2 stride = {0, 0}, Size2 padding = {0, 0},
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor adaptive_avg_pool2d(const Tensor& x, Size2 output_size);
// PyTorch's adaptive_max_pool2d(x, output_size, return_indices): window (oh, ow) spans rows
// floor(oh*H/OH) .. ceil((oh+1)*H/OH) and likewise columns; the first maximum wins, NaN propagates.
Tensor adaptive_max_pool2d(const Tensor& x, Size2 output_size);
MaxPoolResult adaptive_max_pool2d_with_indices(const Tensor& x, Size2 output_size);

// ---- 1-D pooling (ops/pool1d.cpp): x [N, C, L] or unbatched [C, L]; the 2-D ops over a height of
// 1 (the same kernels and gradients; the 2-D ops' autocast rows apply). stride 0 means the kernel
// size. An output length under 1 is an error (PyTorch 1.13 returns an empty tensor for max_pool1d and
// an output_size of 0).
Tensor max_pool1d(const Tensor& x, int64_t kernel_size, int64_t stride = 0, int64_t padding = 0, int64_t dilation = 1,
                  bool ceil_mode = false);
MaxPoolResult max_pool1d_with_indices(const Tensor& x, int64_t kernel_size, int64_t stride = 0, int64_t padding = 0,
                                      int64_t dilation = 1, bool ceil_mode = false);  // indices into L
Tensor avg_pool1d(const Tensor& x, int64_t kernel_size, int64_t stride = 0, int64_t padding = 0, bool ceil_mode = false,
                  bool count_include_pad = true);
Tensor adaptive_avg_pool1d(const Tensor& x, int64_t output_size);
Tensor adaptive_max_pool1d(const Tensor& x, int64_t output_size);
MaxPoolResult adaptive_max_pool1d_with_indices(const Tensor& x, int64_t output_size);

// torch.nn.functional.lp_pool2d / lp_pool1d (ops/lp_pool.cpp): the norm_type-norm of each window
// (no padding; stride {0, 0} / 0: the kernel size).
Tensor lp_pool2d(const Tensor& x, double norm_type, Size2 kernel_size, Size2 stride = {0, 0}, bool ceil_mode = false);
Tensor lp_pool1d(const Tensor& x, double norm_type, int64_t kernel_size, int64_t stride = 0, bool ceil_mode = false);
// torch.nn.functional.max_unpool2d / max_unpool1d (ops/max_unpool.cpp): x and indices (from
// max_pool*_with_indices) [N, C, H, W] or [C, H, W] (1-D: [N, C, L] or [C, L]); output size
// (H - 1) * stride - 2 * padding + kernel unless given; other positions 0.
Tensor max_unpool2d(const Tensor& x, const Tensor& indices, Size2 kernel_size, Size2 stride = {0, 0}, Size2 padding = {0, 0},
                    std::optional<Size2> output_size = std::nullopt);
Tensor max_unpool1d(const Tensor& x, const Tensor& indices, int64_t kernel_size, int64_t stride = 0, int64_t padding = 0,
                    std::optional<int64_t> output_size = std::nullopt);

// ---- sampling grids (ops/grid_sample.cpp), torch.nn.functional.affine_grid / grid_sample, 2-D.
enum class GridSampleMode { Bilinear, Nearest };
enum class GridPadding { Zeros, Border, Reflection };
// theta [N, 2, 3], size {N, C, H, W} -> grid [N, H, W, 2] of the (x, y) each output pixel reads.
Tensor affine_grid(const Tensor& theta, const Shape& size, bool align_corners = false);
// x [N, C, H, W] read at grid [N, Ho, Wo, 2] ((x, y) in [-1, 1]) -> [N, C, Ho, Wo]. PyTorch's
// defaults: bilinear, zeros, align_corners false. No bicubic mode and no 5-D volumes.
Tensor grid_sample(const Tensor& x, const Tensor& grid, GridSampleMode mode = GridSampleMode::Bilinear,
                   GridPadding padding = GridPadding::Zeros, bool align_corners = false);

// ---- sliding blocks (ops/fold.cpp), torch.nn.functional.unfold / fold
// unfold: x [N, C, H, W] (or [C, H, W]) -> [N, C * kH * kW, L], the blocks' values in (channel,
// kernel row, kernel column) order, L = OH * OW blocks in row-major order.
// fold: the adjoint, [N, C * kH * kW, L] (or unbatched 2-D) -> [N, C, output_size]: overlapping
// values are summed. Exact composites of slices, stacks and pads.
Tensor unfold(const Tensor& x, Size2 kernel_size, Size2 dilation = {1, 1}, Size2 padding = {0, 0}, Size2 stride = {1, 1});
Tensor fold(const Tensor& x, Size2 output_size, Size2 kernel_size, Size2 dilation = {1, 1}, Size2 padding = {0, 0},
            Size2 stride = {1, 1});

// ---- normalization (ops/batch_norm.cpp)
// x [N, C, ...] (2-D or more). training: normalize with the batch mean and biased variance and, when
// running stats are given, update them in place: running = (1 - momentum) * running + momentum *
// batch (unbiased variance). Eval: normalize with the running stats. weight/bias [C] optional.
// eps >= 0 (PyTorch's eps = 0 included: a training channel of variance 0 then has invstd 0, so its
// output is the bias and its input gradient 0, as PyTorch's; in eval, 1/sqrt(0) is inf as there).
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), bool training = false, double momentum = 0.1, double eps = 1e-5);
// torch.nn.functional.instance_norm: each (sample, channel) of x [N, C, *] normalized over its
// spatial elements (use_input_stats) or with the running statistics [C]; given running statistics
// are updated in place, with each sample's statistics averaged, as PyTorch's.
Tensor instance_norm(const Tensor& x, const Tensor& running_mean = Tensor(), const Tensor& running_var = Tensor(),
                     const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool use_input_stats = true,
                     double momentum = 0.1, double eps = 1e-5);
// relu(batch_norm(...)) as one op (not a torch.nn.functional name): the same output and running
// stats bit for bit, gradients to the last bits of their f32/f64 sums (bit for bit in f16/bf16), one
// autograd node (BatchNormReluBackward), and one pass fewer each way: the ReLU is applied as batch
// norm writes its output, and its mask is read as batch norm's backward reads gy.
Tensor batch_norm_relu(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = false,
                       double momentum = 0.1, double eps = 1e-5);
// relu(batch_norm(x, ...) + residual) as one op (a ResNet block's tail; not a torch.nn.functional
// name): residual has x's shape and dtype. The same running stats bit for bit; the output equals the
// composite's bit for bit in f32/f64 and is rounded once instead of three times in f16/bf16. One
// autograd node (BatchNormAddReluBackward) with gradients for x, weight, bias and residual.
Tensor batch_norm_add_relu(const Tensor& x, const Tensor& residual, const Tensor& running_mean, const Tensor& running_var,
                           const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = false,
                           double momentum = 0.1, double eps = 1e-5);

// batch_norm in training mode over a batch split across processes (PyTorch's SyncBatchNorm):
// `all_sum(t)` returns the elementwise sum of t over every process taking part, differentiably (its
// gradient is the sum of the processes' gradients: dist::all_reduce_sum), and the per-channel mean
// and biased variance are those of the global batch, in two passes (the mean, then the squared
// deviations from it). Given running statistics are updated with the global mean and the unbiased
// global variance. relu / residual as batch_norm_relu / batch_norm_add_relu. A composite of
// differentiable ops computed in f32 (f64 for an f64 input), autocast off inside; returns x's
// dtype. Every process must call it for the same channels in the same order.
using AllSum = std::function<Tensor(const Tensor&)>;
Tensor batch_norm_synced(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                         const Tensor& bias, double momentum, double eps, const AllSum& all_sum, bool relu = false,
                         const Tensor& residual = Tensor());

// torch.nn.functional.local_response_norm over channels (dim 1) of x [N, C, *] (3-D or more)
// (ops/local_response_norm.cpp).
Tensor local_response_norm(const Tensor& x, int64_t size, double alpha = 1e-4, double beta = 0.75, double k = 1.0);

// Zeroes whole channels with probability p and scales the rest by 1/(1-p) (training only).
// One mask value per (n, c) slice of x [N, C, H, W]; a 3-D x is read as [N, C, L], as PyTorch does
// (with its warning; it is not an unbatched [C, H, W]).
Tensor dropout2d(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr);
// torch.nn.functional.dropout1d: one keep/drop draw per (n, c) of x [N, C, L] (or [C, L]), kept
// channels scaled by 1/(1-p). (ops/dropout_variants.cpp)
Tensor dropout1d(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr);
// torch.nn.functional.alpha_dropout / feature_alpha_dropout (one draw per element / per (n, c)):
// dropout that keeps SELU's zero mean and unit variance (ops/dropout_variants.cpp).
Tensor alpha_dropout(const Tensor& x, double p = 0.5, bool training = false, Generator* gen = nullptr);
Tensor feature_alpha_dropout(const Tensor& x, double p = 0.5, bool training = false, Generator* gen = nullptr);

// ---- padding (ops/pad.cpp), torch.nn.functional.pad
// `pads` pairs (before, after) from the last dim backwards: {left, right, top, bottom, ...}.
// Constant: any rank, a negative pad crops, `value` fills (converted to x's dtype as fill_).
// Reflect (the edge not repeated), Replicate (the edge repeated) and Circular (wrapped around): the
// last 1, 2 or 3 dims of a batched or unbatched input (rank pads/2 + 1 or + 2); reflect's pads must
// be smaller than the dim, circular's at most the dim, replicate's dim not empty; `value` must be 0.
// A negative pad crops first, then the other side pads from the cropped tensor (as PyTorch, except
// that reflect checks its pad against the cropped size). Circular takes an unbatched input, as
// PyTorch 2.x (1.13 wants a batch).
enum class PadMode { Constant, Reflect, Replicate, Circular };
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, PadMode mode = PadMode::Constant, double value = 0.0);
PadMode pad_mode_from_string(const std::string& name);  // "constant", "reflect", "replicate", "circular"

// ---- resampling (ops/interpolate.cpp), torch.nn.functional.interpolate
// Nearest and NearestExact: [N, C, *] with 1 to 3 spatial dims; Linear: [N, C, L]; Bilinear and
// Bicubic: [N, C, H, W]; Trilinear: [N, C, D, H, W]; Area (adaptive average pooling): [N, C, L] or
// [N, C, H, W]. Give the output's
// spatial size or a scale factor per spatial dim (one value stands for every dim); the output size
// is then floor(in * factor), and unless recompute_scale_factor the source positions use 1 / factor,
// as PyTorch's. align_corners (linear and cubic modes only) defaults to false. Those modes of f16/bf16
// compute in f32 and round once. A composite of index_select, mul and add (area: pooling), so every
// gradient, second order included, comes from those ops. Autocast: on no list, as in PyTorch.
enum class InterpolateMode { Nearest, NearestExact, Linear, Bilinear, Trilinear, Bicubic, Area };
struct InterpolateOptions {
  std::vector<int64_t> size_;
  std::vector<double> scale_factor_;
  InterpolateMode mode_ = InterpolateMode::Nearest;
  std::optional<bool> align_corners_;
  bool recompute_scale_factor_ = false;

  InterpolateOptions& size(std::vector<int64_t> s) { size_ = std::move(s); return *this; }
  InterpolateOptions& scale_factor(std::vector<double> f) { scale_factor_ = std::move(f); return *this; }
  InterpolateOptions& mode(InterpolateMode m) { mode_ = m; return *this; }
  InterpolateOptions& align_corners(bool a) { align_corners_ = a; return *this; }
  InterpolateOptions& recompute_scale_factor(bool r) { recompute_scale_factor_ = r; return *this; }
};
Tensor interpolate(const Tensor& x, const InterpolateOptions& options);
// "nearest", "nearest-exact", "linear", "bilinear", "trilinear", "bicubic", "area"
InterpolateMode interpolate_mode_from_string(const std::string& name);
const char* interpolate_mode_name(InterpolateMode mode);

}  // namespace minidl
