// Convolution-network layers: Conv2d, ConvTranspose2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d,
// AdaptiveMaxPool2d, BatchNorm1d/2d and
// Dropout2d, as modules over the ops in ops/nn_ops.h (PyTorch's defaults and initialisation).
#pragma once
#include <array>
#include <optional>

#include "nn/module.h"
#include "ops/nn_ops.h"

namespace minidl::nn {

struct Conv2dOptions {
  int64_t in_channels, out_channels;
  Size2 kernel_size;
  Size2 stride_ = {1, 1};
  Size2 padding_ = {0, 0};
  bool same_ = false;           // padding "same" (stride 1)
  Size2 dilation_ = {1, 1};
  int64_t groups_ = 1;
  bool bias_ = true;

  Conv2dOptions(int64_t in, int64_t out, int64_t k) : in_channels(in), out_channels(out), kernel_size{k, k} {}
  Conv2dOptions& stride(int64_t s) { stride_ = {s, s}; return *this; }
  Conv2dOptions& padding(int64_t p) { padding_ = {p, p}; same_ = false; return *this; }
  Conv2dOptions& padding_same() { same_ = true; return *this; }
  Conv2dOptions& dilation(int64_t d) { dilation_ = {d, d}; return *this; }
  Conv2dOptions& groups(int64_t g) { groups_ = g; return *this; }
  Conv2dOptions& bias(bool b) { bias_ = b; return *this; }
};

class Conv2d : public Layer {
 public:
  explicit Conv2d(const Conv2dOptions& options, Generator* gen = nullptr);
  Conv2d(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1, int64_t padding = 0, bool bias = true)
      : Conv2d(Conv2dOptions(in, out, kernel).stride(stride).padding(padding).bias(bias)) {}
  void reset_parameters(Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;  // [N, C, H, W] -> [N, O, H', W']
  std::string describe() const override;
  std::string type_name() const override { return "Conv2d"; }
  ModulePtr clone_structure() const override { return std::make_shared<Conv2d>(options); }

  Conv2dOptions options;
  Tensor weight;  // [out, in/groups, kh, kw]
  Tensor bias;    // [out]
};

// PyTorch's default initialisation of every convolution (1-D and 2-D, transposed or not):
// kaiming_uniform_(a = sqrt(5)) on the weight, whose fan_in is weight.size(1) times the kernel's
// size, and the bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
void reset_conv_parameters(const Tensor& weight, const Tensor& bias, Generator* gen);

struct ConvTranspose2dOptions {
  int64_t in_channels, out_channels;
  Size2 kernel_size;
  Size2 stride_ = {1, 1};
  Size2 padding_ = {0, 0};
  Size2 output_padding_ = {0, 0};
  int64_t groups_ = 1;
  bool bias_ = true;
  Size2 dilation_ = {1, 1};

