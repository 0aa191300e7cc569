// nn::Unfold and nn::Fold, as torch.nn's: sliding blocks of an image as columns (im2col) and the
// columns summed back into an image (col2im), through ops/nn_ops.h's unfold and fold.
#pragma once
#include "nn/module.h"
#include "ops/nn_ops.h"

namespace minidl::nn {

// [N, C, H, W] -> [N, C * kH * kW, L]
class Unfold : public Layer {
 public:
  explicit Unfold(Size2 kernel_size, Size2 dilation = {1, 1}, Size2 padding = {0, 0}, Size2 stride = {1, 1})
      : kernel_size(kernel_size), dilation(dilation), padding(padding), stride(stride) {}
  Tensor forward(const Tensor& x) override;
  // As torch's repr, a pair of equal sizes as one number: "Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=1)"
  std::string describe() const override;
  std::string type_name() const override { return "Unfold"; }
  ModulePtr clone_structure() const override { return std::make_shared<Unfold>(kernel_size, dilation, padding, stride); }
  Size2 kernel_size, dilation, padding, stride;
};

// [N, C * kH * kW, L] -> [N, C, output_size]
class Fold : public Layer {
 public:
  Fold(Size2 output_size, Size2 kernel_size, Size2 dilation = {1, 1}, Size2 padding = {0, 0}, Size2 stride = {1, 1})
      : output_size(output_size), kernel_size(kernel_size), dilation(dilation), padding(padding), stride(stride) {}
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;  // "Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=1)"
  std::string type_name() const override { return "Fold"; }
  ModulePtr clone_structure() const override {
    return std::make_shared<Fold>(output_size, kernel_size, dilation, padding, stride);
  }
  Size2 output_size, kernel_size, dilation, padding, stride;
};

}  // namespace minidl::nn
