// nn::Linear and nn::Bilinear.
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

Bilinear::Bilinear(int64_t in1, int64_t in2, int64_t out, bool with_bias, Generator* gen)
    : in1_features(in1), in2_features(in2), out_features(out) {
  MINIDL_CHECK(in1 >= 0 && in2 >= 0 && out >= 0, "Bilinear", "features must be non-negative, got ", in1, ", ", in2,
               " and ", out);
  weight = register_parameter("weight", empty({out, in1, in2}));
  if (with_bias) bias = register_parameter("bias", empty({out}));
  reset_parameters(gen);
}

void Bilinear::reset_parameters(Generator* gen) {
  const double bound = in1_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in1_features)) : 0.0;
  init::uniform_(weight, -bound, bound, gen);
  if (bias.defined()) init::uniform_(bias, -bound, bound, gen);
}

Tensor Bilinear::forward(const Tensor& x1, const Tensor& x2) {
  auto scope = forward_scope();
  return bilinear(x1, x2, weight, bias);
}

std::string Bilinear::describe() const {
  return detail::concat("Bilinear(in1_features=", in1_features, ", in2_features=", in2_features, ", out_features=",
                        out_features, ", bias=", bias.defined() ? "True" : "False", ")");
}

}  // namespace minidl::nn
