// nn::TransformerEncoder.
#include "nn/transformer_encoder.h"

#include "framework/error.h"

namespace minidl::nn {

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayer& layer, int64_t num_layers, std::shared_ptr<Layer> norm_layer) {
  MINIDL_CHECK(num_layers >= 1, "TransformerEncoder", "num_layers must be at least 1, got ", num_layers);
  layers = register_module("layers", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < num_layers; ++i) layers->push_back(layer.deep_copy());
  if (norm_layer) norm = register_module("norm", std::move(norm_layer));
}

Tensor TransformerEncoder::forward(const Tensor& src, const AttentionMasks& masks) {
  auto scope = forward_scope();
  Tensor out = src;
  for (const ModulePtr& m : *layers) out = call(static_cast<TransformerEncoderLayer&>(*m), out, masks);
  return norm ? (*norm)(out) : out;
}

std::string TransformerEncoder::describe() const {
  return detail::concat("TransformerEncoder(", layers->size(), " layers", norm ? ", norm" : "", ")");
}

ModulePtr TransformerEncoder::clone_structure() const {
  const auto& first = static_cast<const TransformerEncoderLayer&>(*(*layers)[0]);
  auto norm_copy = norm ? std::dynamic_pointer_cast<Layer>(norm->clone_structure()) : nullptr;
  return std::make_shared<TransformerEncoder>(first, static_cast<int64_t>(layers->size()), norm_copy);
}

}  // namespace minidl::nn
