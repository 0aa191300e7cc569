// The dropout layers: nn::Dropout zeroes elements with probability p and scales the rest by
// 1/(1-p) in training mode; nn::Dropout1d does so per channel of [N, C, L]; nn::AlphaDropout and
// nn::FeatureAlphaDropout (per element / per channel) keep a SELU network's mean and variance
// (ops/nn_ops.h). All are the identity in eval mode.
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

// What the dropout layers share: the options, the generator and a forward that calls their op
// with the module's training mode. Masks are drawn from gen (the default generator when null); gen
// must outlive the layer.
class DropoutLayer : public Layer {
 public:
  using Op = Tensor (*)(const Tensor& x, double p, bool training, Generator* gen);
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return name_; }
  std::string describe() const override;  // "Dropout(p=0.5)"
  DropoutOptions options;

 protected:
  DropoutLayer(const char* name, Op op, const DropoutOptions& options, Generator* gen);
  Generator* gen_;

 private:
  const char* name_;
  Op op_;
};

class Dropout : public DropoutLayer {
 public:
  explicit Dropout(const DropoutOptions& options = {}, Generator* gen = nullptr);
  ModulePtr clone_structure() const override { return std::make_shared<Dropout>(options, gen_); }
};

class Dropout1d : public DropoutLayer {
 public:
  explicit Dropout1d(const DropoutOptions& options = {}, Generator* gen = nullptr);
  ModulePtr clone_structure() const override { return std::make_shared<Dropout1d>(options, gen_); }
};

class AlphaDropout : public DropoutLayer {
 public:
  explicit AlphaDropout(const DropoutOptions& options = {}, Generator* gen = nullptr);
  ModulePtr clone_structure() const override { return std::make_shared<AlphaDropout>(options, gen_); }
};

class FeatureAlphaDropout : public DropoutLayer {
 public:
  explicit FeatureAlphaDropout(const DropoutOptions& options = {}, Generator* gen = nullptr);
  ModulePtr clone_structure() const override { return std::make_shared<FeatureAlphaDropout>(options, gen_); }
};

}  // namespace minidl::nn
