// nn::Linear: y = x W^T + b, with PyTorch's default initialisation (kaiming_uniform_(a=sqrt(5))
// weights, i.e. U(-1/sqrt(in), 1/sqrt(in)), and the same bound for the bias).
#pragma once
#include <cstdint>

#include "nn/module.h"

namespace minidl {
class Generator;  // framework/generator.h
}  // namespace minidl

namespace minidl::nn {

struct LinearOptions {
  int64_t in_features_;   // size of each input sample
  int64_t out_features_;  // size of each output sample
  bool bias_ = true;      // learn an additive bias

  LinearOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  LinearOptions& bias(bool b) { bias_ = b; return *this; }
};

class Linear : public Layer {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true)
      : Linear(LinearOptions(in_features, out_features).bias(bias)) {}
  explicit Linear(const LinearOptions& options, Generator* gen = nullptr);

  // Re-draws weight and bias with PyTorch's defaults from gen (the default generator when null).
  void reset_parameters(Generator* gen = nullptr);
  // [*, in_features] -> [*, out_features]
  Tensor forward(const Tensor& input) override;
  std::string describe() const override;  // "Linear(784 -> 256, bias)"
  std::string type_name() const override { return "Linear"; }
  ModulePtr clone_structure() const override { return std::make_shared<Linear>(options); }

  LinearOptions options;
  Tensor weight;  // [out_features, in_features]
  Tensor bias;    // [out_features], undefined without bias
};

}  // namespace minidl::nn
