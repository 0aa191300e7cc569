// Layers of sequence and transformer models over the ops in ops/sequence_ops.h, with PyTorch's
// defaults, initialisation and state-dict names: LayerNorm, GroupNorm, RMSNorm (weight, bias),
// Embedding (weight), Conv1d (weight [out, in/groups, k], bias) and ConvTranspose1d (weight [in,
// out/groups, k], bias).
#pragma once
#include <optional>

#include "nn/module.h"
#include "ops/sequence_ops.h"

namespace minidl {
class Generator;  // framework/generator.h
}  // namespace minidl

namespace minidl::nn {

struct LayerNormOptions {
  Shape normalized_shape;           // the trailing dims normalized over
  double eps_ = 1e-5;               // added to the variance
  bool elementwise_affine_ = true;  // learn weight (ones) and bias (zeros) of normalized_shape
  bool bias_ = true;                // learn the bias (with elementwise_affine)

  LayerNormOptions(Shape shape) : normalized_shape(std::move(shape)) {}  // NOLINT: LayerNorm({64})
  LayerNormOptions& eps(double e) { eps_ = e; return *this; }
  LayerNormOptions& elementwise_affine(bool a) { elementwise_affine_ = a; return *this; }
  LayerNormOptions& bias(bool b) { bias_ = b; return *this; }
};

class LayerNorm : public Layer {
 public:
  explicit LayerNorm(const LayerNormOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& x) override;  // [*, normalized_shape] -> same shape
  std::string describe() const override;     // "LayerNorm([64], eps=1e-05, affine)"
  std::string type_name() const override { return "LayerNorm"; }
  ModulePtr clone_structure() const override { return std::make_shared<LayerNorm>(options); }
  LayerNormOptions options;
  Tensor weight, bias;
};

struct GroupNormOptions {
  int64_t num_groups, num_channels;
  double eps_ = 1e-5;
  bool affine_ = true;  // learn weight (ones) and bias (zeros) [num_channels]

  GroupNormOptions(int64_t groups, int64_t channels) : num_groups(groups), num_channels(channels) {}
  GroupNormOptions& eps(double e) { eps_ = e; return *this; }
  GroupNormOptions& affine(bool a) { affine_ = a; return *this; }
};

class GroupNorm : public Layer {
 public:
  explicit GroupNorm(const GroupNormOptions& options);
  GroupNorm(int64_t num_groups, int64_t num_channels) : GroupNorm(GroupNormOptions(num_groups, num_channels)) {}
  void reset_parameters();
  Tensor forward(const Tensor& x) override;  // [N, C, *] -> same shape
  std::string describe() const override;
  std::string type_name() const override { return "GroupNorm"; }
  ModulePtr clone_structure() const override { return std::make_shared<GroupNorm>(options); }
  GroupNormOptions options;
  Tensor weight, bias;
};

struct RMSNormOptions {
  Shape normalized_shape;
  std::optional<double> eps_;       // default: f32's machine epsilon (torch.nn.RMSNorm's None)
  bool elementwise_affine_ = true;  // learn weight (ones); RMSNorm has no bias

  RMSNormOptions(Shape shape) : normalized_shape(std::move(shape)) {}  // NOLINT: RMSNorm({64})
  RMSNormOptions& eps(double e) { eps_ = e; return *this; }
  RMSNormOptions& elementwise_affine(bool a) { elementwise_affine_ = a; return *this; }
};

class RMSNorm : public Layer {
 public:
  explicit RMSNorm(const RMSNormOptions& options);
  void reset_parameters();
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  std::string type_name() const override { return "RMSNorm"; }
  ModulePtr clone_structure() const override { return std::make_shared<RMSNorm>(options); }
  RMSNormOptions options;
  Tensor weight;
};

struct EmbeddingOptions {
  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx_;  // that row starts at zero and receives no gradient
  std::optional<double> max_norm_;      // rows a forward names are renormalised to this norm first
  double norm_type_ = 2.0;              // the p of that norm

