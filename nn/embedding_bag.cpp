// nn::EmbeddingBag.
#include "nn/embedding_bag.h"

#include "framework/error.h"
#include "nn/sequence_layers.h"
#include "ops/ops.h"

namespace minidl::nn {

EmbeddingBag::EmbeddingBag(const EmbeddingBagOptions& o, Generator* gen) : options(o) {
  options.padding_idx_ = checked_padding_idx("EmbeddingBag", o.padding_idx_, o.num_embeddings, o.embedding_dim);
  weight = register_parameter("weight", empty({o.num_embeddings, o.embedding_dim}));
  reset_parameters(gen);
}

void EmbeddingBag::reset_parameters(Generator* gen) { reset_embedding_table(weight, options.padding_idx_, gen); }

Tensor EmbeddingBag::forward(const Tensor& indices, const Tensor& offsets, const Tensor& per_sample_weights) {
  auto scope = forward_scope();
  EmbeddingBagFuncOptions o;
  o.offsets(offsets).mode(options.mode_).per_sample_weights(per_sample_weights).include_last_offset(options.include_last_offset_);
  if (options.padding_idx_) o.padding_idx(*options.padding_idx_);
  if (options.max_norm_) o.max_norm(*options.max_norm_).norm_type(options.norm_type_);
  return embedding_bag(indices, weight, o);
}

std::string EmbeddingBag::describe() const {
  const char* mode = options.mode_ == EmbeddingBagMode::Sum ? "sum" : options.mode_ == EmbeddingBagMode::Mean ? "mean" : "max";
  return detail::concat("EmbeddingBag(", options.num_embeddings, ", ", options.embedding_dim,
                        embedding_norm_repr(options.max_norm_, options.norm_type_), ", mode=", mode,
                        options.padding_idx_ ? ", padding_idx=" + std::to_string(*options.padding_idx_) : "", ")");
}

}  // namespace minidl::nn
