// nn::TransformerEncoder (torch.nn.TransformerEncoder): num_layers copies of one
// TransformerEncoderLayer run in turn, then an optional final norm. As PyTorch, the layers are
// deep copies of the layer given, so they start with equal weights; parameters read
// "layers.0.self_attn.in_proj_weight", ..., "norm.weight".
//
//   auto layer = nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(64, 4).batch_first(true));
//   nn::TransformerEncoder encoder(layer, 3, std::make_shared<nn::LayerNorm>(nn::LayerNormOptions({64})));
#pragma once
#include <memory>

#include "nn/container.h"
#include "nn/transformer.h"

namespace minidl::nn {

class TransformerEncoder : public Layer {
 public:
  TransformerEncoder(const TransformerEncoderLayer& layer, int64_t num_layers, std::shared_ptr<Layer> norm = nullptr);
  Tensor forward(const Tensor& src) override { return forward(src, {}); }
  // The same masks reach every layer (PyTorch's mask and src_key_padding_mask).
  Tensor forward(const Tensor& src, const AttentionMasks& masks);
  std::string describe() const override;  // "TransformerEncoder(2 layers, norm)"
  std::string type_name() const override { return "TransformerEncoder"; }
  ModulePtr clone_structure() const override;

  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<Layer> norm;  // null without a final norm
};

}  // namespace minidl::nn
