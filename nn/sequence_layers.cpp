// LayerNorm, GroupNorm, RMSNorm, Embedding and Conv1d modules.
#include "nn/sequence_layers.h"

#include <cmath>

#include "framework/error.h"
#include "framework/grad_mode.h"
#include "nn/conv.h"
#include "nn/init.h"
#include "nn/python_repr.h"
#include "ops/ops.h"

namespace minidl::nn {

namespace {
std::string affine_str(bool affine) { return affine ? ", affine)" : ")"; }
// A normalization's affine parameters start as the identity: weight 1, bias 0 (either may be absent).
void reset_affine(const Tensor& weight, const Tensor& bias) {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}
}  // namespace

LayerNorm::LayerNorm(const LayerNormOptions& o) : options(o) {
  MINIDL_CHECK(!o.normalized_shape.empty(), "LayerNorm", "normalized_shape must have at least one dimension");
  if (o.elementwise_affine_) {
    weight = register_parameter("weight", empty(o.normalized_shape));
    if (o.bias_) bias = register_parameter("bias", empty(o.normalized_shape));
  }
  reset_parameters();
}

void LayerNorm::reset_parameters() { reset_affine(weight, bias); }

Tensor LayerNorm::forward(const Tensor& x) {
  auto scope = forward_scope();
  return layer_norm(x, options.normalized_shape, weight, bias, options.eps_);
}

std::string LayerNorm::describe() const {
  return detail::concat("LayerNorm(", shape_str(options.normalized_shape), ", eps=", options.eps_,
                        affine_str(options.elementwise_affine_));
}

GroupNorm::GroupNorm(const GroupNormOptions& o) : options(o) {
  MINIDL_CHECK(o.num_groups > 0 && o.num_channels % o.num_groups == 0, "GroupNorm",
               "num_channels must be divisible by num_groups, got ", o.num_channels, " and ", o.num_groups);
  if (o.affine_) {
    weight = register_parameter("weight", empty({o.num_channels}));
    bias = register_parameter("bias", empty({o.num_channels}));
  }
  reset_parameters();
}

void GroupNorm::reset_parameters() { reset_affine(weight, bias); }

Tensor GroupNorm::forward(const Tensor& x) {
  auto scope = forward_scope();
  return group_norm(x, options.num_groups, weight, bias, options.eps_);
}

std::string GroupNorm::describe() const {
  return detail::concat("GroupNorm(", options.num_groups, " groups, ", options.num_channels, " channels, eps=",
                        options.eps_, affine_str(options.affine_));
}

RMSNorm::RMSNorm(const RMSNormOptions& o) : options(o) {
  MINIDL_CHECK(!o.normalized_shape.empty(), "RMSNorm", "normalized_shape must have at least one dimension");
  if (o.elementwise_affine_) weight = register_parameter("weight", empty(o.normalized_shape));
  reset_parameters();
}

void RMSNorm::reset_parameters() { reset_affine(weight, Tensor()); }

Tensor RMSNorm::forward(const Tensor& x) {
  auto scope = forward_scope();
  return rms_norm(x, options.normalized_shape, weight, options.eps_);
}

std::string RMSNorm::describe() const {
  return detail::concat("RMSNorm(", shape_str(options.normalized_shape),
                        options.eps_ ? ", eps=" + std::to_string(*options.eps_) : "", affine_str(options.elementwise_affine_));
}

std::optional<int64_t> checked_padding_idx(const char* module, std::optional<int64_t> padding_idx, int64_t num_embeddings,
                                           int64_t embedding_dim) {
  MINIDL_CHECK(num_embeddings > 0 && embedding_dim > 0, module, "sizes must be positive, got ", num_embeddings, " x ",
               embedding_dim);
  if (!padding_idx) return padding_idx;
  MINIDL_CHECK(*padding_idx >= -num_embeddings && *padding_idx < num_embeddings, module,
               "padding_idx must be within num_embeddings, got ", *padding_idx);
  return *padding_idx < 0 ? *padding_idx + num_embeddings : *padding_idx;
}

void reset_embedding_table(const Tensor& weight, std::optional<int64_t> padding_idx, Generator* gen) {
  init::normal_(weight, 0.0, 1.0, gen);
  if (padding_idx) {
    NoGradGuard ng;
    weight.select(0, *padding_idx).zero_();
  }
}

Embedding::Embedding(const EmbeddingOptions& o, Generator* gen) : options(o) {
  options.padding_idx_ = checked_padding_idx("Embedding", o.padding_idx_, o.num_embeddings, o.embedding_dim);
  weight = register_parameter("weight", empty({o.num_embeddings, o.embedding_dim}));
  reset_parameters(gen);
}

void Embedding::reset_parameters(Generator* gen) { reset_embedding_table(weight, options.padding_idx_, gen); }

Tensor Embedding::forward(const Tensor& indices) {
  auto scope = forward_scope();
  return embedding(indices, weight, options.padding_idx_, options.max_norm_, options.norm_type_);
}

std::string Embedding::describe() const {
  return detail::concat("Embedding(", options.num_embeddings, ", ", options.embedding_dim,
                        options.padding_idx_ ? ", padding_idx=" + std::to_string(*options.padding_idx_) : "",
                        embedding_norm_repr(options.max_norm_, options.norm_type_), ")");
}

std::string embedding_norm_repr(std::optional<double> max_norm, double norm_type) {
  return detail::concat(max_norm ? ", max_norm=" + detail::python_float(*max_norm) : "",
                        norm_type != 2.0 ? ", norm_type=" + detail::python_float(norm_type) : "");
}

namespace {
// What Conv1d and ConvTranspose1d check of their sizes.
void check_conv1d_layer(const char* layer, int64_t in, int64_t out, int64_t kernel, int64_t groups) {
  MINIDL_CHECK(in > 0 && out > 0 && kernel > 0 && groups > 0 && in % groups == 0 && out % groups == 0, layer, "channels ",
               in, " -> ", out, " and kernel ", kernel, " must be positive, the channels divisible by groups ", groups);
}
}  // namespace

Conv1d::Conv1d(const Conv1dOptions& o, Generator* gen) : options(o) {
  check_conv1d_layer("Conv1d", o.in_channels, o.out_channels, o.kernel_size, o.groups_);
  MINIDL_CHECK(!o.same_ || o.stride_ == 1, "Conv1d", "padding='same' is not supported for strided convolutions (got stride ",
               o.stride_, ")");
  weight = register_parameter("weight", empty({o.out_channels, o.in_channels / o.groups_, o.kernel_size}));
  if (o.bias_) bias = register_parameter("bias", empty({o.out_channels}));
  reset_parameters(gen);
}

void Conv1d::reset_parameters(Generator* gen) { reset_conv_parameters(weight, bias, gen); }

Tensor Conv1d::forward(const Tensor& x) {
  auto scope = forward_scope();
  const auto& o = options;
  if (o.same_) return conv1d(x, weight, bias, o.stride_, ConvPadding::Same, o.dilation_, o.groups_);
  return conv1d(x, weight, bias, o.stride_, o.padding_, o.dilation_, o.groups_);
}

std::string Conv1d::describe() const {
  const auto& o = options;
  return detail::concat("Conv1d(", o.in_channels, " -> ", o.out_channels, ", k", o.kernel_size,
                        o.stride_ != 1 ? ", stride " + std::to_string(o.stride_) : "",
                        o.same_ ? ", same" : (o.padding_ ? ", pad " + std::to_string(o.padding_) : ""),
                        o.groups_ != 1 ? ", groups " + std::to_string(o.groups_) : "", o.bias_ ? ", bias)" : ")");
}

ConvTranspose1d::ConvTranspose1d(const ConvTranspose1dOptions& o, Generator* gen) : options(o) {
  check_conv1d_layer("ConvTranspose1d", o.in_channels, o.out_channels, o.kernel_size, o.groups_);
  weight = register_parameter("weight", empty({o.in_channels, o.out_channels / o.groups_, o.kernel_size}));
  if (o.bias_) bias = register_parameter("bias", empty({o.out_channels}));
  reset_parameters(gen);
}

void ConvTranspose1d::reset_parameters(Generator* gen) { reset_conv_parameters(weight, bias, gen); }

Tensor ConvTranspose1d::forward(const Tensor& x) {
  auto scope = forward_scope();
  const auto& o = options;
  return conv_transpose1d(x, weight, bias, o.stride_, o.padding_, o.output_padding_, o.groups_, o.dilation_);
}

std::string ConvTranspose1d::describe() const {
  const auto& o = options;
  return detail::concat("ConvTranspose1d(", o.in_channels, " -> ", o.out_channels, ", k", o.kernel_size,
                        o.stride_ != 1 ? ", stride " + std::to_string(o.stride_) : "",
                        o.padding_ ? ", pad " + std::to_string(o.padding_) : "",
                        o.output_padding_ ? ", output_padding " + std::to_string(o.output_padding_) : "",
                        o.groups_ != 1 ? ", groups " + std::to_string(o.groups_) : "", o.bias_ ? ", bias)" : ")");
}

}  // namespace minidl::nn
