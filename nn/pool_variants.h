// More pooling layers, as torch.nn's: LPPool1d / LPPool2d (the p-norm of each window) and
// MaxUnpool1d / MaxUnpool2d (max pooling's partial inverse, given its indices); describe() is
// PyTorch's repr. A stride of 0 means the kernel size (PyTorch's stride=None).
#pragma once
#include <cstdint>
#include <optional>

#include "nn/module.h"
#include "ops/nn_ops.h"

namespace minidl::nn {

class LPPool2d : public Layer {
 public:
  LPPool2d(double norm_type, Size2 kernel_size, Size2 stride = {0, 0}, bool ceil_mode = false);
  Tensor forward(const Tensor& x) override;
  // "LPPool2d(norm_type=2, kernel_size=3, stride=2, ceil_mode=False)" (a square kernel and stride as one number)
  std::string describe() const override;
  std::string type_name() const override { return "LPPool2d"; }
  ModulePtr clone_structure() const override { return std::make_shared<LPPool2d>(norm_type_, kernel_, stride_, ceil_mode_); }

 private:
  double norm_type_;
  Size2 kernel_, stride_;
  bool ceil_mode_;
};

class LPPool1d : public Layer {
 public:
  LPPool1d(double norm_type, int64_t kernel_size, int64_t stride = 0, bool ceil_mode = false);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;  // "LPPool1d(norm_type=1.5, kernel_size=2, stride=None, ceil_mode=False)"
  std::string type_name() const override { return "LPPool1d"; }
  ModulePtr clone_structure() const override { return std::make_shared<LPPool1d>(norm_type_, kernel_, stride_, ceil_mode_); }

 private:
  double norm_type_;
  int64_t kernel_, stride_;
  bool ceil_mode_;
};

// forward(x, indices[, output_size]) as PyTorch's MaxUnpool2d(kernel_size, stride, padding).
class MaxUnpool2d : public Module {
 public:
  explicit MaxUnpool2d(Size2 kernel_size, Size2 stride = {0, 0}, Size2 padding = {0, 0});
  Tensor forward(const Tensor& x, const Tensor& indices, std::optional<Size2> output_size = std::nullopt);
  std::string describe() const override;  // "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"
  std::string type_name() const override { return "MaxUnpool2d"; }
  ModulePtr clone_structure() const override { return std::make_shared<MaxUnpool2d>(kernel_, stride_, padding_); }

 private:
  Size2 kernel_, stride_, padding_;
};

class MaxUnpool1d : public Module {
 public:
  explicit MaxUnpool1d(int64_t kernel_size, int64_t stride = 0, int64_t padding = 0);
  Tensor forward(const Tensor& x, const Tensor& indices, std::optional<int64_t> output_size = std::nullopt);
  std::string describe() const override;  // "MaxUnpool1d(kernel_size=(3,), stride=(2,), padding=(1,))"
  std::string type_name() const override { return "MaxUnpool1d"; }
  ModulePtr clone_structure() const override { return std::make_shared<MaxUnpool1d>(kernel_, stride_, padding_); }

 private:
  int64_t kernel_, stride_, padding_;
};

}  // namespace minidl::nn
