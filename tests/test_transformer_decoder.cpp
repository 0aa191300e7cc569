// nn::TransformerDecoderLayer, nn::TransformerDecoder, nn::Transformer and MultiheadAttention's
// weights, kdim/vdim, add_bias_kv and add_zero_attn against torch 1.13's
// (tests/torch_refs/transformer_decoder.py, mha_extras.py): parameter names in order,
// outputs and every input's gradient under causal and key padding masks; f64 gradchecks; the
// layer's wiring, autocast, errors and replication.
#include <catch2/catch.hpp>

#include <cmath>

#include "minidl.h"
#include "gradcheck.h"
#include "sine_operands.h"
#include "mha_extras_torch_values.h"
#include "transformer_decoder_torch_values.h"

using namespace minidl;
using Catch::Contains;
using testing::check_printed_case;
using testing::check_printed_values;
using testing::sine_leaves;
using testing::sine_operand;

namespace {
const auto& want = torch_transformer_decoder_values;

std::string joined_names(const nn::Module& m) {
  std::string out;
  for (const std::string& k : m.named_parameters().keys()) out += (out.empty() ? "" : ",") + k;
  return out;
}

// Each parameter i = 0.5 * operand 10 + i, as the script sets them; checks the names first.
void set_parameters(nn::Module& m, const std::string& key) {
  m.to(DType::F64);
  CHECK(joined_names(m) == torch_transformer_decoder_names().at(key));
  NoGradGuard no_grad;
  int i = 0;
  for (const Tensor& p : m.parameters()) p.copy_(mul(sine_operand(10 + i++, p.shape()), 0.5));
}

Tensor bool_mask(std::vector<bool> values, const Shape& shape) { return from_vector<bool>(values, shape); }

nn::TransformerDecoderLayerOptions small_layer(bool norm_first = false) {
  return nn::TransformerDecoderLayerOptions(4, 2).dim_feedforward(8).dropout(0.0).batch_first(true).norm_first(norm_first);
}
}  // namespace

TEST_CASE("TransformerDecoder matches torch: names, output, target and memory gradients", "[nn][attention][transformer]") {
  for (const auto& [key, norm_first, layers, final_norm, activation] :
       std::vector<std::tuple<std::string, bool, int64_t, bool, nn::Activation>>{
           {"post2", false, 2, true, nn::Activation::ReLU}, {"pre1", true, 1, false, nn::Activation::GELU}}) {
    nn::TransformerDecoder decoder(nn::TransformerDecoderLayer(small_layer(norm_first).activation(activation)), layers,
                                   final_norm ? std::make_shared<nn::LayerNorm>(nn::LayerNormOptions({4})) : nullptr);
    set_parameters(decoder, key);
    std::vector<Tensor> in = sine_leaves({{2, 3, 4}, {2, 5, 4}});
    nn::AttentionMasks tgt_masks, memory_masks;
    tgt_masks.attn_mask = nn::Transformer::generate_square_subsequent_mask(3, DType::F64);
    memory_masks.key_padding_mask = bool_mask({false, false, false, true, true, false, false, false, false, false}, {2, 5});
    check_printed_case(want(), key, decoder.forward(in[0], in[1], tgt_masks, memory_masks), in);
    // tgt_is_causal (minidl applies the causal mask itself) gives the same as the explicit mask.
    nn::AttentionMasks causal;
    causal.is_causal = true;
    CHECK(testing::max_abs_diff(decoder.forward(in[0], in[1], causal, memory_masks),
                                decoder.forward(in[0], in[1], tgt_masks, memory_masks)) < 1e-15);
  }
}

TEST_CASE("Transformer matches torch: names, output, source and target gradients", "[nn][attention][transformer]") {
  nn::Transformer model(nn::TransformerOptions().d_model(4).nhead(2).num_encoder_layers(1).num_decoder_layers(2)
                            .dim_feedforward(8).dropout(0.0));
  set_parameters(model, "seq2seq");
  std::vector<Tensor> in = sine_leaves({{5, 2, 4}, {3, 2, 4}});  // sequence first
  nn::TransformerMasks masks;
  masks.src.key_padding_mask = bool_mask({false, false, false, false, true, false, false, false, false, false}, {2, 5});
  masks.memory.key_padding_mask = masks.src.key_padding_mask;
  masks.tgt.attn_mask = nn::Transformer::generate_square_subsequent_mask(3, DType::F64);
  check_printed_case(want(), "seq2seq", model.forward(in[0], in[1], masks), in);
  CHECK(model.describe() == "Transformer(d_model 4, 2 heads, 1 encoder + 2 decoder layers)");
}

