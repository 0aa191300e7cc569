// nn::Transformer (torch.nn.Transformer): an encoder of num_encoder_layers TransformerEncoderLayers
// and a decoder of num_decoder_layers TransformerDecoderLayers, each stack ending in a LayerNorm;
// every parameter of more than one dimension xavier-uniform initialised, as PyTorch's
// _reset_parameters. Parameter names as PyTorch's ("encoder.layers.0.self_attn.in_proj_weight",
// ..., "decoder.norm.bias").
//
//   nn::Transformer model(nn::TransformerOptions().d_model(64).nhead(4).batch_first(true));
//   nn::TransformerMasks masks;
//   masks.tgt.attn_mask = nn::Transformer::generate_square_subsequent_mask(tgt.size(1));
//   Tensor y = model.forward(src, tgt, masks);  // [N, T, 64]
#pragma once
#include <memory>

#include "nn/transformer_decoder.h"
#include "nn/transformer_encoder.h"

namespace minidl::nn {

struct TransformerOptions {
  int64_t d_model_ = 512, nhead_ = 8, num_encoder_layers_ = 6, num_decoder_layers_ = 6, dim_feedforward_ = 2048;
  double dropout_ = 0.1;
  Activation activation_ = Activation::ReLU;
  double layer_norm_eps_ = 1e-5;
  bool batch_first_ = false;
  bool norm_first_ = false;
  bool bias_ = true;

  TransformerOptions& d_model(int64_t v) { d_model_ = v; return *this; }
  TransformerOptions& nhead(int64_t v) { nhead_ = v; return *this; }
  TransformerOptions& num_encoder_layers(int64_t v) { num_encoder_layers_ = v; return *this; }
  TransformerOptions& num_decoder_layers(int64_t v) { num_decoder_layers_ = v; return *this; }
  TransformerOptions& dim_feedforward(int64_t v) { dim_feedforward_ = v; return *this; }
  TransformerOptions& dropout(double p) { dropout_ = p; return *this; }
  TransformerOptions& activation(Activation a) { activation_ = a; return *this; }
  TransformerOptions& layer_norm_eps(double e) { layer_norm_eps_ = e; return *this; }
  TransformerOptions& batch_first(bool b) { batch_first_ = b; return *this; }
  TransformerOptions& norm_first(bool b) { norm_first_ = b; return *this; }
  TransformerOptions& bias(bool b) { bias_ = b; return *this; }
  // The options of each encoder and decoder layer.
  TransformerLayerOptions layer_options() const;
};

// The masks of one nn::Transformer call, by the attention they reach.
struct TransformerMasks {
  AttentionMasks src;     // encoder self-attention: PyTorch's src_mask, src_key_padding_mask
  AttentionMasks tgt;     // decoder self-attention: tgt_mask, tgt_key_padding_mask (tgt_is_causal)
  AttentionMasks memory;  // decoder attention over the encoder's output: memory_mask, memory_key_padding_mask
};

class Transformer : public Module {
 public:
  explicit Transformer(const TransformerOptions& options = {}, Generator* gen = nullptr);
  // src [S, N, E], tgt [T, N, E] ([N, S, E] and [N, T, E] with batch_first; unbatched [S, E] and
  // [T, E]) -> [T, N, E] (tgt's shape): the decoder's output over the encoder's memory of src.
  Tensor forward(const Tensor& src, const Tensor& tgt, const TransformerMasks& masks = {});
  // The causal mask of a sequence of sz: [sz, sz] float, -inf above the diagonal and 0 elsewhere.
  static Tensor generate_square_subsequent_mask(int64_t sz, TensorOptions options = {});
  std::string describe() const override;  // "Transformer(d_model 512, 8 heads, 6 encoder + 6 decoder layers)"
  std::string type_name() const override { return "Transformer"; }
  ModulePtr clone_structure() const override { return std::make_shared<Transformer>(options); }

  TransformerOptions options;
  std::shared_ptr<TransformerEncoder> encoder;
  std::shared_ptr<TransformerDecoder> decoder;
};

}  // namespace minidl::nn
