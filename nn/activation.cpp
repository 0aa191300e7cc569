// Activation layers.
#include "nn/activation.h"

#include "framework/error.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace minidl::nn {

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

Tensor ELU::forward(const Tensor& input) {
  auto scope = forward_scope();
  return elu(input, options.alpha_);
}
std::string ELU::describe() const { return detail::concat("ELU(alpha=", options.alpha_, ")"); }

Tensor Softplus::forward(const Tensor& input) {
  auto scope = forward_scope();
  return softplus(input, options.beta_, options.threshold_);
}
std::string Softplus::describe() const {
  return detail::concat("Softplus(beta=", options.beta_, ", threshold=", options.threshold_, ")");
}

Hardtanh::Hardtanh(double min_val, double max_val) : min_val(min_val), max_val(max_val) {
  MINIDL_CHECK(max_val > min_val, "Hardtanh", "max_val (", max_val, ") must be greater than min_val (", min_val, ")");
}
Tensor Hardtanh::forward(const Tensor& input) {
  auto scope = forward_scope();
  return hardtanh(input, min_val, max_val);
}
std::string Hardtanh::describe() const { return detail::concat("Hardtanh(min_val=", min_val, ", max_val=", max_val, ")"); }

PReLU::PReLU(int64_t num_parameters, double init_value) : num_parameters(num_parameters), init_value(init_value) {
  MINIDL_CHECK(num_parameters > 0, "PReLU", "num_parameters must be positive, got ", num_parameters);
  weight = register_parameter("weight", empty({num_parameters}));
  reset_parameters();
}
void PReLU::reset_parameters() { init::constant_(weight, init_value); }
Tensor PReLU::forward(const Tensor& input) {
  auto scope = forward_scope();
  return prelu(input, weight);
}
std::string PReLU::describe() const { return detail::concat("PReLU(num_parameters=", num_parameters, ")"); }

Tensor Softmax::forward(const Tensor& input) {
  auto scope = forward_scope();
  return softmax(input, dim);
}
std::string Softmax::describe() const { return detail::concat("Softmax(dim=", dim, ")"); }

Tensor LogSoftmax::forward(const Tensor& input) {
  auto scope = forward_scope();
  return log_softmax(input, dim);
}
Tensor Softmin::forward(const Tensor& input) {
  auto scope = forward_scope();
  return softmax(neg(input), dim);
}
std::string Softmin::describe() const { return detail::concat("Softmin(dim=", dim, ")"); }

Tensor Softmax2d::forward(const Tensor& input) {
  auto scope = forward_scope();
  MINIDL_CHECK(input.dim() == 3 || input.dim() == 4, "Softmax2d", "Softmax2d: expected input to be 3D or 4D, got ",
               input.dim(), "D instead");
  return softmax(input, -3);
}

std::string LogSoftmax::describe() const { return detail::concat("LogSoftmax(dim=", dim, ")"); }

}  // namespace minidl::nn