  ConvTranspose2dOptions(int64_t in, int64_t out, int64_t k) : in_channels(in), out_channels(out), kernel_size{k, k} {}
  ConvTranspose2dOptions& stride(int64_t s) { stride_ = {s, s}; return *this; }
  ConvTranspose2dOptions& padding(int64_t p) { padding_ = {p, p}; return *this; }
  ConvTranspose2dOptions& output_padding(int64_t p) { output_padding_ = {p, p}; return *this; }
  ConvTranspose2dOptions& groups(int64_t g) { groups_ = g; return *this; }
  ConvTranspose2dOptions& bias(bool b) { bias_ = b; return *this; }
  ConvTranspose2dOptions& dilation(int64_t d) { dilation_ = {d, d}; return *this; }
};

// PyTorch's ConvTranspose2d (padding_mode "zeros", the only one PyTorch allows): the gradient of a
// Conv2d with respect to its input, as a layer. Weight [in, out/groups, kh, kw], so the default
// init's fan_in is out/groups * kh * kw, as PyTorch's.
class ConvTranspose2d : public Layer {
 public:
  explicit ConvTranspose2d(const ConvTranspose2dOptions& options, Generator* gen = nullptr);
  void reset_parameters(Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;  // [N, C, H, W] -> [N, O, H', W'] (or unbatched)
  // PyTorch's forward(input, output_size): the output's spatial size, as {H', W'} or the whole
  // shape, picks the output padding; it must lie within stride - 1 of the smallest output.
  // (Forward hooks run only through operator(), which takes no output size.)
  Tensor forward(const Tensor& x, const std::vector<int64_t>& output_size);
  std::string describe() const override;
  std::string type_name() const override { return "ConvTranspose2d"; }
  ModulePtr clone_structure() const override { return std::make_shared<ConvTranspose2d>(options); }

  ConvTranspose2dOptions options;
  Tensor weight;  // [in, out/groups, kh, kw]
  Tensor bias;    // [out]
};

// What MaxPool2d and AvgPool2d share: a square kernel, a stride (0: the kernel size) and a padding,
// and describe() as "<type_name>(kxk, stride s)".
class SquarePool2d : public Layer {
 public:
  std::string describe() const override;

 protected:
  SquarePool2d(int64_t kernel, int64_t stride, int64_t padding) : k_(kernel), s_(stride ? stride : kernel), p_(padding) {}
  // The options after the stride that differ from PyTorch's defaults, each as ", name value".
  virtual std::string describe_options() const { return ""; }
  Size2 kernel() const { return {k_, k_}; }
  Size2 stride() const { return {s_, s_}; }
  Size2 padding() const { return {p_, p_}; }

 private:
  int64_t k_, s_, p_;
};

// PyTorch's MaxPool2d(kernel_size, stride, padding, dilation, ceil_mode) with square windows.
class MaxPool2d : public SquarePool2d {
 public:
  explicit MaxPool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0, int64_t dilation = 1, bool ceil_mode = false)
      : SquarePool2d(kernel, stride, padding), dilation_(dilation), ceil_mode_(ceil_mode) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "MaxPool2d"; }
  ModulePtr clone_structure() const override {
    return std::make_shared<MaxPool2d>(kernel()[0], stride()[0], padding()[0], dilation_, ceil_mode_);
  }

 private:
  std::string describe_options() const override;
  int64_t dilation_;
  bool ceil_mode_;
};

// PyTorch's AvgPool2d(kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
// with square windows. divisor_override 0 is refused (at forward, as PyTorch).
class AvgPool2d : public SquarePool2d {
 public:
  explicit AvgPool2d(int64_t kernel, int64_t stride = 0, int64_t padding = 0, bool ceil_mode = false,
                     bool count_include_pad = true, std::optional<int64_t> divisor_override = std::nullopt)
      : SquarePool2d(kernel, stride, padding),
        ceil_mode_(ceil_mode),
        count_include_pad_(count_include_pad),
        divisor_override_(divisor_override) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "AvgPool2d"; }
  ModulePtr clone_structure() const override {
    return std::make_shared<AvgPool2d>(kernel()[0], stride()[0], padding()[0], ceil_mode_, count_include_pad_,
                                       divisor_override_);
  }

 private:
  std::string describe_options() const override;
  bool ceil_mode_, count_include_pad_;
  std::optional<int64_t> divisor_override_;
};

class AdaptiveAvgPool2d : public Layer {
 public:
  explicit AdaptiveAvgPool2d(Size2 output_size) : out_(output_size) {}
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  std::string type_name() const override { return "AdaptiveAvgPool2d"; }
  ModulePtr clone_structure() const override { return std::make_shared<AdaptiveAvgPool2d>(out_); }

 private:
  Size2 out_;
};

