// Activation layers: ReLU, LeakyReLU, GELU, SiLU, ELU, Softplus, Hardtanh, ReLU6, PReLU, Sigmoid, Tanh, Softmax, LogSoftmax. Each is a Layer
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

struct SoftplusOptions {
  double beta_ = 1.0;        // softplus(x) = log(1 + exp(beta x)) / beta
  double threshold_ = 20.0;  // above beta x > threshold the layer returns x

  SoftplusOptions& beta(double b) { beta_ = b; return *this; }
  SoftplusOptions& threshold(double t) { threshold_ = t; return *this; }
};

class Softplus : public Layer {
 public:
  explicit Softplus(const SoftplusOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Softplus"; }
  ModulePtr clone_structure() const override { return std::make_shared<Softplus>(options); }
  std::string describe() const override;  // "Softplus(beta=1, threshold=20)"
  SoftplusOptions options;
};

// Hardtanh(min_val, max_val): max_val must exceed min_val, as PyTorch's module asserts.
class Hardtanh : public Layer {
 public:
  explicit Hardtanh(double min_val = -1.0, double max_val = 1.0);
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Hardtanh"; }
  ModulePtr clone_structure() const override { return std::make_shared<Hardtanh>(min_val, max_val); }
  std::string describe() const override;  // "Hardtanh(min_val=-1, max_val=1)"
  double min_val, max_val;
};

class ReLU6 : public Layer {
 public:
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "ReLU6"; }
  ModulePtr clone_structure() const override { return std::make_shared<ReLU6>(); }
  std::string describe() const override { return "ReLU6()"; }
};

// PReLU(num_parameters, init): a learned slope for x <= 0, one for all channels or one per channel
// (dim 1 of the input), parameter "weight" filled with init, as torch.nn.PReLU.
class PReLU : public Layer {
 public:
  explicit PReLU(int64_t num_parameters = 1, double init_value = 0.25);
  void reset_parameters();
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "PReLU"; }
  ModulePtr clone_structure() const override { return std::make_shared<PReLU>(num_parameters, init_value); }
  std::string describe() const override;  // "PReLU(num_parameters=1)"
  int64_t num_parameters;
  double init_value;  // PyTorch's `init`
  Tensor weight;  // [num_parameters]
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
