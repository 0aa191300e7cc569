// A small vision transformer for 1x28x28 images (the zoo's "vit"): 7x7 patches (a 7x7 stride-7
// convolution) give 16 tokens of width 64, plus a learned class token and learned position
// embeddings; pre-norm TransformerEncoderLayers (4 heads, GELU, feed-forward 128); a final
// LayerNorm and a linear head on the class token.
#pragma once
#include <memory>

#include "nn/container.h"
#include "nn/conv.h"
#include "nn/linear.h"
#include "nn/transformer.h"

namespace minidl::nn::models {

struct ViTOptions {
  int64_t image_size = 28, patch_size = 7, channels = 1, classes = 10;
  int64_t dim = 64, depth = 3, heads = 4, mlp_dim = 128;
  double dropout = 0.0;
};

class ViT : public Layer {
 public:
  explicit ViT(const ViTOptions& options = {});
  Tensor forward(const Tensor& x) override;  // [N, 1, 28, 28] -> [N, classes]
  std::string describe() const override;     // "ViT(1x28x28, 7x7 patches, dim 64, depth 3, 4 heads -> 10)"
  ModulePtr clone_structure() const override { return std::make_shared<ViT>(options); }

  ViTOptions options;
  std::shared_ptr<Conv2d> patch_embed;  // [dim, channels, patch, patch], stride patch
  Tensor cls_token;                      // [1, 1, dim]
  Tensor pos_embed;                      // [1, 1 + patches, dim]
  std::shared_ptr<Sequential> encoder;   // depth TransformerEncoderLayers, batch first, pre-norm
  std::shared_ptr<LayerNorm> norm;
  std::shared_ptr<Linear> head;
};

}  // namespace minidl::nn::models