// PyTorch's AdaptiveMaxPool2d(output_size); adaptive_max_pool2d_with_indices gives the indices.
class AdaptiveMaxPool2d : public Layer {
 public:
  explicit AdaptiveMaxPool2d(Size2 output_size) : out_(output_size) {}
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  std::string type_name() const override { return "AdaptiveMaxPool2d"; }
  ModulePtr clone_structure() const override { return std::make_shared<AdaptiveMaxPool2d>(out_); }

 private:
  Size2 out_;
};

// BatchNorm over [N, C] (1d) or [N, C, H, W] (2d), PyTorch's BatchNorm1d/2d(num_features, eps,
// momentum, affine, track_running_stats). Under autocast it takes a low-precision input with its
// f32 weight and running statistics, computes statistics in f32 and returns the input dtype.
// momentum nullopt (PyTorch's momentum=None): the running statistics are the cumulative average
// over all training batches (factor 1 / num_batches_tracked). affine false: no weight and bias.
// track_running_stats false: no running_mean, running_var and num_batches_tracked (empty slots,
// not in the state dict), and batch statistics in evaluation mode too.
class BatchNorm : public Layer {
 public:
  BatchNorm(int64_t features, int expected_dims, double eps = 1e-5, std::optional<double> momentum = 0.1,
            bool affine = true, bool track_running_stats = true);
  Tensor forward(const Tensor& x) override;
  // relu(forward(x)) in one op (batch_norm_relu: the same values, one pass fewer each way).
  // Sequential calls it for a BatchNorm followed by a ReLU. Both run unfused, through nn::call,
  // when the BatchNorm has hooks (nn/module_hooks.h).
  Tensor forward_relu(const Tensor& x);
  // relu(forward(x) + residual) in one op (batch_norm_add_relu): a ResNet block's tail.
  Tensor forward_add_relu(const Tensor& x, const Tensor& residual);
  std::string describe() const override;
  std::string type_name() const override { return expected_dims_ == 2 ? "BatchNorm1d" : "BatchNorm2d"; }
  ModulePtr clone_structure() const override;  // a BatchNorm1d or BatchNorm2d of the same configuration
  // PyTorch's bn.momentum attribute (nullopt: the cumulative average); update_bn sets it.
  std::optional<double> momentum() const { return momentum_; }
  void set_momentum(std::optional<double> momentum);
  // Statistics over a batch split across processes (dist::convert_sync_batchnorm sets this: PyTorch's
  // SyncBatchNorm): while set, training mode normalizes with the global batch's statistics through
  // batch_norm_synced (ops/nn_ops.h); evaluation mode is unchanged. An empty function turns it off.
  void set_batch_stats_all_sum(AllSum all_sum) { all_sum_ = std::move(all_sum); }
  bool synced() const { return all_sum_ != nullptr; }

  Tensor weight, bias, running_mean, running_var, num_batches_tracked;  // undefined when not kept

 private:
  Tensor normalize(const Tensor& x, bool relu, const Tensor& residual = Tensor());

  int64_t features_;
  int expected_dims_;
  double eps_;
  std::optional<double> momentum_;
  bool track_running_stats_;
  AllSum all_sum_;
};
struct BatchNorm1d : BatchNorm {
  explicit BatchNorm1d(int64_t features, double eps = 1e-5, std::optional<double> momentum = 0.1, bool affine = true,
                       bool track_running_stats = true)
      : BatchNorm(features, 2, eps, momentum, affine, track_running_stats) {}
};
struct BatchNorm2d : BatchNorm {
  explicit BatchNorm2d(int64_t features, double eps = 1e-5, std::optional<double> momentum = 0.1, bool affine = true,
                       bool track_running_stats = true)
      : BatchNorm(features, 4, eps, momentum, affine, track_running_stats) {}
};

class Dropout2d : public Layer {
 public:
  explicit Dropout2d(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  std::string type_name() const override { return "Dropout2d"; }
  ModulePtr clone_structure() const override { return std::make_shared<Dropout2d>(p_); }

 private:
  double p_;
};

}  // namespace minidl::nn
