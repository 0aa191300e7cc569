// Layers that only reshape or pass data through: Flatten, Unflatten and Identity.
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

// Unflatten(dim, sizes): dim becomes the given sizes (one may be -1), as torch.nn.Unflatten:
// [B, 784] -> [B, 1, 28, 28] with Unflatten(1, {1, 28, 28}).
class Unflatten : public Layer {
 public:
  Unflatten(int64_t dim, Shape sizes);
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return "Unflatten"; }
  ModulePtr clone_structure() const override { return std::make_shared<Unflatten>(dim, sizes); }
  std::string describe() const override;  // "Unflatten(dim=1, unflattened_size=[1, 28, 28])"
  int64_t dim;
  Shape sizes;
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
