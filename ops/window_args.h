// Arguments shared by the sliding-window ops (conv2d, conv_transpose2d and the pools): the input's
// rank check and the sizes and window they write into a kernels::Conv2dGeometry or Pool2dGeometry.
#pragma once
#include "ops/common.h"

namespace minidl::ops_detail {

inline void check_image_rank(const char* op, const Tensor& x) {
  MINIDL_CHECK(x.dim() == 3 || x.dim() == 4, op, "expected 3-D (unbatched) or 4-D (batched) input, but got input of size ",
               shape_str(x.shape()));
}

// N, C, H, W of a 4-D input.
template <class Geometry>
void set_input_size(Geometry& g, const Tensor& x) {
  g.N = x.size(0);
  g.C = x.size(1);
  g.H = x.size(2);
  g.W = x.size(3);
}

// Kernel size, stride, top/left padding and dilation.
template <class Geometry>
void set_window(Geometry& g, Size2 kernel, Size2 stride, Size2 padding, Size2 dilation) {
  g.kH = kernel[0];
  g.kW = kernel[1];
  g.sh = stride[0];
  g.sw = stride[1];
  g.ph = padding[0];
  g.pw = padding[1];
  g.dh = dilation[0];
  g.dw = dilation[1];
}

}  // namespace minidl::ops_detail