  EmbeddingOptions(int64_t num, int64_t dim) : num_embeddings(num), embedding_dim(dim) {}
  EmbeddingOptions& padding_idx(int64_t i) { padding_idx_ = i; return *this; }
  EmbeddingOptions& max_norm(double v) { max_norm_ = v; return *this; }
  EmbeddingOptions& norm_type(double v) { norm_type_ = v; return *this; }
};

// What Embedding and EmbeddingBag share: padding_idx checked within [-num_embeddings,
// num_embeddings) and made non-negative (errors name `module`); the table's PyTorch initialisation,
// N(0, 1) with the padding row zeroed.
// Also checks that both sizes are positive.
std::optional<int64_t> checked_padding_idx(const char* module, std::optional<int64_t> padding_idx, int64_t num_embeddings,
                                           int64_t embedding_dim);
void reset_embedding_table(const Tensor& weight, std::optional<int64_t> padding_idx, Generator* gen);
// ", max_norm=1.0" and ", norm_type=1.0" where set, as PyTorch's reprs show them.
std::string embedding_norm_repr(std::optional<double> max_norm, double norm_type);

class Embedding : public Layer {
 public:
  explicit Embedding(const EmbeddingOptions& options, Generator* gen = nullptr);
  Embedding(int64_t num_embeddings, int64_t embedding_dim) : Embedding(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  // N(0, 1) weights (PyTorch's default), the padding row zeroed.
  void reset_parameters(Generator* gen = nullptr);
  Tensor forward(const Tensor& indices) override;  // integer [*] -> [*, embedding_dim]
  std::string describe() const override;           // PyTorch's repr: "Embedding(1000, 64, max_norm=1.0)"
  std::string type_name() const override { return "Embedding"; }
  ModulePtr clone_structure() const override { return std::make_shared<Embedding>(options); }
  EmbeddingOptions options;
  Tensor weight;  // [num_embeddings, embedding_dim]
};

struct Conv1dOptions {
  int64_t in_channels, out_channels, kernel_size;
  int64_t stride_ = 1, padding_ = 0, dilation_ = 1, groups_ = 1;
  bool bias_ = true;
  bool same_ = false;  // padding "same" (stride 1)

  Conv1dOptions(int64_t in, int64_t out, int64_t k) : in_channels(in), out_channels(out), kernel_size(k) {}
  Conv1dOptions& stride(int64_t s) { stride_ = s; return *this; }
  Conv1dOptions& padding(int64_t p) { padding_ = p; same_ = false; return *this; }
  Conv1dOptions& padding_same() { same_ = true; return *this; }
  Conv1dOptions& dilation(int64_t d) { dilation_ = d; return *this; }
  Conv1dOptions& groups(int64_t g) { groups_ = g; return *this; }
  Conv1dOptions& bias(bool b) { bias_ = b; return *this; }
};

class Conv1d : public Layer {
 public:
  explicit Conv1d(const Conv1dOptions& options, Generator* gen = nullptr);
  // PyTorch's default: kaiming_uniform_(a = sqrt(5)), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  void reset_parameters(Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;  // [N, C, L] -> [N, O, L']
  std::string describe() const override;     // "Conv1d(4 -> 8, k3, bias)"
  std::string type_name() const override { return "Conv1d"; }
  ModulePtr clone_structure() const override { return std::make_shared<Conv1d>(options); }
  Conv1dOptions options;
  Tensor weight;  // [out, in/groups, k]
  Tensor bias;    // [out]
};

struct ConvTranspose1dOptions {
  int64_t in_channels, out_channels, kernel_size;
  int64_t stride_ = 1, padding_ = 0, output_padding_ = 0, groups_ = 1, dilation_ = 1;
  bool bias_ = true;

  ConvTranspose1dOptions(int64_t in, int64_t out, int64_t k) : in_channels(in), out_channels(out), kernel_size(k) {}
  ConvTranspose1dOptions& stride(int64_t s) { stride_ = s; return *this; }
  ConvTranspose1dOptions& padding(int64_t p) { padding_ = p; return *this; }
  ConvTranspose1dOptions& output_padding(int64_t p) { output_padding_ = p; return *this; }
  ConvTranspose1dOptions& groups(int64_t g) { groups_ = g; return *this; }
  ConvTranspose1dOptions& bias(bool b) { bias_ = b; return *this; }
  ConvTranspose1dOptions& dilation(int64_t d) { dilation_ = d; return *this; }
};

// PyTorch's ConvTranspose1d: the gradient of a Conv1d with respect to its input, as a layer (weight
// [in, out/groups, k], PyTorch's initialisation).
class ConvTranspose1d : public Layer {
 public:
  explicit ConvTranspose1d(const ConvTranspose1dOptions& options, Generator* gen = nullptr);
  void reset_parameters(Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;  // [N, C, L] -> [N, O, L'] (or unbatched [C, L])
  std::string describe() const override;     // "ConvTranspose1d(4 -> 8, k3, stride 2, bias)"
  std::string type_name() const override { return "ConvTranspose1d"; }
  ModulePtr clone_structure() const override { return std::make_shared<ConvTranspose1d>(options); }
  ConvTranspose1dOptions options;
  Tensor weight;  // [in, out/groups, k]
  Tensor bias;    // [out]
};

}  // namespace minidl::nn
