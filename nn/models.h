// The model zoo: ready-made networks for MNIST-sized (1x28x28) and CIFAR-sized (3x32x32) inputs,
// for users to train or copy. make_model(name) builds one by name (the train program's --model).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "nn/activation.h"
#include "nn/container.h"
#include "nn/conv.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "nn/shape_layers.h"

namespace minidl::nn::models {

// Flatten -> (Linear -> ReLU) per hidden width -> Linear. MLP(784, {256, 256}, 10) is the default.
class MLP : public Layer {
 public:
  MLP(int64_t in_features, std::vector<int64_t> hidden, int64_t classes);
  Tensor forward(const Tensor& x) override;  // [N, ...] -> [N, classes]
  ModulePtr clone_structure() const override;
  std::string describe() const override;

 private:
  std::vector<std::shared_ptr<Linear>> layers_;
};

// LeNet-5 for 1x28x28 inputs (conv 5x5 with padding 2 so 28x28 works as LeNet's 32x32).
class LeNet5 : public Layer {
 public:
  LeNet5();
  Tensor forward(const Tensor& x) override;  // [N, 1, 28, 28] -> [N, 10]
  std::string describe() const override { return "LeNet5(1x28x28 -> 10)"; }
  ModulePtr clone_structure() const override { return std::make_shared<LeNet5>(); }

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<Linear> fc1_, fc2_, fc3_;
};

// A small VGG-style CNN for 3x32x32: (conv-bn-relu x2, pool) x2, conv-bn-relu, pool, global
// average pool, linear.
class SmallCNN : public Layer {
 public:
  SmallCNN(int64_t classes = 10);
  Tensor forward(const Tensor& x) override;  // [N, 3, 32, 32] -> [N, classes]
  std::string describe() const override { return "SmallCNN(3x32x32 -> 10)"; }
  ModulePtr clone_structure() const override;

 private:
  std::shared_ptr<Sequential> features_;
  std::shared_ptr<Linear> head_;
};

// ResNet-20 (He et al. 2016, CIFAR variant): 3 stages of 3 basic blocks (16, 32, 64 channels),
// 1x1-conv projection shortcuts where the shape changes.
class BasicBlock : public Layer {
 public:
  BasicBlock(int64_t in, int64_t out, int64_t stride);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  ModulePtr clone_structure() const override;

 private:
  std::shared_ptr<Conv2d> conv1_, conv2_, proj_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_, proj_bn_;
};

class ResNet20 : public Layer {
 public:
  ResNet20(int64_t classes = 10);
  Tensor forward(const Tensor& x) override;  // [N, 3, 32, 32] -> [N, classes]
  std::string describe() const override { return "ResNet20(3x32x32 -> 10)"; }
  ModulePtr clone_structure() const override;

 private:
  std::shared_ptr<Conv2d> stem_;
  std::shared_ptr<BatchNorm2d> stem_bn_;
  std::shared_ptr<Sequential> stages_;
  std::shared_ptr<Linear> head_;
};

// Builds a zoo model by name: "mlp" (784-256-256-10), "lenet", "cnn" (SmallCNN), "resnet20", "vit"
// (nn/vit.h: 7x7 patches of 28x28 images, dim 64, 3 pre-norm encoder layers, 4 heads).
// Throws naming the unknown model and the known ones.
std::shared_ptr<Layer> make_model(const std::string& name);
std::vector<std::string> model_names();

}  // namespace minidl::nn::models