TEST_CASE("MultiheadAttention's weights match torch: averaged and per head, with their gradient", "[nn][attention]") {
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(4, 2));
  set_parameters(mha, "mha");
  nn::AttentionMasks masks;
  masks.key_padding_mask = bool_mask({false, true, false, false, false, false, false, false, false, true}, {2, 5});
  for (const auto& [key, average] : std::vector<std::pair<std::string, bool>>{{"avg", true}, {"heads", false}}) {
    INFO(key);
    Tensor q = sine_operand(0, {3, 2, 4}).requires_grad_();
    Tensor k = sine_operand(1, {5, 2, 4}), v = sine_operand(2, {5, 2, 4});
    AttentionWithWeights r = mha.forward_with_weights(q, k, v, masks, average);
    check_printed_values(r.output, want().at(key + ".value"));
    std::vector<double> shape;
    for (int64_t d : r.weights.shape()) shape.push_back(static_cast<double>(d));
    CHECK(shape == want().at(key + ".weights_shape"));
    check_printed_values(r.weights, want().at(key + ".weights"));
    // Without weights the output is the same.
    CHECK(testing::max_abs_diff(mha.forward(q, k, v, masks), r.output) == 0.0);
    sum(mul(r.weights, testing::cosine_weights(r.weights.shape()))).backward();
    check_printed_values(q.grad(), want().at(key + ".weights_grad0"));
  }
  // Unbatched: [L, S] averaged, [H, L, S] per head; each row of weights sums to 1.
  Tensor q = sine_operand(3, {3, 4}), kv = sine_operand(4, {6, 4});
  AttentionWithWeights avg = mha.forward_with_weights(q, kv, kv);
  CHECK(avg.weights.shape() == Shape{3, 6});
  CHECK(mha.forward_with_weights(q, kv, kv, {}, false).weights.shape() == Shape{2, 3, 6});
  CHECK(testing::max_abs_diff(sum(avg.weights, {1}), ones({3}, DType::F64)) < 1e-15);
}

TEST_CASE("TransformerDecoderLayer: wiring, f64 gradients, autocast", "[nn][attention][transformer]") {
  nn::TransformerDecoderLayer layer(small_layer().dropout(0.0));
  layer.to(DType::F64);
  // Post-norm wiring from the parts.
  std::vector<Tensor> in = sine_leaves({{2, 3, 4}, {2, 5, 4}});
  const Tensor &tgt = in[0], &memory = in[1];
  auto ff = [&](const Tensor& t) { return layer.linear2->forward(relu(layer.linear1->forward(t))); };
  Tensor h = layer.norm1->forward(add(tgt, layer.self_attn->forward(tgt, tgt, tgt)));
  h = layer.norm2->forward(add(h, layer.multihead_attn->forward(h, memory, memory)));
  CHECK(testing::max_abs_diff(layer.forward(tgt, memory), layer.norm3->forward(add(h, ff(h)))) == 0.0);
  // f64 finite differences through both inputs, pre- and post-norm.
  for (bool norm_first : {false, true}) {
    INFO("norm_first " << norm_first);
    layer.options.norm_first_ = norm_first;
    nn::AttentionMasks causal;
    causal.is_causal = true;
    auto fn = [&](const std::vector<Tensor>& xs) { return layer.forward(xs[0], xs[1], causal); };
    CHECK(testing::check_gradients(fn, {sine_operand(5, {2, 3, 4}).requires_grad_(), sine_operand(6, {2, 4, 4}).requires_grad_()},
                                   1e-6, 1e-6) == "");
  }
  layer.options.norm_first_ = false;
  // Under bf16 autocast the attention and the linears run in bf16; the residual sums with the f32
  // inputs promote, so the output is f32 and every parameter's gradient is f32, as PyTorch's.
  layer.to(DType::F32);
  Tensor t32 = cast(tgt.detach(), DType::F32), m32 = cast(memory.detach(), DType::F32);
  Tensor y;
  {
    amp::autocast scope(DeviceType::CPU);
    y = layer.forward(t32, m32);
  }
  CHECK(y.dtype() == DType::F32);
  sum(y).backward();
  for (const auto& [name, p] : layer.named_parameters()) {
    INFO(name);
    REQUIRE(p.grad().defined());
    CHECK(p.grad().dtype() == DType::F32);
  }
}

