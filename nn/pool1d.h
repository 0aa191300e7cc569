// 1-D pooling layers as torch.nn's: MaxPool1d, AvgPool1d, AdaptiveAvgPool1d, AdaptiveMaxPool1d over
// [N, C, L] or unbatched [C, L] (ops/nn_ops.h's 1-D pools), printed as torch's repr. The indices of
// max pooling come from the functional max_pool1d_with_indices / adaptive_max_pool1d_with_indices.
#pragma once
#include <cstdint>

#include "nn/module.h"

namespace minidl::nn {

// MaxPool1d(kernel_size, stride (0: the kernel size), padding, dilation, ceil_mode).
class MaxPool1d : public Layer {
 public:
  explicit MaxPool1d(int64_t kernel, int64_t stride = 0, int64_t padding = 0, int64_t dilation = 1, bool ceil_mode = false)
      : kernel_(kernel), stride_(stride ? stride : kernel), padding_(padding), dilation_(dilation), ceil_mode_(ceil_mode) {}
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;  // "MaxPool1d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)"
  std::string type_name() const override { return "MaxPool1d"; }
  ModulePtr clone_structure() const override {
    return std::make_shared<MaxPool1d>(kernel_, stride_, padding_, dilation_, ceil_mode_);
  }

 private:
  int64_t kernel_, stride_, padding_, dilation_;
  bool ceil_mode_;
};

// AvgPool1d(kernel_size, stride (0: the kernel size), padding, ceil_mode, count_include_pad).
class AvgPool1d : public Layer {
 public:
  explicit AvgPool1d(int64_t kernel, int64_t stride = 0, int64_t padding = 0, bool ceil_mode = false,
                     bool count_include_pad = true)
      : kernel_(kernel), stride_(stride ? stride : kernel), padding_(padding), ceil_mode_(ceil_mode),
        count_include_pad_(count_include_pad) {}
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;  // "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
  std::string type_name() const override { return "AvgPool1d"; }
  ModulePtr clone_structure() const override {
    return std::make_shared<AvgPool1d>(kernel_, stride_, padding_, ceil_mode_, count_include_pad_);
  }

 private:
  int64_t kernel_, stride_, padding_;
  bool ceil_mode_, count_include_pad_;
};

// AdaptiveAvgPool1d(output_size) and AdaptiveMaxPool1d(output_size).
template <bool IsMax>
class AdaptivePool1d : public Layer {
 public:
  explicit AdaptivePool1d(int64_t output_size) : out_(output_size) {}
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;  // "AdaptiveAvgPool1d(output_size=4)"
  std::string type_name() const override { return IsMax ? "AdaptiveMaxPool1d" : "AdaptiveAvgPool1d"; }
  ModulePtr clone_structure() const override { return std::make_shared<AdaptivePool1d>(out_); }

 private:
  int64_t out_;
};
using AdaptiveAvgPool1d = AdaptivePool1d<false>;
using AdaptiveMaxPool1d = AdaptivePool1d<true>;

}  // namespace minidl::nn
