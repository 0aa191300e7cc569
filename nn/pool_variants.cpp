// nn::LPPool2d, LPPool1d, MaxUnpool2d, MaxUnpool1d.
#include "nn/pool_variants.h"

#include <cmath>

#include "framework/error.h"
#include "nn/python_repr.h"
#include "ops/ops.h"

namespace minidl::nn {

using detail::python_bool;

namespace {
// A norm type as the user most likely wrote it: 2 for 2.0 (PyTorch prints what it was given).
std::string norm_repr(double p) { return p == std::floor(p) && std::fabs(p) < 1e15 ? std::to_string(static_cast<int64_t>(p)) : detail::python_float(p); }
std::string one_or_pair(Size2 v) { return v[0] == v[1] ? std::to_string(v[0]) : detail::concat("(", v[0], ", ", v[1], ")"); }
std::string pair(Size2 v) { return detail::concat("(", v[0], ", ", v[1], ")"); }
}  // namespace

LPPool2d::LPPool2d(double norm_type, Size2 kernel_size, Size2 stride, bool ceil_mode)
    : norm_type_(norm_type), kernel_(kernel_size), stride_(stride[0] ? stride : kernel_size), ceil_mode_(ceil_mode) {}

Tensor LPPool2d::forward(const Tensor& x) {
  auto scope = forward_scope();
  return lp_pool2d(x, norm_type_, kernel_, stride_, ceil_mode_);
}

std::string LPPool2d::describe() const {
  return detail::concat("LPPool2d(norm_type=", norm_repr(norm_type_), ", kernel_size=", one_or_pair(kernel_),
                        ", stride=", one_or_pair(stride_), ", ceil_mode=", python_bool(ceil_mode_), ")");
}

LPPool1d::LPPool1d(double norm_type, int64_t kernel_size, int64_t stride, bool ceil_mode)
    : norm_type_(norm_type), kernel_(kernel_size), stride_(stride), ceil_mode_(ceil_mode) {}

Tensor LPPool1d::forward(const Tensor& x) {
  auto scope = forward_scope();
  return lp_pool1d(x, norm_type_, kernel_, stride_, ceil_mode_);
}

std::string LPPool1d::describe() const {
  return detail::concat("LPPool1d(norm_type=", norm_repr(norm_type_), ", kernel_size=", kernel_,
                        ", stride=", stride_ ? std::to_string(stride_) : "None", ", ceil_mode=", python_bool(ceil_mode_), ")");
}

MaxUnpool2d::MaxUnpool2d(Size2 kernel_size, Size2 stride, Size2 padding)
    : kernel_(kernel_size), stride_(stride[0] ? stride : kernel_size), padding_(padding) {}

Tensor MaxUnpool2d::forward(const Tensor& x, const Tensor& indices, std::optional<Size2> output_size) {
  auto scope = forward_scope();
  return max_unpool2d(x, indices, kernel_, stride_, padding_, output_size);
}

std::string MaxUnpool2d::describe() const {
  return detail::concat("MaxUnpool2d(kernel_size=", pair(kernel_), ", stride=", pair(stride_), ", padding=", pair(padding_), ")");
}

MaxUnpool1d::MaxUnpool1d(int64_t kernel_size, int64_t stride, int64_t padding)
    : kernel_(kernel_size), stride_(stride ? stride : kernel_size), padding_(padding) {}

Tensor MaxUnpool1d::forward(const Tensor& x, const Tensor& indices, std::optional<int64_t> output_size) {
  auto scope = forward_scope();
  return max_unpool1d(x, indices, kernel_, stride_, padding_, output_size);
}

std::string MaxUnpool1d::describe() const {
  return detail::concat("MaxUnpool1d(kernel_size=(", kernel_, ",), stride=(", stride_, ",), padding=(", padding_, ",))");
}

}  // namespace minidl::nn
