// Layers that only reshape or pass data through: Flatten and Identity.
#pragma once
#include "nn/module.h"

namespace minidl::nn {

struct FlattenOptions {
  int64_t start_dim_ = 1;  // first dim to flatten (dim 0, the batch, is kept by default)
  int64_t end_dim_ = -1;   // last dim to flatten

  FlattenOptions& start_dim(int64_t d) { start_dim_ = d; return *this; }
  FlattenOptions& end_dim(int64_t d) { end_dim_ = d; return *this; }
};

// [B, C, H, W] -> [B, C*H*W] with the defaults.
class Flatten : public Layer {
 public:
  explicit Flatten(const FlattenOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Flatten"; }
  ModulePtr clone_structure() const override { return std::make_shared<Flatten>(options); }
  std::string describe() const override;  // "Flatten(start_dim=1, end_dim=-1)"
  FlattenOptions options;
};

// Returns its input.
class Identity : public Layer {
 public:
  Tensor forward(const Tensor& input) override { return input; }
  std::string type_name() const override { return "Identity"; }
  ModulePtr clone_structure() const override { return std::make_shared<Identity>(); }
  std::string describe() const override { return "Identity()"; }
};

}  // namespace minidl::nn
