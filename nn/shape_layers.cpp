// Flatten and Unflatten.
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

Unflatten::Unflatten(int64_t dim, Shape sizes) : dim(dim), sizes(std::move(sizes)) {
  MINIDL_CHECK(!this->sizes.empty(), "Unflatten", "unflattened_size must be non-empty");
  int64_t inferred = 0;
  for (int64_t s : this->sizes) {
    MINIDL_CHECK(s >= -1, "Unflatten", "unflattened_size ", shape_str(this->sizes), " has a negative size other than -1");
    inferred += s == -1;
  }
  MINIDL_CHECK(inferred <= 1, "Unflatten", "only one size in unflattened_size ", shape_str(this->sizes), " can be -1");
}

Tensor Unflatten::forward(const Tensor& input) {
  auto scope = forward_scope();
  const int64_t d = wrap_dim(dim, input.dim(), "Unflatten");
  Shape target(input.shape().begin(), input.shape().begin() + d);
  target.insert(target.end(), sizes.begin(), sizes.end());
  target.insert(target.end(), input.shape().begin() + d + 1, input.shape().end());
  // The sizes must cover exactly the unflattened dim (a -1 is worked out from it); reshape's own
  // check would speak of the whole tensor instead.
  int64_t known = 1;
  bool has_inferred = false;
  for (int64_t s : sizes) {
    if (s == -1) has_inferred = true;
    else known *= s;
  }
  const int64_t extent = input.size(d);
  MINIDL_CHECK(has_inferred ? (known != 0 && extent % known == 0) : known == extent, "Unflatten", "unflattened_size ",
               shape_str(sizes), " does not cover dim ", d, " of size ", extent, " of the input ", input.meta_str());
  return input.reshape(target);
}

std::string Unflatten::describe() const {
  return detail::concat("Unflatten(dim=", dim, ", unflattened_size=", shape_str(sizes), ")");
}

}  // namespace minidl::nn
