// Activation layers: ReLU, LeakyReLU, GELU, SiLU, ELU, Sigmoid, Tanh, Softmax, LogSoftmax. Each is a Layer
// whose forward applies the op of the same name from ops/ops.h.
#pragma once
#include <string>

#include "nn/module.h"

namespace minidl::nn {

class ReLU : public Layer {
 public:
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "ReLU"; }
  ModulePtr clone_structure() const override { return std::make_shared<ReLU>(); }
  std::string describe() const override { return "ReLU()"; }
};

struct LeakyReLUOptions {
  double negative_slope_ = 0.01;  // slope for x < 0

  LeakyReLUOptions& negative_slope(double s) { negative_slope_ = s; return *this; }
};

class LeakyReLU : public Layer {
 public:
  explicit LeakyReLU(const LeakyReLUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "LeakyReLU"; }
  ModulePtr clone_structure() const override { return std::make_shared<LeakyReLU>(options); }
  std::string describe() const override;  // "LeakyReLU(negative_slope=0.01)"
  LeakyReLUOptions options;
};

struct GELUOptions {
  std::string approximate_ = "none";  // "none" (exact, erf) or "tanh"

  GELUOptions& approximate(std::string a) { approximate_ = std::move(a); return *this; }
};

class GELU : public Layer {
 public:
  explicit GELU(const GELUOptions& options = {});
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "GELU"; }
  ModulePtr clone_structure() const override { return std::make_shared<GELU>(options); }
  std::string describe() const override;  // "GELU(approximate='none')"
  GELUOptions options;
};

class SiLU : public Layer {
 public:
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "SiLU"; }
  ModulePtr clone_structure() const override { return std::make_shared<SiLU>(); }
  std::string describe() const override { return "SiLU()"; }
};

struct ELUOptions {
  double alpha_ = 1.0;  // value approached for x -> -inf

  ELUOptions& alpha(double a) { alpha_ = a; return *this; }
};

class ELU : public Layer {
 public:
  explicit ELU(const ELUOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "ELU"; }
  ModulePtr clone_structure() const override { return std::make_shared<ELU>(options); }
  std::string describe() const override;  // "ELU(alpha=1)"
  ELUOptions options;
};

class Sigmoid : public Layer {
 public:
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Sigmoid"; }
  ModulePtr clone_structure() const override { return std::make_shared<Sigmoid>(); }
  std::string describe() const override { return "Sigmoid()"; }
};

class Tanh : public Layer {
 public:
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Tanh"; }
  ModulePtr clone_structure() const override { return std::make_shared<Tanh>(); }
  std::string describe() const override { return "Tanh()"; }
};

class Softmax : public Layer {
 public:
  explicit Softmax(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Softmax"; }
  ModulePtr clone_structure() const override { return std::make_shared<Softmax>(dim); }
  std::string describe() const override;  // "Softmax(dim=1)"
  int64_t dim;
};

class LogSoftmax : public Layer {
 public:
  explicit LogSoftmax(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "LogSoftmax"; }
  ModulePtr clone_structure() const override { return std::make_shared<LogSoftmax>(dim); }
  std::string describe() const override;  // "LogSoftmax(dim=1)"
  int64_t dim;
};

}  // namespace minidl::nn
