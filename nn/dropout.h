// nn::Dropout: zeroes elements with probability p and scales the rest by 1/(1-p) in training mode;
// the identity in eval mode.
#pragma once
#include "nn/module.h"

namespace minidl {
class Generator;  // framework/generator.h
}  // namespace minidl

namespace minidl::nn {

struct DropoutOptions {
  double p_ = 0.5;  // probability of an element to be zeroed, in [0, 1]

  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT: implicit, Dropout(0.2) reads naturally
  DropoutOptions& p(double v) { p_ = v; return *this; }
};

class Dropout : public Layer {
 public:
  // Masks are drawn from gen (the default generator when null); gen must outlive the layer.
  explicit Dropout(const DropoutOptions& options = {}, Generator* gen = nullptr);
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Dropout"; }
  ModulePtr clone_structure() const override { return std::make_shared<Dropout>(options, gen_); }
  std::string describe() const override;  // "Dropout(p=0.5)"
  DropoutOptions options;

 private:
  Generator* gen_;
};

}  // namespace minidl::nn
