// nn::Unfold and nn::Fold.
#include "nn/sliding_blocks.h"

#include "framework/error.h"

namespace minidl::nn {

namespace {
// torch's repr of a size argument given as an int (both equal) or a pair.
std::string size_repr(Size2 v) {
  return v[0] == v[1] ? detail::concat(v[0]) : detail::concat("(", v[0], ", ", v[1], ")");
}
std::string window_repr(Size2 kernel, Size2 dilation, Size2 padding, Size2 stride) {
  return detail::concat("kernel_size=", size_repr(kernel), ", dilation=", size_repr(dilation), ", padding=",
                        size_repr(padding), ", stride=", size_repr(stride));
}
}  // namespace

Tensor Unfold::forward(const Tensor& x) {
  auto scope = forward_scope();
  return unfold(x, kernel_size, dilation, padding, stride);
}
std::string Unfold::describe() const { return "Unfold(" + window_repr(kernel_size, dilation, padding, stride) + ")"; }

Tensor Fold::forward(const Tensor& x) {
  auto scope = forward_scope();
  return fold(x, output_size, kernel_size, dilation, padding, stride);
}
std::string Fold::describe() const {
  return "Fold(output_size=" + size_repr(output_size) + ", " + window_repr(kernel_size, dilation, padding, stride) + ")";
}

}  // namespace minidl::nn
