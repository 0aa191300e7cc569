// Activation layers with options (nn/activation_more.h).
#include "nn/activation_more.h"

#include "framework/error.h"
#include "ops/ops.h"

namespace minidl::nn {

// The options are checked when the layer is built, as torch.nn's (its functional forms check at the call).
CELU::CELU(double alpha) : alpha(alpha) { MINIDL_CHECK(alpha != 0.0, "CELU", "ZeroDivisionError: alpha cannot be 0 for CELU"); }
Tensor CELU::forward(const Tensor& input) {
  auto scope = forward_scope();
  return celu(input, alpha);
}
std::string CELU::describe() const { return detail::concat("CELU(alpha=", alpha, ")"); }

Softshrink::Softshrink(double lambd) : lambd(lambd) {
  MINIDL_CHECK(lambd >= 0, "Softshrink", "lambda must be greater or equal to 0, but found to be ", lambd, ".");
}
Tensor Softshrink::forward(const Tensor& input) {
  auto scope = forward_scope();
  return softshrink(input, lambd);
}
std::string Softshrink::describe() const { return detail::concat("Softshrink(", lambd, ")"); }

Tensor Hardshrink::forward(const Tensor& input) {
  auto scope = forward_scope();
  return hardshrink(input, lambd);
}
std::string Hardshrink::describe() const { return detail::concat("Hardshrink(", lambd, ")"); }

Tensor Threshold::forward(const Tensor& input) {
  auto scope = forward_scope();
  return minidl::threshold(input, threshold, value);
}
std::string Threshold::describe() const { return detail::concat("Threshold(threshold=", threshold, ", value=", value, ")"); }

Tensor GLU::forward(const Tensor& input) {
  auto scope = forward_scope();
  return glu(input, dim);
}
std::string GLU::describe() const { return detail::concat("GLU(dim=", dim, ")"); }

}  // namespace minidl::nn
