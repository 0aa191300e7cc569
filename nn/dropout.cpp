// The dropout layers.
#include "nn/dropout.h"

#include "framework/error.h"
#include "ops/ops.h"

namespace minidl::nn {

DropoutLayer::DropoutLayer(const char* name, Op op, const DropoutOptions& opts, Generator* gen)
    : options(opts), gen_(gen), name_(name), op_(op) {
  MINIDL_CHECK(opts.p_ >= 0.0 && opts.p_ <= 1.0, name, "dropout probability has to be between 0 and 1, but got ",
               opts.p_);
}

Tensor DropoutLayer::forward(const Tensor& input) {
  auto scope = forward_scope();
  return op_(input, options.p_, is_training(), gen_);
}

std::string DropoutLayer::describe() const { return detail::concat(name_, "(p=", options.p_, ")"); }

Dropout::Dropout(const DropoutOptions& opts, Generator* gen) : DropoutLayer("Dropout", dropout, opts, gen) {}
Dropout1d::Dropout1d(const DropoutOptions& opts, Generator* gen) : DropoutLayer("Dropout1d", dropout1d, opts, gen) {}
AlphaDropout::AlphaDropout(const DropoutOptions& opts, Generator* gen)
    : DropoutLayer("AlphaDropout", alpha_dropout, opts, gen) {}
FeatureAlphaDropout::FeatureAlphaDropout(const DropoutOptions& opts, Generator* gen)
    : DropoutLayer("FeatureAlphaDropout", feature_alpha_dropout, opts, gen) {}

}  // namespace minidl::nn
