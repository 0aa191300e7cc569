#include "nn/models.h"

#include <sstream>

#include "framework/error.h"
#include "nn/vit.h"
#include "ops/ops.h"

namespace minidl::nn::models {

MLP::MLP(int64_t in_features, std::vector<int64_t> hidden, int64_t classes) {
  int64_t width = in_features;
  hidden.push_back(classes);
  for (size_t i = 0; i < hidden.size(); ++i) {
    layers_.push_back(register_module("fc" + std::to_string(i + 1), std::make_shared<Linear>(width, hidden[i])));
    width = hidden[i];
  }
}

Tensor MLP::forward(const Tensor& x) {
  auto scope = forward_scope();
  Tensor h = x.dim() == 2 ? x : x.flatten(1);          // [N, 784]
  for (size_t i = 0; i + 1 < layers_.size(); ++i)
    h = relu(call(layers_[i], h));                       // [N, hidden_i]
  return call(layers_.back(), h);                        // [N, classes]
}

ModulePtr MLP::clone_structure() const {
  std::vector<int64_t> hidden;
  for (size_t i = 0; i + 1 < layers_.size(); ++i) hidden.push_back(layers_[i]->options.out_features_);
  return std::make_shared<MLP>(layers_.front()->options.in_features_, hidden, layers_.back()->options.out_features_);
}

std::string MLP::describe() const {
  std::ostringstream os;
  os << "MLP(";
  for (size_t i = 0; i < layers_.size(); ++i) os << (i ? "-" : "") << layers_[i]->weight.size(1);
  os << "-" << layers_.back()->weight.size(0) << ", relu)";
  return os.str();
}

LeNet5::LeNet5() {
  conv1_ = register_module("conv1", std::make_shared<Conv2d>(1, 6, 5, 1, 2));
  conv2_ = register_module("conv2", std::make_shared<Conv2d>(6, 16, 5));
  fc1_ = register_module("fc1", std::make_shared<Linear>(16 * 5 * 5, 120));
  fc2_ = register_module("fc2", std::make_shared<Linear>(120, 84));
  fc3_ = register_module("fc3", std::make_shared<Linear>(84, 10));
}

Tensor LeNet5::forward(const Tensor& x) {
  auto scope = forward_scope();
  Tensor h = max_pool2d(relu(call(conv1_, x)), {2, 2});     // [N, 6, 14, 14]
  h = max_pool2d(relu(call(conv2_, h)), {2, 2});            // [N, 16, 5, 5]
  h = relu(call(fc1_, h.flatten(1)));                       // [N, 120]
  h = relu(call(fc2_, h));                                  // [N, 84]
  return call(fc3_, h);                                     // [N, 10]
}

namespace {
// The CIFAR models' images go channels-last on the CPU, as PyTorch users do with
// torch.channels_last: oneDNN's convolutions then read and write them without a reorder, and batch
// norm, ReLU, the residual adds and max pooling keep them so (bench/README.md, performance log 19).
Tensor for_convolutions(const Tensor& x) {
  return x.dim() == 4 && x.device().is_cpu() ? x.contiguous(MemoryFormat::ChannelsLast) : x;
}

void conv_bn_relu(Sequential& seq, int64_t in, int64_t out) {
  seq.push_back(AnyModule(std::make_shared<Conv2d>(Conv2dOptions(in, out, 3).padding(1).bias(false))));
  seq.push_back(AnyModule(std::make_shared<BatchNorm2d>(out)));
  seq.push_back(AnyModule(std::make_shared<ReLU>()));
}
}  // namespace

SmallCNN::SmallCNN(int64_t classes) {
  auto f = std::make_shared<Sequential>();
  conv_bn_relu(*f, 3, 32);                                 // [N, 32, 32, 32]
  conv_bn_relu(*f, 32, 32);
  f->push_back(AnyModule(std::make_shared<MaxPool2d>(2)));  // [N, 32, 16, 16]
  conv_bn_relu(*f, 32, 64);
  conv_bn_relu(*f, 64, 64);
  f->push_back(AnyModule(std::make_shared<MaxPool2d>(2)));  // [N, 64, 8, 8]
  conv_bn_relu(*f, 64, 128);
  f->push_back(AnyModule(std::make_shared<MaxPool2d>(2)));  // [N, 128, 4, 4]
  f->push_back(AnyModule(std::make_shared<AdaptiveAvgPool2d>(Size2{1, 1})));  // [N, 128, 1, 1]
  features_ = register_module("features", f);
  head_ = register_module("head", std::make_shared<Linear>(128, classes));
}

Tensor SmallCNN::forward(const Tensor& x) {
  auto scope = forward_scope();
  return call(head_, call(features_, for_convolutions(x)).flatten(1));
}

BasicBlock::BasicBlock(int64_t in, int64_t out, int64_t stride) {
  conv1_ = register_module("conv1", std::make_shared<Conv2d>(Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false)));
  bn1_ = register_module("bn1", std::make_shared<BatchNorm2d>(out));
  conv2_ = register_module("conv2", std::make_shared<Conv2d>(Conv2dOptions(out, out, 3).padding(1).bias(false)));
  bn2_ = register_module("bn2", std::make_shared<BatchNorm2d>(out));
  if (stride != 1 || in != out) {
    proj_ = register_module("proj", std::make_shared<Conv2d>(Conv2dOptions(in, out, 1).stride(stride).bias(false)));
    proj_bn_ = register_module("proj_bn", std::make_shared<BatchNorm2d>(out));
  }
}

