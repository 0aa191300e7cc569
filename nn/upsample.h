// Upsample: torch.nn.Upsample(size | scale_factor, mode, align_corners, recompute_scale_factor) as a
// module over interpolate (ops/nn_ops.h); PixelShuffle and PixelUnshuffle over pixel_shuffle.
#pragma once
#include <string>

#include "nn/module.h"
#include "ops/nn_ops.h"

namespace minidl::nn {

class Upsample : public Layer {
 public:
  // Checks what interpolate would refuse whatever the input: both or neither of size and
  // scale_factor, align_corners with a nearest mode.
  explicit Upsample(const InterpolateOptions& options);
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Upsample"; }
  ModulePtr clone_structure() const override { return std::make_shared<Upsample>(options); }
  // PyTorch's repr: "Upsample(scale_factor=2.0, mode=nearest)", "Upsample(size=(4, 5), mode=bilinear)"
  std::string describe() const override;
  InterpolateOptions options;
};

// PixelShuffle(r): [*, C r^2, H, W] -> [*, C, H r, W r]; PixelUnshuffle(r) the inverse.
class PixelShuffle : public Layer {
 public:
  explicit PixelShuffle(int64_t upscale_factor) : upscale_factor(upscale_factor) {}
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "PixelShuffle"; }
  ModulePtr clone_structure() const override { return std::make_shared<PixelShuffle>(upscale_factor); }
  std::string describe() const override;  // "PixelShuffle(upscale_factor=2)"
  int64_t upscale_factor;
};

class PixelUnshuffle : public Layer {
 public:
  explicit PixelUnshuffle(int64_t downscale_factor) : downscale_factor(downscale_factor) {}
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "PixelUnshuffle"; }
  ModulePtr clone_structure() const override { return std::make_shared<PixelUnshuffle>(downscale_factor); }
  std::string describe() const override;  // "PixelUnshuffle(downscale_factor=2)"
  int64_t downscale_factor;
};

}  // namespace minidl::nn
