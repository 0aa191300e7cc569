// The activation layers of torch.nn that take options and have no parameters: CELU(alpha),
// Softshrink(lambd), Hardshrink(lambd), Threshold(threshold, value) and GLU(dim). Their
// option-free companions (Hardswish, Mish, SELU, ...) are in nn/activation.h.
#pragma once
#include <string>

#include "nn/module.h"

namespace minidl::nn {

// CELU(alpha): max(0, x) + min(0, alpha (exp(x / alpha) - 1)); alpha 0 is an error.
class CELU : public Layer {
 public:
  explicit CELU(double alpha = 1.0);
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "CELU"; }
  ModulePtr clone_structure() const override { return std::make_shared<CELU>(alpha); }
  std::string describe() const override;  // "CELU(alpha=1)"
  double alpha;
};

// Softshrink(lambd): x - lambd above lambd, x + lambd below -lambd, 0 between; lambd >= 0.
class Softshrink : public Layer {
 public:
  explicit Softshrink(double lambd = 0.5);
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Softshrink"; }
  ModulePtr clone_structure() const override { return std::make_shared<Softshrink>(lambd); }
  std::string describe() const override;  // "Softshrink(0.5)"
  double lambd;
};

// Hardshrink(lambd): x outside [-lambd, lambd], 0 inside.
class Hardshrink : public Layer {
 public:
  explicit Hardshrink(double lambd = 0.5) : lambd(lambd) {}
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Hardshrink"; }
  ModulePtr clone_structure() const override { return std::make_shared<Hardshrink>(lambd); }
  std::string describe() const override;  // "Hardshrink(0.5)"
  double lambd;
};

// Threshold(threshold, value): value where x <= threshold, x elsewhere.
class Threshold : public Layer {
 public:
  Threshold(double threshold, double value) : threshold(threshold), value(value) {}
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Threshold"; }
  ModulePtr clone_structure() const override { return std::make_shared<Threshold>(threshold, value); }
  std::string describe() const override;  // "Threshold(threshold=0.1, value=20)"
  double threshold, value;
};

// GLU(dim): the first half of the input along dim times the sigmoid of the second half.
class GLU : public Layer {
 public:
  explicit GLU(int64_t dim = -1) : dim(dim) {}
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "GLU"; }
  ModulePtr clone_structure() const override { return std::make_shared<GLU>(dim); }
  std::string describe() const override;  // "GLU(dim=-1)"
  int64_t dim;
};

}  // namespace minidl::nn
