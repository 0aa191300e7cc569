// Layers that work across channels, as torch.nn's: ChannelShuffle (ShuffleNet's interleaving of
// channel groups) and LocalResponseNorm (AlexNet's normalization over neighbouring channels);
// describe() is PyTorch's repr.
#pragma once
#include <cstdint>

#include "nn/module.h"

namespace minidl::nn {

class ChannelShuffle : public Layer {
 public:
  explicit ChannelShuffle(int64_t groups);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;  // "ChannelShuffle(groups=3)"
  std::string type_name() const override { return "ChannelShuffle"; }
  ModulePtr clone_structure() const override { return std::make_shared<ChannelShuffle>(groups_); }

 private:
  int64_t groups_;
};

class LocalResponseNorm : public Layer {
 public:
  explicit LocalResponseNorm(int64_t size, double alpha = 1e-4, double beta = 0.75, double k = 1.0);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;  // "LocalResponseNorm(3, alpha=0.0001, beta=0.75, k=1.0)"
  std::string type_name() const override { return "LocalResponseNorm"; }
  ModulePtr clone_structure() const override { return std::make_shared<LocalResponseNorm>(size_, alpha_, beta_, k_); }

 private:
  int64_t size_;
  double alpha_, beta_, k_;
};

}  // namespace minidl::nn
