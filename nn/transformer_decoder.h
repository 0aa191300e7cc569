// The decoder half of torch.nn.Transformer: TransformerDecoderLayer (self-attention over the
// target, attention over the encoder's output `memory`, feed-forward; each with a residual and a
// layer norm, post- or pre-norm) and TransformerDecoder (num_layers deep copies of one layer, then
// an optional final norm). Parameter names and order as PyTorch's ("self_attn.*",
// "multihead_attn.*", "linear1", "linear2", "norm1".."norm3"; "layers.0.*", "norm.*"), so state
// dicts move between the two.
//
//   nn::TransformerDecoderLayer layer(nn::TransformerDecoderLayerOptions(64, 4).batch_first(true));
//   nn::TransformerDecoder decoder(layer, 3);
//   nn::AttentionMasks causal;
//   causal.is_causal = true;
//   Tensor y = decoder.forward(tgt, memory, causal);
#pragma once
#include <memory>

#include "nn/container.h"
#include "nn/transformer.h"

namespace minidl::nn {

class TransformerDecoderLayer : public Module {
 public:
  explicit TransformerDecoderLayer(const TransformerDecoderLayerOptions& options, Generator* gen = nullptr);
  // tgt [T, N, E] and memory [S, N, E] ([N, T, E] with batch_first; unbatched [T, E] too) -> tgt's
  // shape. tgt_masks reach the self-attention (PyTorch's tgt_mask, tgt_key_padding_mask,
  // tgt_is_causal), memory_masks the attention over memory (memory_mask, memory_key_padding_mask).
  Tensor forward(const Tensor& tgt, const Tensor& memory, const AttentionMasks& tgt_masks = {},
                 const AttentionMasks& memory_masks = {});
  std::string describe() const override;
  std::string type_name() const override { return "TransformerDecoderLayer"; }
  ModulePtr clone_structure() const override { return std::make_shared<TransformerDecoderLayer>(options); }

  TransformerDecoderLayerOptions options;
  std::shared_ptr<MultiheadAttention> self_attn, multihead_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2, dropout3;
  std::shared_ptr<LayerNorm> norm1, norm2, norm3;
};

class TransformerDecoder : public Module {
 public:
  TransformerDecoder(const TransformerDecoderLayer& layer, int64_t num_layers, std::shared_ptr<Layer> norm = nullptr);
  // The same memory and masks reach every layer.
  Tensor forward(const Tensor& tgt, const Tensor& memory, const AttentionMasks& tgt_masks = {},
                 const AttentionMasks& memory_masks = {});
  std::string describe() const override;  // "TransformerDecoder(2 layers, norm)"
  std::string type_name() const override { return "TransformerDecoder"; }
  ModulePtr clone_structure() const override;

  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<Layer> norm;  // null without a final norm
};

}  // namespace minidl::nn
