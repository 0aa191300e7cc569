// Flatten.
#include "nn/shape_layers.h"

#include "framework/error.h"

namespace minidl::nn {

Tensor Flatten::forward(const Tensor& input) {
  auto scope = forward_scope();
  return input.flatten(options.start_dim_, options.end_dim_);
}

std::string Flatten::describe() const {
  return detail::concat("Flatten(start_dim=", options.start_dim_, ", end_dim=", options.end_dim_, ")");
}

}  // namespace minidl::nn
