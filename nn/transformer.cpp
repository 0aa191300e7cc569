// MultiheadAttention and TransformerEncoderLayer.
#include "nn/transformer.h"

#include <atomic>
#include <limits>
#include <string>

#include "framework/error.h"
#include "framework/warning.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace minidl::nn {

namespace {
// A torch.nn-style mask (bool: true = blocked; float: added) as an additive float mask of dtype (a
// float mask of another dtype is converted: an f64 mask on an f32 module gives f32, as PyTorch 1.13).
Tensor additive(const Tensor& mask, DType dtype) {
  if (mask.dtype() != DType::Bool) return mask.to(dtype);
  Tensor neg_inf = full({}, -std::numeric_limits<double>::infinity(), TensorOptions(dtype).device(mask.device()));
  return where(mask, neg_inf, zeros({}, TensorOptions(dtype).device(mask.device())));
}

// PyTorch 1.13's mask types: attn_mask bool, floating or (deprecated, read as bool) uint8;
// key_padding_mask bool or floating. An integer mask would otherwise be added to the scores.
Tensor checked_attn_mask(const Tensor& a, const char* op) {
  if (a.dtype() == DType::U8) {
    static std::atomic<bool> warned{false};  // once per process, as Python's default filter
    if (!warned.exchange(true))
      warn(std::string(op) + ": Byte tensor for attn_mask is deprecated. Use bool tensor instead.");
    return ne(a, 0.0);
  }
  MINIDL_CHECK(a.dtype() == DType::Bool || a.is_floating_point(), op,
               "only float, byte, and bool types are supported for attn_mask, not ", a.meta_str());
  return a;
}
void check_key_padding_mask(const Tensor& p, const char* op) {
  MINIDL_CHECK(p.dtype() == DType::Bool || p.is_floating_point(), op,
               "only bool and floating types of key_padding_mask are supported, got ", p.meta_str());
}

// Bool [L, S]: true where key j comes after query i (blocked under a causal mask).
Tensor causal_blocked(int64_t L, int64_t S, Device device) {
  Tensor rows = arange(static_cast<double>(L), TensorOptions(DType::I64).device(device)).unsqueeze(1);
  Tensor cols = arange(static_cast<double>(S), TensorOptions(DType::I64).device(device)).unsqueeze(0);
  return gt(cols, rows);
}
}  // namespace

MultiheadAttention::MultiheadAttention(const MultiheadAttentionOptions& o, Generator* gen) : options(o) {
  MINIDL_CHECK(o.embed_dim > 0 && o.num_heads > 0 && o.embed_dim % o.num_heads == 0, "MultiheadAttention",
               "embed_dim must be divisible by num_heads, got ", o.embed_dim, " and ", o.num_heads);
  MINIDL_CHECK(o.dropout_ >= 0.0 && o.dropout_ <= 1.0, "MultiheadAttention", "dropout must be in [0, 1], got ", o.dropout_);
  MINIDL_CHECK(o.kdim_ >= 0 && o.vdim_ >= 0, "MultiheadAttention", "kdim and vdim must be positive (0: embed_dim), got ",
               o.kdim_, " and ", o.vdim_);
  const int64_t E = o.embed_dim;
  // PyTorch's registration order, which is the state dict's.
  if (o.same_embed_dim()) {
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * E, E}));
  } else {
    q_proj_weight = register_parameter("q_proj_weight", empty({E, E}));
    k_proj_weight = register_parameter("k_proj_weight", empty({E, o.key_dim()}));
    v_proj_weight = register_parameter("v_proj_weight", empty({E, o.value_dim()}));
  }
  if (o.bias_) in_proj_bias = register_parameter("in_proj_bias", empty({3 * E}));
  out_proj = register_module("out_proj", std::make_shared<Linear>(LinearOptions(E, E).bias(o.bias_), gen));
  if (o.add_bias_kv_) {
    bias_k = register_parameter("bias_k", empty({1, 1, E}));
    bias_v = register_parameter("bias_v", empty({1, 1, E}));
  }
  reset_parameters(gen);
}

void MultiheadAttention::reset_parameters(Generator* gen) {
  for (const Tensor& w : {in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight})
    if (w.defined()) init::xavier_uniform_(w, 1.0, gen);
  if (in_proj_bias.defined()) init::zeros_(in_proj_bias);
  out_proj->reset_parameters(gen);
  if (out_proj->bias.defined()) init::zeros_(out_proj->bias);
  for (const Tensor& b : {bias_k, bias_v})
    if (b.defined()) init::xavier_normal_(b, 1.0, gen);
}

Tensor MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value, const AttentionMasks& m) {
  return attend(query, key, value, m, false, false).output;
}

