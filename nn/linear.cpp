// nn::Linear.
#include "nn/linear.h"

#include <cmath>

#include "framework/error.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace minidl::nn {

Linear::Linear(const LinearOptions& opts, Generator* gen) : options(opts) {
  MINIDL_CHECK(opts.in_features_ >= 0 && opts.out_features_ >= 0, "Linear", "features must be non-negative, got ",
               opts.in_features_, " -> ", opts.out_features_);
  weight = register_parameter("weight", empty({opts.out_features_, opts.in_features_}));
  if (opts.bias_) bias = register_parameter("bias", empty({opts.out_features_}));
  reset_parameters(gen);
}

void Linear::reset_parameters(Generator* gen) {
  init::kaiming_uniform_(weight, std::sqrt(5.0), init::FanMode::FanIn, init::Nonlinearity::LeakyReLU, gen);
  if (bias.defined()) {
    const int64_t fan_in = options.in_features_;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound, gen);
  }
}

Tensor Linear::forward(const Tensor& input) {
  auto scope = forward_scope();
  return linear(input, weight, bias);
}

std::string Linear::describe() const {
  return detail::concat("Linear(", options.in_features_, " -> ", options.out_features_, options.bias_ ? ", bias)" : ", no bias)");
}

}  // namespace minidl::nn
