// nn::ChannelShuffle and nn::LocalResponseNorm.
#include "nn/channel_layers.h"

#include "framework/error.h"
#include "nn/python_repr.h"
#include "ops/ops.h"

namespace minidl::nn {

using detail::python_float;

ChannelShuffle::ChannelShuffle(int64_t groups) : groups_(groups) {
  MINIDL_CHECK(groups > 0, "ChannelShuffle", "Number of groups to divide channels in must be positive. Value of groups:", groups);
}

Tensor ChannelShuffle::forward(const Tensor& x) {
  auto scope = forward_scope();
  return channel_shuffle(x, groups_);
}

std::string ChannelShuffle::describe() const { return detail::concat("ChannelShuffle(groups=", groups_, ")"); }

LocalResponseNorm::LocalResponseNorm(int64_t size, double alpha, double beta, double k)
    : size_(size), alpha_(alpha), beta_(beta), k_(k) {
  MINIDL_CHECK(size > 0, "LocalResponseNorm", "size must be positive, got ", size);
}

Tensor LocalResponseNorm::forward(const Tensor& x) {
  auto scope = forward_scope();
  return local_response_norm(x, size_, alpha_, beta_, k_);
}

std::string LocalResponseNorm::describe() const {
  return detail::concat("LocalResponseNorm(", size_, ", alpha=", python_float(alpha_), ", beta=", python_float(beta_),
                        ", k=", python_float(k_), ")");
}

}  // namespace minidl::nn