AttentionWithWeights MultiheadAttention::forward_with_weights(const Tensor& query, const Tensor& key, const Tensor& value,
                                                              const AttentionMasks& masks, bool average_attn_weights) {
  return attend(query, key, value, masks, true, average_attn_weights);
}

AttentionWithWeights MultiheadAttention::attend(const Tensor& query, const Tensor& key, const Tensor& value,
                                                const AttentionMasks& m, bool need_weights, bool average_weights) {
  auto scope = forward_scope();
  const char* op = "MultiheadAttention";
  const int64_t E = options.embed_dim, H = options.num_heads, hd = E / H;
  MINIDL_CHECK(query.defined() && key.defined() && value.defined(), op, "query, key and value must be defined");
  MINIDL_CHECK(query.dim() == key.dim() && query.dim() == value.dim() && (query.dim() == 2 || query.dim() == 3), op,
               "expected query, key and value all 2-D (unbatched) or all 3-D, got ", query.meta_str(), ", ",
               key.meta_str(), " and ", value.meta_str());
  MINIDL_CHECK(query.size(-1) == E && key.size(-1) == options.key_dim() && value.size(-1) == options.value_dim(), op,
               "expected query, key and value widths ", E, ", ", options.key_dim(), " and ", options.value_dim(), ", got ",
               query.meta_str(), ", ", key.meta_str(), " and ", value.meta_str());
  const bool unbatched = query.dim() == 2;
  // Everything below works batch first: [N, L, E].
  auto to_batch_first = [&](const Tensor& t) {
    if (unbatched) return t.unsqueeze(0);
    return options.batch_first_ ? t : t.transpose(0, 1);
  };
  const Tensor q_in = to_batch_first(query), k_in = to_batch_first(key), v_in = to_batch_first(value);
  const int64_t N = q_in.size(0), L = q_in.size(1), S = k_in.size(1);
  MINIDL_CHECK(k_in.size(0) == N && v_in.size(0) == N && v_in.size(1) == S, op, "key and value must match the batch of ",
               "query and each other's length, got ", query.meta_str(), ", ", key.meta_str(), " and ", value.meta_str());
  Tensor q, k, v;
  if (in_proj_weight.defined() && query.is_same(key) && key.is_same(value)) {  // self-attention: one projection, as PyTorch
    std::vector<Tensor> qkv = chunk(linear(q_in, in_proj_weight, in_proj_bias), 3, -1);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    auto rows = [&](const Tensor& t, int64_t i) { return t.defined() ? t.narrow(0, i * E, E) : Tensor(); };
    auto weight = [&](const Tensor& own, int64_t i) { return in_proj_weight.defined() ? rows(in_proj_weight, i) : own; };
    q = linear(q_in, weight(q_proj_weight, 0), rows(in_proj_bias, 0));
    k = linear(k_in, weight(k_proj_weight, 1), rows(in_proj_bias, 1));
    v = linear(v_in, weight(v_proj_weight, 2), rows(in_proj_bias, 2));
  }
  // add_bias_kv, then add_zero_attn: one more key and value each, after the S given (the masks get
  // an unmasked column for each, as PyTorch pads them).
  int64_t extra = 0;
  if (bias_k.defined()) {
    k = cat({k, bias_k.expand({N, 1, E})}, 1), v = cat({v, bias_v.expand({N, 1, E})}, 1);
    ++extra;
  }
  if (options.add_zero_attn_) {
    const Tensor zero = zeros({N, 1, E}, TensorOptions(k.dtype()).device(k.device()));
    k = cat({k, zero}, 1), v = cat({v, zero}, 1);
    ++extra;
  }
  auto heads = [&](const Tensor& t, int64_t len) { return t.reshape({N, len, H, hd}).permute({0, 2, 1, 3}); };
  // One additive mask broadcastable to [N, H, L, S] (undefined when nothing is masked).
  Tensor mask;
  auto add_mask = [&](Tensor part) {
    part = additive(part, q.dtype());
    mask = mask.defined() ? add(mask, part) : part;
  };
  if (m.attn_mask.defined()) {
    const Tensor a = checked_attn_mask(m.attn_mask, op);
    MINIDL_CHECK((a.dim() == 2 && a.size(0) == L && a.size(1) == S) ||
                     (a.dim() == 3 && a.size(0) == N * H && a.size(1) == L && a.size(2) == S),
                 op, "attn_mask must be [", L, ", ", S, "] or [", N * H, ", ", L, ", ", S, "], got ", a.meta_str());
    add_mask(a.dim() == 3 ? a.reshape({N, H, L, S}) : a);
  }
  if (m.key_padding_mask.defined()) {
    const Tensor& p = m.key_padding_mask;
    check_key_padding_mask(p, op);
    // [N, S], or [S] for an unbatched query (PyTorch refuses any other rank).
    MINIDL_CHECK(p.dim() == (unbatched ? 1 : 2) && p.numel() == N * S && p.size(-1) == S, op, "key_padding_mask must be ",
                 unbatched ? detail::concat("[", S, "]") : detail::concat("[", N, ", ", S, "]"), ", got ", p.meta_str());
    add_mask(p.reshape({N, 1, 1, S}));
  }
  AttentionOptions ao;
  ao.dropout_p = is_training() ? options.dropout_ : 0.0;
  if (m.is_causal) {
    if (mask.defined() || extra > 0)
      add_mask(causal_blocked(L, S, q.device()));
    else
      ao.is_causal = true;
  }
  if (mask.defined() && extra > 0) {
    Shape pad_shape = mask.shape();
    pad_shape.back() = extra;
    mask = cat({mask, zeros(pad_shape, TensorOptions(mask.dtype()).device(mask.device()))}, -1);
  }
  ao.attn_mask = mask;
  AttentionWithWeights r;
  if (need_weights) {
    r = scaled_dot_product_attention_with_weights(heads(q, L), heads(k, S + extra), heads(v, S + extra), ao);
    if (average_weights) r.weights = mean(r.weights, {1});  // [N, L, S], as PyTorch's average over heads
    if (unbatched) r.weights = r.weights.squeeze(0);
  } else {
    r.output = scaled_dot_product_attention(heads(q, L), heads(k, S + extra), heads(v, S + extra), ao);
  }
  Tensor y = out_proj->forward(r.output.permute({0, 2, 1, 3}).reshape({N, L, E}));
  r.output = unbatched ? y.squeeze(0) : options.batch_first_ ? y : y.transpose(0, 1);
  return r;
}

