// nn::MaxPool1d, AvgPool1d, AdaptiveAvgPool1d, AdaptiveMaxPool1d.
#include "nn/pool1d.h"

#include "framework/error.h"
#include "nn/python_repr.h"
#include "ops/ops.h"

namespace minidl::nn {

using detail::python_bool;

Tensor MaxPool1d::forward(const Tensor& x) {
  auto scope = forward_scope();
  return max_pool1d(x, kernel_, stride_, padding_, dilation_, ceil_mode_);
}

std::string MaxPool1d::describe() const {
  return detail::concat("MaxPool1d(kernel_size=", kernel_, ", stride=", stride_, ", padding=", padding_, ", dilation=",
                        dilation_, ", ceil_mode=", python_bool(ceil_mode_), ")");
}

Tensor AvgPool1d::forward(const Tensor& x) {
  auto scope = forward_scope();
  return avg_pool1d(x, kernel_, stride_, padding_, ceil_mode_, count_include_pad_);
}

std::string AvgPool1d::describe() const {
  // torch's extra_repr shows the sizes as 1-tuples and leaves ceil_mode and count_include_pad out.
  return detail::concat("AvgPool1d(kernel_size=(", kernel_, ",), stride=(", stride_, ",), padding=(", padding_, ",))");
}

template <bool IsMax>
Tensor AdaptivePool1d<IsMax>::forward(const Tensor& x) {
  auto scope = forward_scope();
  return IsMax ? adaptive_max_pool1d(x, out_) : adaptive_avg_pool1d(x, out_);
}

template <bool IsMax>
std::string AdaptivePool1d<IsMax>::describe() const {
  return detail::concat(type_name(), "(output_size=", out_, ")");
}

template class AdaptivePool1d<false>;
template class AdaptivePool1d<true>;

}  // namespace minidl::nn
