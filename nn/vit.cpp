// The zoo's vision transformer.
#include "nn/vit.h"

#include "framework/error.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace minidl::nn::models {

ViT::ViT(const ViTOptions& o) : options(o) {
  MINIDL_CHECK(o.patch_size > 0 && o.image_size % o.patch_size == 0, "ViT", "image size ", o.image_size,
               " must be a multiple of the patch size ", o.patch_size);
  const int64_t side = o.image_size / o.patch_size;
  patch_embed = register_module("patch_embed", std::make_shared<Conv2d>(
      Conv2dOptions(o.channels, o.dim, o.patch_size).stride(o.patch_size)));
  cls_token = register_parameter("cls_token", zeros({1, 1, o.dim}));
  pos_embed = register_parameter("pos_embed", empty({1, 1 + side * side, o.dim}));
  init::normal_(pos_embed, 0.0, 0.02);  // as ViT implementations (timm: trunc_normal_(std=.02))
  encoder = register_module("encoder", std::make_shared<Sequential>());
  for (int64_t i = 0; i < o.depth; ++i)
    encoder->push_back(std::make_shared<TransformerEncoderLayer>(TransformerEncoderLayerOptions(o.dim, o.heads)
                                                                     .dim_feedforward(o.mlp_dim)
                                                                     .dropout(o.dropout)
                                                                     .activation(Activation::GELU)
                                                                     .batch_first(true)
                                                                     .norm_first(true)));
  norm = register_module("norm", std::make_shared<LayerNorm>(LayerNormOptions({o.dim})));
  head = register_module("head", std::make_shared<Linear>(o.dim, o.classes));
}

Tensor ViT::forward(const Tensor& x) {
  auto scope = forward_scope();
  const int64_t N = x.size(0);
  Tensor t = call(patch_embed, x).flatten(2).transpose(1, 2);            // [N, 16, dim]
  Tensor cls = cls_token.expand({N, 1, options.dim});                     // [N, 1, dim]
  Tensor h = add(cat({cast(cls, t.dtype()), t}, 1), pos_embed);            // [N, 17, dim]
  h = call(norm, call(encoder, h));                                       // [N, 17, dim]
  return call(head, h.select(1, 0));                                      // [N, classes]
}

std::string ViT::describe() const {
  const auto& o = options;
  return detail::concat("ViT(", o.channels, "x", o.image_size, "x", o.image_size, ", ", o.patch_size, "x", o.patch_size,
                        " patches, dim ", o.dim, ", depth ", o.depth, ", ", o.heads, " heads -> ", o.classes, ")");
}

}  // namespace minidl::nn::models