Tensor BasicBlock::forward(const Tensor& x) {
  auto scope = forward_scope();
  Tensor h = bn1_->forward_relu(call(conv1_, x));
  Tensor shortcut = proj_ ? call(proj_bn_, call(proj_, x)) : x;
  return bn2_->forward_add_relu(call(conv2_, h), shortcut);  // relu(bn2(conv2(h)) + shortcut), one pass
}

ModulePtr BasicBlock::clone_structure() const {
  return std::make_shared<BasicBlock>(conv1_->options.in_channels, conv1_->options.out_channels, conv1_->options.stride_[0]);
}

std::string BasicBlock::describe() const {
  return detail::concat("BasicBlock(", conv1_->options.in_channels, " -> ", conv1_->options.out_channels,
                        ", stride ", conv1_->options.stride_[0], ")");
}

ModulePtr SmallCNN::clone_structure() const { return std::make_shared<SmallCNN>(head_->options.out_features_); }

ResNet20::ResNet20(int64_t classes) {
  stem_ = register_module("stem", std::make_shared<Conv2d>(Conv2dOptions(3, 16, 3).padding(1).bias(false)));
  stem_bn_ = register_module("stem_bn", std::make_shared<BatchNorm2d>(16));
  auto s = std::make_shared<Sequential>();
  int64_t in = 16;
  for (int64_t width : {16, 32, 64})
    for (int b = 0; b < 3; ++b) {
      s->push_back(AnyModule(std::make_shared<BasicBlock>(in, width, b == 0 && width != 16 ? 2 : 1)));
      in = width;
    }
  stages_ = register_module("stages", s);  // [N, 64, 8, 8]
  head_ = register_module("head", std::make_shared<Linear>(64, classes));
}

Tensor ResNet20::forward(const Tensor& x) {
  auto scope = forward_scope();
  Tensor h = stem_bn_->forward_relu(call(stem_, for_convolutions(x)));  // [N, 16, 32, 32]
  h = call(stages_, h);                                   // [N, 64, 8, 8]
  h = adaptive_avg_pool2d(h, {1, 1}).flatten(1);          // [N, 64]
  return call(head_, h);
}

std::vector<std::string> model_names() { return {"mlp", "lenet", "cnn", "resnet20", "vit"}; }

ModulePtr ResNet20::clone_structure() const { return std::make_shared<ResNet20>(head_->options.out_features_); }

std::shared_ptr<Layer> make_model(const std::string& name) {
  if (name == "mlp") return std::make_shared<MLP>(784, std::vector<int64_t>{256, 256}, 10);
  if (name == "lenet") return std::make_shared<LeNet5>();
  if (name == "cnn") return std::make_shared<SmallCNN>();
  if (name == "resnet20") return std::make_shared<ResNet20>();
  if (name == "vit") return std::make_shared<ViT>();
  std::string known;
  for (const auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
  MINIDL_FAIL("make_model", "unknown model '", name, "' (known: ", known, ")");
}

}  // namespace minidl::nn::models