std::string MultiheadAttention::describe() const {
  return detail::concat("MultiheadAttention(", options.embed_dim, ", ", options.num_heads, " heads",
                        options.dropout_ > 0 ? ", dropout " + std::to_string(options.dropout_) : "",
                        options.batch_first_ ? ", batch_first)" : ")");
}

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerEncoderLayerOptions& o, Generator* gen) : options(o) {
  self_attn = register_module("self_attn", std::make_shared<MultiheadAttention>(
      MultiheadAttentionOptions(o.d_model, o.nhead).dropout(o.dropout_).bias(o.bias_).batch_first(o.batch_first_), gen));
  linear1 = register_module("linear1", std::make_shared<Linear>(LinearOptions(o.d_model, o.dim_feedforward_).bias(o.bias_), gen));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout_, gen));
  linear2 = register_module("linear2", std::make_shared<Linear>(LinearOptions(o.dim_feedforward_, o.d_model).bias(o.bias_), gen));
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(LayerNormOptions({o.d_model}).eps(o.layer_norm_eps_).bias(o.bias_)));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(LayerNormOptions({o.d_model}).eps(o.layer_norm_eps_).bias(o.bias_)));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout_, gen));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout_, gen));
}

Tensor TransformerEncoderLayer::self_attention_block(const Tensor& x, const AttentionMasks& masks) {
  return dropout1->forward(self_attn->forward(x, x, x, masks));
}

Tensor transformer_feed_forward(Linear& linear1, Dropout& inner_dropout, Linear& linear2, Dropout& outer_dropout,
                                Activation activation, const Tensor& x) {
  Tensor h = linear1.forward(x);
  h = activation == Activation::GELU ? gelu(h) : relu(h);
  return outer_dropout.forward(linear2.forward(inner_dropout.forward(h)));
}

Tensor TransformerEncoderLayer::feed_forward_block(const Tensor& x) {
  return transformer_feed_forward(*linear1, *dropout, *linear2, *dropout2, options.activation_, x);
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const AttentionMasks& masks) {
  auto scope = forward_scope();
  Tensor x = src;
  if (options.norm_first_) {
    x = add(x, self_attention_block(norm1->forward(x), masks));
    return add(x, feed_forward_block(norm2->forward(x)));
  }
  x = norm1->forward(add(x, self_attention_block(x, masks)));
  return norm2->forward(add(x, feed_forward_block(x)));
}

std::string TransformerEncoderLayer::describe() const {
  return detail::concat("TransformerEncoderLayer(d_model ", options.d_model, ", ", options.nhead, " heads, ff ",
                        options.dim_feedforward_, options.activation_ == Activation::GELU ? ", gelu" : ", relu",
                        options.norm_first_ ? ", norm_first)" : ")");
}

}  // namespace minidl::nn
