// The model zoo: ready-made networks for MNIST-sized (1x28x28) and CIFAR-sized (3x32x32) inputs,
// for users to train or copy. make_model(name) builds one by name (the train program's --model).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "nn/activation.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "nn/shape_layers.h"

namespace minidl::nn::models {

// Flatten -> (Linear -> ReLU) per hidden width -> Linear. MLP(784, {256, 256}, 10) is the default.
class MLP : public Layer {
 public:
  MLP(int64_t in_features, std::vector<int64_t> hidden, int64_t classes);
  Tensor forward(const Tensor& x) override;  // [N, ...] -> [N, classes]
  std::string describe() const override;

 private:
  std::vector<std::shared_ptr<Linear>> layers_;
};

// Builds a zoo model by name: "mlp" (784-256-256-10), and the CNNs where available.
// Throws naming the unknown model and the known ones.
std::shared_ptr<Layer> make_model(const std::string& name);
std::vector<std::string> model_names();

}  // namespace minidl::nn::models
