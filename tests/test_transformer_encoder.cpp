// nn::TransformerEncoder against torch 1.13's (tests/torch_refs/transformer_encoder.py): parameter
// names in order, output and input gradient for post-norm layers with a final norm and pre-norm
// layers without, under a key padding mask; layers start as equal deep copies; replication.
#include <catch2/catch.hpp>

#include <sstream>

#include "minidl.h"
#include "gradcheck.h"
#include "sine_operands.h"
#include "transformer_encoder_torch_values.h"

using namespace minidl;
using testing::check_printed_values;
using testing::cosine_weights;
using testing::sine_operand;

namespace {
std::shared_ptr<nn::TransformerEncoder> make_encoder(bool norm_first, int64_t layers, bool final_norm) {
  nn::TransformerEncoderLayer layer(
      nn::TransformerEncoderLayerOptions(4, 2).dim_feedforward(8).dropout(0.0).batch_first(true).norm_first(norm_first));
  auto encoder = std::make_shared<nn::TransformerEncoder>(
      layer, layers, final_norm ? std::make_shared<nn::LayerNorm>(nn::LayerNormOptions({4})) : nullptr);
  encoder->to(DType::F64);
  return encoder;
}

std::string joined_names(const nn::Module& m) {
  std::string out;
  for (const std::string& k : m.named_parameters().keys()) out += (out.empty() ? "" : ",") + k;
  return out;
}
}  // namespace

TEST_CASE("TransformerEncoder matches torch: names, output and input gradient", "[nn][attention][transformer]") {
  for (const auto& [key, norm_first, layers, final_norm] :
       std::vector<std::tuple<std::string, bool, int64_t, bool>>{{"post2", false, 2, true}, {"pre3", true, 3, false}}) {
    INFO(key);
    auto encoder = make_encoder(norm_first, layers, final_norm);
    CHECK(joined_names(*encoder) == torch_transformer_encoder_names().at(key));
    {
      NoGradGuard no_grad;
      int i = 0;
      for (const Tensor& p : encoder->parameters()) p.copy_(mul(sine_operand(10 + i++, p.shape()), 0.5));
    }
    Tensor x = sine_operand(0, {2, 3, 4}).requires_grad_();
    nn::AttentionMasks masks;
    masks.key_padding_mask = from_vector<bool>({false, false, true, false, false, false}, {2, 3});
    Tensor y = encoder->forward(x, masks);
    check_printed_values(y, torch_transformer_encoder_values().at(key + ".value"));
    sum(mul(y, cosine_weights(y.shape()))).backward();
    check_printed_values(x.grad(), torch_transformer_encoder_values().at(key + ".grad0"));
  }
}

TEST_CASE("TransformerEncoder's layers start as equal, independent copies; it replicates", "[nn][attention][transformer]") {
  auto encoder = make_encoder(false, 3, true);
  const TensorDict params = encoder->named_parameters();
  const Tensor w0 = params["layers.0.linear1.weight"], w2 = params["layers.2.linear1.weight"];
  CHECK(w0.to_vector<double>() == w2.to_vector<double>());
  CHECK_FALSE(w0.is_same(w2));
  CHECK(encoder->describe() == "TransformerEncoder(3 layers, norm)");
  auto copy = std::dynamic_pointer_cast<nn::TransformerEncoder>(encoder->deep_copy());
  REQUIRE(copy != nullptr);
  Tensor x = sine_operand(1, {2, 5, 4});
  CHECK(testing::max_abs_diff(copy->forward(x), encoder->forward(x)) == 0.0);
  CHECK_THROWS_WITH(nn::TransformerEncoder(nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(4, 2)), 0),
                    Catch::Contains("num_layers must be at least 1"));
}
