// nn::Dropout.
#include "nn/dropout.h"

#include "framework/error.h"
#include "ops/ops.h"

namespace minidl::nn {

Dropout::Dropout(const DropoutOptions& opts, Generator* gen) : options(opts), gen_(gen) {
  MINIDL_CHECK(opts.p_ >= 0.0 && opts.p_ <= 1.0, "Dropout", "dropout probability has to be between 0 and 1, but got ",
               opts.p_);
}

Tensor Dropout::forward(const Tensor& input) {
  auto scope = forward_scope();
  return dropout(input, options.p_, is_training(), gen_);
}

std::string Dropout::describe() const { return detail::concat("Dropout(p=", options.p_, ")"); }

}  // namespace minidl::nn
