// nn::EmbeddingBag (torch.nn.EmbeddingBag): a table of embeddings reduced per bag (sum, mean or
// max) by embedding_bag (ops/sequence_ops.h); weight N(0, 1) with the padding row zeroed, as
// PyTorch's. Not supported: scale_grad_by_freq and sparse gradients.
//
//   nn::EmbeddingBag bag(nn::EmbeddingBagOptions(10000, 64).mode(EmbeddingBagMode::Sum));
//   Tensor y = bag.forward(tokens, offsets);  // [bags, 64]
#pragma once
#include <optional>

#include "nn/module.h"
#include "ops/sequence_ops.h"

namespace minidl::nn {

struct EmbeddingBagOptions {
  int64_t num_embeddings, embedding_dim;
  EmbeddingBagMode mode_ = EmbeddingBagMode::Mean;
  bool include_last_offset_ = false;
  std::optional<int64_t> padding_idx_;  // that row starts at zero and takes no part in any bag
  std::optional<double> max_norm_;      // rows a forward names are renormalised to this norm first
  double norm_type_ = 2.0;              // the p of that norm

  EmbeddingBagOptions(int64_t num, int64_t dim) : num_embeddings(num), embedding_dim(dim) {}
  EmbeddingBagOptions& mode(EmbeddingBagMode m) { mode_ = m; return *this; }
  EmbeddingBagOptions& include_last_offset(bool b) { include_last_offset_ = b; return *this; }
  EmbeddingBagOptions& padding_idx(int64_t i) { padding_idx_ = i; return *this; }
  EmbeddingBagOptions& max_norm(double v) { max_norm_ = v; return *this; }
  EmbeddingBagOptions& norm_type(double v) { norm_type_ = v; return *this; }
};

class EmbeddingBag : public Layer {
 public:
  explicit EmbeddingBag(const EmbeddingBagOptions& options, Generator* gen = nullptr);
  void reset_parameters(Generator* gen = nullptr);
  // A [B, n] index tensor: one bag a row -> [B, embedding_dim].
  Tensor forward(const Tensor& indices) override { return forward(indices, Tensor()); }
  // A 1-D index tensor with the bags' offsets (per_sample_weights: mode sum only).
  Tensor forward(const Tensor& indices, const Tensor& offsets, const Tensor& per_sample_weights = Tensor());
  std::string describe() const override;  // PyTorch's repr: "EmbeddingBag(10, 3, mode=mean)"
  std::string type_name() const override { return "EmbeddingBag"; }
  ModulePtr clone_structure() const override { return std::make_shared<EmbeddingBag>(options); }

  EmbeddingBagOptions options;
  Tensor weight;  // [num_embeddings, embedding_dim]
};

}  // namespace minidl::nn
