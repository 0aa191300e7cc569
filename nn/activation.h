// Activation layers: ReLU, LeakyReLU, GELU, SiLU, ELU, Softplus, Hardtanh, ReLU6, PReLU, Sigmoid,
// Tanh, Softmax, LogSoftmax, and the option-free Hardswish, Hardsigmoid, Mish, SELU, LogSigmoid,
// Softsign and Tanhshrink (the rest of torch.nn's with options: nn/activation_more.h). Each is a
// Layer whose forward applies the op of the same name from ops/ops.h.
#pragma once
#include <string>

#include "nn/module.h"
#include "ops/ops.h"

namespace minidl::nn {

// A layer without parameters or options whose forward is one op: nn::ReLU is
// ElementwiseLayer<"ReLU", relu>. Its type_name() is Name and it prints as "Name()", as torch's.
template <const char* Name, Tensor (*Op)(const Tensor&)>
class ElementwiseLayer : public Layer {
 public:
  Tensor forward(const Tensor& input) override {
    auto scope = forward_scope();
    return Op(input);
  }
  std::string type_name() const override { return Name; }
  ModulePtr clone_structure() const override { return std::make_shared<ElementwiseLayer>(); }
  std::string describe() const override { return std::string(Name) + "()"; }
};

namespace layer_names {
inline constexpr char kReLU[] = "ReLU", kSiLU[] = "SiLU", kReLU6[] = "ReLU6", kSigmoid[] = "Sigmoid", kTanh[] = "Tanh",
                      kHardswish[] = "Hardswish", kHardsigmoid[] = "Hardsigmoid", kMish[] = "Mish", kSELU[] = "SELU",
                      kLogSigmoid[] = "LogSigmoid", kSoftsign[] = "Softsign", kTanhshrink[] = "Tanhshrink";
}  // namespace layer_names

using ReLU = ElementwiseLayer<layer_names::kReLU, &minidl::relu>;
using SiLU = ElementwiseLayer<layer_names::kSiLU, &minidl::silu>;
using ReLU6 = ElementwiseLayer<layer_names::kReLU6, &minidl::relu6>;
using Sigmoid = ElementwiseLayer<layer_names::kSigmoid, &minidl::sigmoid>;
using Tanh = ElementwiseLayer<layer_names::kTanh, &minidl::tanh>;
using Hardswish = ElementwiseLayer<layer_names::kHardswish, &minidl::hardswish>;
using Hardsigmoid = ElementwiseLayer<layer_names::kHardsigmoid, &minidl::hardsigmoid>;
using Mish = ElementwiseLayer<layer_names::kMish, &minidl::mish>;
using SELU = ElementwiseLayer<layer_names::kSELU, &minidl::selu>;
using LogSigmoid = ElementwiseLayer<layer_names::kLogSigmoid, &minidl::logsigmoid>;
using Softsign = ElementwiseLayer<layer_names::kSoftsign, &minidl::softsign>;
using Tanhshrink = ElementwiseLayer<layer_names::kTanhshrink, &minidl::tanhshrink>;

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

class Softmax : public Layer {
 public:
  explicit Softmax(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Softmax"; }
  ModulePtr clone_structure() const override { return std::make_shared<Softmax>(dim); }
  std::string describe() const override;  // "Softmax(dim=1)"
  int64_t dim;
};

// softmax(-x) along dim.
class Softmin : public Layer {
 public:
  explicit Softmin(int64_t dim) : dim(dim) {}
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Softmin"; }
  ModulePtr clone_structure() const override { return std::make_shared<Softmin>(dim); }
  std::string describe() const override;  // "Softmin(dim=1)"
  int64_t dim;
};

// Softmax over the channels of [N, C, H, W] or [C, H, W] (dim -3).
class Softmax2d : public Layer {
 public:
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Softmax2d"; }
  ModulePtr clone_structure() const override { return std::make_shared<Softmax2d>(); }
  std::string describe() const override { return "Softmax2d()"; }
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
