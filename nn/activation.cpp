// Activation layers.
#include "nn/activation.h"

#include "framework/error.h"
#include "ops/ops.h"

namespace minidl::nn {

Tensor ReLU::forward(const Tensor& input) {
  auto scope = forward_scope();
  return relu(input);
}

Tensor LeakyReLU::forward(const Tensor& input) {
  auto scope = forward_scope();
  return leaky_relu(input, options.negative_slope_);
}
std::string LeakyReLU::describe() const { return detail::concat("LeakyReLU(negative_slope=", options.negative_slope_, ")"); }

GELU::GELU(const GELUOptions& opts) : options(opts) {
  MINIDL_CHECK(opts.approximate_ == "none" || opts.approximate_ == "tanh", "GELU", "approximate must be 'none' or 'tanh', got '",
               opts.approximate_, "'");
}
Tensor GELU::forward(const Tensor& input) {
  auto scope = forward_scope();
  return gelu(input, options.approximate_ == "tanh");
}
std::string GELU::describe() const { return "GELU(approximate='" + options.approximate_ + "')"; }

Tensor SiLU::forward(const Tensor& input) {
  auto scope = forward_scope();
  return silu(input);
}

Tensor ELU::forward(const Tensor& input) {
  auto scope = forward_scope();
  return elu(input, options.alpha_);
}
std::string ELU::describe() const { return detail::concat("ELU(alpha=", options.alpha_, ")"); }

Tensor Sigmoid::forward(const Tensor& input) {
  auto scope = forward_scope();
  return sigmoid(input);
}

Tensor Tanh::forward(const Tensor& input) {
  auto scope = forward_scope();
  return tanh(input);
}

Tensor Softmax::forward(const Tensor& input) {
  auto scope = forward_scope();
  return softmax(input, dim);
}
std::string Softmax::describe() const { return detail::concat("Softmax(dim=", dim, ")"); }

Tensor LogSoftmax::forward(const Tensor& input) {
  auto scope = forward_scope();
  return log_softmax(input, dim);
}
std::string LogSoftmax::describe() const { return detail::concat("LogSoftmax(dim=", dim, ")"); }

}  // namespace minidl::nn
