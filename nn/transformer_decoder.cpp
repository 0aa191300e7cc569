// nn::TransformerDecoderLayer and nn::TransformerDecoder.
#include "nn/transformer_decoder.h"

#include "framework/error.h"
#include "ops/ops.h"

namespace minidl::nn {

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerDecoderLayerOptions& o, Generator* gen) : options(o) {
  // Registered in PyTorch's order, which is the state dict's.
  auto attention = [&] {
    return std::make_shared<MultiheadAttention>(
        MultiheadAttentionOptions(o.d_model, o.nhead).dropout(o.dropout_).bias(o.bias_).batch_first(o.batch_first_), gen);
  };
  auto layer_norm = [&] {
    return std::make_shared<LayerNorm>(LayerNormOptions({o.d_model}).eps(o.layer_norm_eps_).bias(o.bias_));
  };
  self_attn = register_module("self_attn", attention());
  multihead_attn = register_module("multihead_attn", attention());
  linear1 = register_module("linear1", std::make_shared<Linear>(LinearOptions(o.d_model, o.dim_feedforward_).bias(o.bias_), gen));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout_, gen));
  linear2 = register_module("linear2", std::make_shared<Linear>(LinearOptions(o.dim_feedforward_, o.d_model).bias(o.bias_), gen));
  norm1 = register_module("norm1", layer_norm());
  norm2 = register_module("norm2", layer_norm());
  norm3 = register_module("norm3", layer_norm());
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout_, gen));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout_, gen));
  dropout3 = register_module("dropout3", std::make_shared<Dropout>(o.dropout_, gen));
}

Tensor TransformerDecoderLayer::forward(const Tensor& tgt, const Tensor& memory, const AttentionMasks& tgt_masks,
                                        const AttentionMasks& memory_masks) {
  auto scope = forward_scope();
  auto self_attention = [&](const Tensor& x) { return dropout1->forward(self_attn->forward(x, x, x, tgt_masks)); };
  auto memory_attention = [&](const Tensor& x) {
    return dropout2->forward(multihead_attn->forward(x, memory, memory, memory_masks));
  };
  auto feed_forward = [&](const Tensor& x) {
    return transformer_feed_forward(*linear1, *dropout, *linear2, *dropout3, options.activation_, x);
  };
  Tensor x = tgt;
  if (options.norm_first_) {
    x = add(x, self_attention(norm1->forward(x)));
    x = add(x, memory_attention(norm2->forward(x)));
    return add(x, feed_forward(norm3->forward(x)));
  }
  x = norm1->forward(add(x, self_attention(x)));
  x = norm2->forward(add(x, memory_attention(x)));
  return norm3->forward(add(x, feed_forward(x)));
}

std::string TransformerDecoderLayer::describe() const {
  return detail::concat("TransformerDecoderLayer(d_model ", options.d_model, ", ", options.nhead, " heads, ff ",
                        options.dim_feedforward_, options.activation_ == Activation::GELU ? ", gelu" : ", relu",
                        options.norm_first_ ? ", norm_first)" : ")");
}

TransformerDecoder::TransformerDecoder(const TransformerDecoderLayer& layer, int64_t num_layers, std::shared_ptr<Layer> norm_layer) {
  MINIDL_CHECK(num_layers >= 1, "TransformerDecoder", "num_layers must be at least 1, got ", num_layers);
  layers = register_module("layers", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < num_layers; ++i) layers->push_back(layer.deep_copy());
  if (norm_layer) norm = register_module("norm", std::move(norm_layer));
}

Tensor TransformerDecoder::forward(const Tensor& tgt, const Tensor& memory, const AttentionMasks& tgt_masks,
                                   const AttentionMasks& memory_masks) {
  auto scope = forward_scope();
  Tensor out = tgt;
  for (const ModulePtr& m : *layers)
    out = call(static_cast<TransformerDecoderLayer&>(*m), out, memory, tgt_masks, memory_masks);
  return norm ? (*norm)(out) : out;
}

std::string TransformerDecoder::describe() const {
  return detail::concat("TransformerDecoder(", layers->size(), " layers", norm ? ", norm" : "", ")");
}

ModulePtr TransformerDecoder::clone_structure() const {
  const auto& first = static_cast<const TransformerDecoderLayer&>(*(*layers)[0]);
  auto norm_copy = norm ? std::dynamic_pointer_cast<Layer>(norm->clone_structure()) : nullptr;
  return std::make_shared<TransformerDecoder>(first, static_cast<int64_t>(layers->size()), norm_copy);
}

}  // namespace minidl::nn
