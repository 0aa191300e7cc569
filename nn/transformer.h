// Attention layers: MultiheadAttention and TransformerEncoderLayer, as torch.nn's, with the same
// parameter names (in_proj_weight or q/k/v_proj_weight, in_proj_bias, bias_k, bias_v,
// out_proj.weight, out_proj.bias; self_attn,
// linear1, linear2, norm1, norm2), defaults and initialisation, so a state dict moves between
// the two. Attention runs through scaled_dot_product_attention (ops/sequence_ops.h).
#pragma once
#include <memory>

#include "nn/dropout.h"
#include "nn/linear.h"
#include "nn/sequence_layers.h"

namespace minidl::nn {

// Masks of one attention call, in torch.nn.MultiheadAttention's conventions: a bool mask is true
// where attention is NOT allowed; a float mask is added to the scores.
struct AttentionMasks {
  Tensor attn_mask;         // [L, S] or [N * num_heads, L, S]
  Tensor key_padding_mask;  // [N, S]: keys to ignore per batch element
  bool is_causal = false;   // also mask keys after the query (deviation: applies the causal mask itself,
                            // PyTorch takes it as a hint that attn_mask already is one)
};

struct MultiheadAttentionOptions {
  int64_t embed_dim, num_heads;
  double dropout_ = 0.0;     // on the attention weights, in training mode
  bool bias_ = true;         // in_proj_bias and out_proj.bias
  bool batch_first_ = false; // inputs [N, L, E] instead of [L, N, E]
  int64_t kdim_ = 0, vdim_ = 0;  // the keys' and values' widths (0: embed_dim); other widths project
                                 // through q_proj_weight, k_proj_weight, v_proj_weight
  bool add_bias_kv_ = false;     // learned bias_k, bias_v [1, 1, E] appended to the projected keys and values
  bool add_zero_attn_ = false;   // a zero key and value appended after them

  MultiheadAttentionOptions(int64_t dim, int64_t heads) : embed_dim(dim), num_heads(heads) {}
  MultiheadAttentionOptions& dropout(double p) { dropout_ = p; return *this; }
  MultiheadAttentionOptions& bias(bool b) { bias_ = b; return *this; }
  MultiheadAttentionOptions& batch_first(bool b) { batch_first_ = b; return *this; }
  MultiheadAttentionOptions& kdim(int64_t d) { kdim_ = d; return *this; }
  MultiheadAttentionOptions& vdim(int64_t d) { vdim_ = d; return *this; }
  MultiheadAttentionOptions& add_bias_kv(bool b) { add_bias_kv_ = b; return *this; }
  MultiheadAttentionOptions& add_zero_attn(bool b) { add_zero_attn_ = b; return *this; }
  int64_t key_dim() const { return kdim_ ? kdim_ : embed_dim; }
  int64_t value_dim() const { return vdim_ ? vdim_ : embed_dim; }
  bool same_embed_dim() const { return key_dim() == embed_dim && value_dim() == embed_dim; }
};

class MultiheadAttention : public Module {
 public:
  explicit MultiheadAttention(const MultiheadAttentionOptions& options, Generator* gen = nullptr);
  // PyTorch's: xavier_uniform_ in_proj_weight, zero biases, out_proj.weight as Linear's default.
  void reset_parameters(Generator* gen = nullptr);
  // query [L, N, E], key and value [S, N, E] ([N, L, E] with batch_first; unbatched [L, E] too)
  // -> the attention output of query's shape: PyTorch's forward with need_weights=False.
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value, const AttentionMasks& masks = {});
  // need_weights=True: also the attention weights (after the dropout, as PyTorch 1.13's), averaged
  // over the heads [N, L, S] or per head [N, num_heads, L, S] (unbatched: without N), whatever
  // batch_first says.
  AttentionWithWeights forward_with_weights(const Tensor& query, const Tensor& key, const Tensor& value,
                                            const AttentionMasks& masks = {}, bool average_attn_weights = true);
  std::string describe() const override;
  std::string type_name() const override { return "MultiheadAttention"; }
  ModulePtr clone_structure() const override { return std::make_shared<MultiheadAttention>(options); }

  MultiheadAttentionOptions options;
  Tensor in_proj_weight;  // [3E, E]: the query, key and value projections stacked (when kdim = vdim = E)
  Tensor q_proj_weight, k_proj_weight, v_proj_weight;  // [E, E], [E, kdim], [E, vdim] otherwise
  Tensor in_proj_bias;    // [3E]
  Tensor bias_k, bias_v;  // [1, 1, E] with add_bias_kv
  std::shared_ptr<Linear> out_proj;

 private:
  AttentionWithWeights attend(const Tensor& query, const Tensor& key, const Tensor& value, const AttentionMasks& masks,
                              bool need_weights, bool average_weights);
};

enum class Activation { ReLU, GELU };

// The options of torch.nn.TransformerEncoderLayer and TransformerDecoderLayer (the same in both).
struct TransformerLayerOptions {
  int64_t d_model, nhead;
  int64_t dim_feedforward_ = 2048;
  double dropout_ = 0.1;
  Activation activation_ = Activation::ReLU;
  double layer_norm_eps_ = 1e-5;
  bool batch_first_ = false;
  bool norm_first_ = false;  // pre-norm (x + f(norm(x))) instead of post-norm (norm(x + f(x)))
  bool bias_ = true;

  TransformerLayerOptions(int64_t d, int64_t heads) : d_model(d), nhead(heads) {}
  TransformerLayerOptions& dim_feedforward(int64_t v) { dim_feedforward_ = v; return *this; }
  TransformerLayerOptions& dropout(double p) { dropout_ = p; return *this; }
  TransformerLayerOptions& activation(Activation a) { activation_ = a; return *this; }
  TransformerLayerOptions& layer_norm_eps(double e) { layer_norm_eps_ = e; return *this; }
  TransformerLayerOptions& batch_first(bool b) { batch_first_ = b; return *this; }
  TransformerLayerOptions& norm_first(bool b) { norm_first_ = b; return *this; }
  TransformerLayerOptions& bias(bool b) { bias_ = b; return *this; }
};
using TransformerEncoderLayerOptions = TransformerLayerOptions;
using TransformerDecoderLayerOptions = TransformerLayerOptions;

// The feed-forward block both transformer layers share: dropout(linear2(dropout(activation(linear1(x))))).
// The outer dropout is the layer's own (dropout2 of the encoder layer, dropout3 of the decoder's).
Tensor transformer_feed_forward(Linear& linear1, Dropout& inner_dropout, Linear& linear2, Dropout& outer_dropout,
                                Activation activation, const Tensor& x);

class TransformerEncoderLayer : public Layer {
 public:
  explicit TransformerEncoderLayer(const TransformerEncoderLayerOptions& options, Generator* gen = nullptr);
  Tensor forward(const Tensor& src) override { return forward(src, {}); }
  Tensor forward(const Tensor& src, const AttentionMasks& masks);
  std::string describe() const override;
  std::string type_name() const override { return "TransformerEncoderLayer"; }
  ModulePtr clone_structure() const override { return std::make_shared<TransformerEncoderLayer>(options); }

  TransformerEncoderLayerOptions options;
  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2;
  std::shared_ptr<LayerNorm> norm1, norm2;

 private:
  Tensor self_attention_block(const Tensor& x, const AttentionMasks& masks);
  Tensor feed_forward_block(const Tensor& x);
};

}  // namespace minidl::nn