TEST_CASE("Transformer: causal mask, defaults, errors, replication", "[nn][attention][transformer]") {
  Tensor mask = nn::Transformer::generate_square_subsequent_mask(3);
  CHECK(mask.dtype() == DType::F32);
  const std::vector<double> m = mask.to_vector<double>();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(m == std::vector<double>{0, -inf, -inf, 0, 0, -inf, 0, 0, 0});
  // PyTorch's defaults: 6 + 6 layers of d_model 512, 8 heads, feed-forward 2048.
  nn::TransformerOptions defaults;
  CHECK((defaults.d_model_ == 512 && defaults.nhead_ == 8 && defaults.num_encoder_layers_ == 6 &&
         defaults.num_decoder_layers_ == 6 && defaults.dim_feedforward_ == 2048 && defaults.dropout_ == 0.1));
  Generator gen(7);
  nn::Transformer model(nn::TransformerOptions().d_model(8).nhead(2).num_encoder_layers(2).num_decoder_layers(1)
                            .dim_feedforward(16).dropout(0.0).batch_first(true), &gen);
  // _reset_parameters draws every matrix anew: the copied layers no longer start equal; biases stay zero.
  const TensorDict params = model.named_parameters();
  CHECK(params["encoder.layers.0.linear1.weight"].to_vector<double>() !=
        params["encoder.layers.1.linear1.weight"].to_vector<double>());
  CHECK(sum(abs(params["encoder.layers.1.self_attn.in_proj_bias"])).item() == 0.0);
  Tensor src = sine_operand(0, {2, 5, 8}).to(DType::F32), tgt = sine_operand(1, {2, 3, 8}).to(DType::F32);
  Tensor y = model.forward(src, tgt);
  CHECK(y.shape() == Shape{2, 3, 8});
  // Unbatched src and tgt.
  CHECK(model.forward(src.select(0, 1), tgt.select(0, 1)).shape() == Shape{3, 8});
  CHECK(testing::max_abs_diff(model.forward(src.select(0, 1), tgt.select(0, 1)), y.select(0, 1)) < 1e-6);
  auto copy = std::dynamic_pointer_cast<nn::Transformer>(model.deep_copy());
  REQUIRE(copy != nullptr);
  CHECK(testing::max_abs_diff(copy->forward(src, tgt), y) == 0.0);
  CHECK_THROWS_WITH(model.forward(src, sine_operand(1, {3, 3, 8}).to(DType::F32)),
                    Contains("Transformer: the batch number of src and tgt must be equal"));
  CHECK_THROWS_WITH(model.forward(src, sine_operand(1, {2, 3, 6}).to(DType::F32)),
                    Contains("Transformer: the feature number of src and tgt must be equal to d_model (8)"));
  CHECK_THROWS_WITH(model.forward(src, tgt.select(0, 0)), Contains("Transformer: expected src and tgt both 2-D"));
  CHECK_THROWS_WITH(nn::TransformerDecoder(nn::TransformerDecoderLayer(small_layer()), 0),
                    Contains("num_layers must be at least 1"));
  CHECK(nn::TransformerDecoder(nn::TransformerDecoderLayer(small_layer()), 2).describe() == "TransformerDecoder(2 layers)");
}

TEST_CASE("MultiheadAttention with kdim/vdim, add_bias_kv and add_zero_attn matches torch", "[nn][attention]") {
  const auto& extras = torch_mha_extras_values();
  auto set = [](nn::Module& m, const std::string& key) {
    m.to(DType::F64);
    std::string names;
    for (const std::string& k : m.named_parameters().keys()) names += (names.empty() ? "" : ",") + k;
    CHECK(names == torch_mha_extras_names().at(key));
    NoGradGuard no_grad;
    int i = 0;
    for (const Tensor& p : m.parameters()) p.copy_(mul(sine_operand(10 + i++, p.shape()), 0.5));
  };
  nn::MultiheadAttention kv(nn::MultiheadAttentionOptions(4, 2).kdim(3).vdim(5).add_bias_kv(true).add_zero_attn(true));
  set(kv, "kv");
  std::vector<Tensor> in = sine_leaves({{3, 2, 4}, {5, 2, 3}, {5, 2, 5}});
  nn::AttentionMasks masks;
  masks.key_padding_mask = bool_mask({false, false, false, true, false, false, false, false, false, false}, {2, 5});
  masks.attn_mask = sine_operand(3, {3, 5});
  AttentionWithWeights r = kv.forward_with_weights(in[0], in[1], in[2], masks);
  check_printed_values(r.output, extras.at("kv.value"));
  check_printed_values(r.weights, extras.at("kv.weights"));
  add(sum(mul(r.output, testing::cosine_weights(r.output.shape()))), sum(mul(r.weights, testing::cosine_weights(r.weights.shape()))))
      .backward();
  for (int k = 0; k < 3; ++k) check_printed_values(in[static_cast<size_t>(k)].grad(), extras.at("kv.grad" + std::to_string(k)));

  nn::MultiheadAttention zero(nn::MultiheadAttentionOptions(4, 2).add_zero_attn(true).batch_first(true));
  set(zero, "zero");
  Tensor x = sine_operand(0, {2, 3, 4}).requires_grad_();
  nn::AttentionMasks blocked;
  blocked.attn_mask = bool_mask({false, true, true, false, false, true, false, false, false}, {3, 3});
  AttentionWithWeights z = zero.forward_with_weights(x, x, x, blocked);
  check_printed_values(z.output, extras.at("zero.value"));
  check_printed_values(z.weights, extras.at("zero.weights"));
  add(sum(mul(z.output, testing::cosine_weights(z.output.shape()))), sum(mul(z.weights, testing::cosine_weights(z.weights.shape()))))
      .backward();
  check_printed_values(x.grad(), extras.at("zero.grad0"));
  // The causal flag with the extra keys: they stay visible to every query.
  nn::AttentionMasks causal;
  causal.is_causal = true;
  CHECK(testing::max_abs_diff(zero.forward(x, x, x, causal), zero.forward(x, x, x, blocked)) < 1e-15);
  CHECK_THROWS_WITH(kv.forward(in[0], in[2], in[2]), Contains("expected query, key and value widths 4, 3 and 5"));
}
