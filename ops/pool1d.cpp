// 1-D pooling (torch.nn.functional.max_pool1d, avg_pool1d, adaptive_avg_pool1d, adaptive_max_pool1d):
// the 2-D ops of ops/pool.cpp over a height of 1, so the same kernels, gradients (second order too)
// and autocast rows (the 2-D ops'); the arguments are checked here, in 1-D words, as PyTorch's.
#include "ops/common.h"
#include "ops/nn_ops.h"

namespace minidl {

using namespace ops_detail;

namespace {
// x [N, C, L] or [C, L] as [N, C, 1, L] or [C, 1, L].
Tensor as_image(const char* op, const Tensor& x) {
  check_defined(x, op, "input");
  MINIDL_CHECK(x.dim() == 2 || x.dim() == 3, op, "Expected 2 to 3 dimensions, but got ", x.dim(),
               "-dimensional tensor for argument #1 'self' (while checking arguments for ", op, ")");
  return x.unsqueeze(-2);
}

void check_window(const char* op, int64_t kernel, int64_t stride, int64_t padding) {
  MINIDL_CHECK(kernel > 0, op, "kernel_size must be greater than zero, but got ", kernel);
  MINIDL_CHECK(stride >= 0, op, "stride must be greater than zero, but got ", stride);
  MINIDL_CHECK(padding >= 0 && padding <= kernel / 2, op, "padding should be at most half of kernel size, but got padding=",
               padding, " and kernel_size=", kernel);
}

MaxPoolResult as_sequence(MaxPoolResult r) { return {r.values.squeeze(-2), r.indices.squeeze(-2)}; }
}  // namespace

MaxPoolResult max_pool1d_with_indices(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation,
                                      bool ceil_mode) {
  const char* op = "max_pool1d";
  const Tensor image = as_image(op, x);
  check_window(op, kernel, stride, padding);
  MINIDL_CHECK(dilation > 0, op, "dilation must be greater than zero, but got ", dilation);
  return as_sequence(max_pool2d_with_indices(image, {1, kernel}, {1, stride ? stride : kernel}, {0, padding}, {1, dilation},
                                             ceil_mode));
}

Tensor max_pool1d(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation, bool ceil_mode) {
  return max_pool1d_with_indices(x, kernel, stride, padding, dilation, ceil_mode).values;
}

Tensor avg_pool1d(const Tensor& x, int64_t kernel, int64_t stride, int64_t padding, bool ceil_mode, bool count_include_pad) {
  const char* op = "avg_pool1d";
  const Tensor image = as_image(op, x);
  check_window(op, kernel, stride, padding);
  return avg_pool2d(image, {1, kernel}, {1, stride ? stride : kernel}, {0, padding}, ceil_mode, count_include_pad)
      .squeeze(-2);
}

Tensor adaptive_avg_pool1d(const Tensor& x, int64_t output_size) {
  return adaptive_avg_pool2d(as_image("adaptive_avg_pool1d", x), {1, output_size}).squeeze(-2);
}

MaxPoolResult adaptive_max_pool1d_with_indices(const Tensor& x, int64_t output_size) {
  return as_sequence(adaptive_max_pool2d_with_indices(as_image("adaptive_max_pool1d", x), {1, output_size}));
}

Tensor adaptive_max_pool1d(const Tensor& x, int64_t output_size) {
  return adaptive_max_pool1d_with_indices(x, output_size).values;
}

}  // namespace minidl
