// nn::Linear: y = x W^T + b, with PyTorch's default initialisation (kaiming_uniform_(a=sqrt(5))
// weights, i.e. U(-1/sqrt(in), 1/sqrt(in)), and the same bound for the bias); nn::Bilinear:
// y_o = x1^T W_o x2 + b_o, weight and bias U(-1/sqrt(in1), 1/sqrt(in1)), as torch.nn's.
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

class Bilinear : public Module {
 public:
  Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias = true, Generator* gen = nullptr);
  void reset_parameters(Generator* gen = nullptr);
  // x1 [*, in1], x2 [*, in2] -> [*, out]
  Tensor forward(const Tensor& x1, const Tensor& x2);
  Tensor operator()(const Tensor& x1, const Tensor& x2) { return forward(x1, x2); }
  // "Bilinear(in1_features=3, in2_features=4, out_features=5, bias=True)", as torch's repr
  std::string describe() const override;
  std::string type_name() const override { return "Bilinear"; }
  ModulePtr clone_structure() const override {
    return std::make_shared<Bilinear>(in1_features, in2_features, out_features, bias.defined());
  }

  const int64_t in1_features, in2_features, out_features;
  Tensor weight;  // [out, in1, in2]
  Tensor bias;    // [out], undefined without bias
};

}  // namespace minidl::nn
