// nn::Transformer.
#include "nn/transformer_model.h"

#include <limits>

#include "framework/error.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace minidl::nn {

TransformerLayerOptions TransformerOptions::layer_options() const {
  return TransformerLayerOptions(d_model_, nhead_)
      .dim_feedforward(dim_feedforward_)
      .dropout(dropout_)
      .activation(activation_)
      .layer_norm_eps(layer_norm_eps_)
      .batch_first(batch_first_)
      .norm_first(norm_first_)
      .bias(bias_);
}

Transformer::Transformer(const TransformerOptions& o, Generator* gen) : options(o) {
  auto final_norm = [&] { return std::make_shared<LayerNorm>(LayerNormOptions({o.d_model_}).eps(o.layer_norm_eps_).bias(o.bias_)); };
  encoder = register_module("encoder", std::make_shared<TransformerEncoder>(TransformerEncoderLayer(o.layer_options(), gen),
                                                                            o.num_encoder_layers_, final_norm()));
  decoder = register_module("decoder", std::make_shared<TransformerDecoder>(TransformerDecoderLayer(o.layer_options(), gen),
                                                                            o.num_decoder_layers_, final_norm()));
  // PyTorch's _reset_parameters: the layers' deep copies start equal; this draws each matrix anew.
  for (const Tensor& p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p, 1.0, gen);
}

Tensor Transformer::forward(const Tensor& src, const Tensor& tgt, const TransformerMasks& masks) {
  auto scope = forward_scope();
  MINIDL_CHECK(src.defined() && tgt.defined(), "Transformer", "src and tgt must be defined");
  MINIDL_CHECK(src.dim() == tgt.dim() && (src.dim() == 2 || src.dim() == 3), "Transformer",
               "expected src and tgt both 2-D (unbatched) or both 3-D, got ", src.meta_str(), " and ", tgt.meta_str());
  const int64_t batch_dim = options.batch_first_ ? 0 : 1;
  MINIDL_CHECK(src.dim() == 2 || src.size(batch_dim) == tgt.size(batch_dim), "Transformer",
               "the batch number of src and tgt must be equal, got ", src.meta_str(), " and ", tgt.meta_str());
  MINIDL_CHECK(src.size(-1) == options.d_model_ && tgt.size(-1) == options.d_model_, "Transformer",
               "the feature number of src and tgt must be equal to d_model (", options.d_model_, "), got ",
               src.meta_str(), " and ", tgt.meta_str());
  Tensor memory = call(*encoder, src, masks.src);
  return call(*decoder, tgt, memory, masks.tgt, masks.memory);
}

Tensor Transformer::generate_square_subsequent_mask(int64_t sz, TensorOptions options) {
  MINIDL_CHECK(sz >= 0, "Transformer::generate_square_subsequent_mask", "size must be non-negative, got ", sz);
  return triu(full({sz, sz}, -std::numeric_limits<double>::infinity(), options), 1);
}

std::string Transformer::describe() const {
  return detail::concat("Transformer(d_model ", options.d_model_, ", ", options.nhead_, " heads, ",
                        options.num_encoder_layers_, " encoder + ", options.num_decoder_layers_, " decoder layers)");
}

}  // namespace minidl::nn
