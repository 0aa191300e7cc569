// nn::EmbeddingBag.
#include "nn/embedding_bag.h"

#include "framework/error.h"
#include "framework/grad_mode.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace minidl::nn {

EmbeddingBag::EmbeddingBag(const EmbeddingBagOptions& o, Generator* gen) : options(o) {
  MINIDL_CHECK(o.num_embeddings > 0 && o.embedding_dim > 0, "EmbeddingBag", "sizes must be positive, got ",
               o.num_embeddings, " x ", o.embedding_dim);
  if (o.padding_idx_) {
    MINIDL_CHECK(*o.padding_idx_ >= -o.num_embeddings && *o.padding_idx_ < o.num_embeddings, "EmbeddingBag",
                 "padding_idx must be within num_embeddings, got ", *o.padding_idx_);
    if (*options.padding_idx_ < 0) *options.padding_idx_ += o.num_embeddings;
  }
  weight = register_parameter("weight", empty({o.num_embeddings, o.embedding_dim}));
  reset_parameters(gen);
}

void EmbeddingBag::reset_parameters(Generator* gen) {
  init::normal_(weight, 0.0, 1.0, gen);
  if (options.padding_idx_) {
    NoGradGuard ng;
    weight.select(0, *options.padding_idx_).zero_();
  }
}

Tensor EmbeddingBag::forward(const Tensor& indices, const Tensor& offsets, const Tensor& per_sample_weights) {
  auto scope = forward_scope();
  EmbeddingBagFuncOptions o;
  o.offsets(offsets).mode(options.mode_).per_sample_weights(per_sample_weights).include_last_offset(options.include_last_offset_);
  if (options.padding_idx_) o.padding_idx(*options.padding_idx_);
  return embedding_bag(indices, weight, o);
}

std::string EmbeddingBag::describe() const {
  const char* mode = options.mode_ == EmbeddingBagMode::Sum ? "sum" : options.mode_ == EmbeddingBagMode::Mean ? "mean" : "max";
  return detail::concat("EmbeddingBag(", options.num_embeddings, ", ", options.embedding_dim, ", mode=", mode,
                        options.padding_idx_ ? ", padding_idx=" + std::to_string(*options.padding_idx_) : "", ")");
}

}  // namespace minidl::nn
