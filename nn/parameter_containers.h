// Parameters held by position or by name (PyTorch's nn.ParameterList and nn.ParameterDict), for
// models whose number of weights is chosen at run time. Entries are registered parameters of the
// container: named "0", "1", ... in a list and by key in a dict, so a model that registers the
// container as "scales" has parameters "scales.0", "scales.1", ... in its state dict, optimizers
// and AMP reports. Each tensor must be a leaf; a floating one is set to require grad (as
// nn.Parameter(t)), and a tensor of another dtype is refused, as PyTorch refuses it.
//
//   auto gains = register_module("gains", std::make_shared<nn::ParameterList>());
//   for (int i = 0; i < depth; ++i) gains->append(ones({width}));
//   ... x = x * (*gains)[i] ...
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "nn/module.h"

namespace minidl::nn {

class ParameterList : public Module {
 public:
  ParameterList() = default;
  explicit ParameterList(const std::vector<Tensor>& parameters) { extend(parameters); }

  // Registers the tensor as parameter "<size()>" and returns it.
  Tensor append(Tensor parameter);
  void extend(const std::vector<Tensor>& parameters);
  // list[i] = parameter (a negative i counts from the end, as in Python).
  void set(int64_t index, Tensor parameter);

  size_t size() const { return own_parameters().size(); }
  bool empty() const { return size() == 0; }
  // The i-th parameter (a negative i counts from the end); an error when out of range.
  Tensor operator[](int64_t index) const;
  std::vector<Tensor> values() const { return parameters(false); }

  std::string type_name() const override { return "ParameterList"; }
  std::string describe() const override;
  ModulePtr clone_structure() const override;  // fresh tensors of the same shapes and dtypes

 private:
  size_t checked_index(int64_t index) const;
};

class ParameterDict : public Module {
 public:
  ParameterDict() = default;
  explicit ParameterDict(const std::vector<std::pair<std::string, Tensor>>& parameters) { update(parameters); }

  // d[key] = parameter: a new key goes at the end, an existing key keeps its place. Returns it.
  Tensor insert(const std::string& key, Tensor parameter);
  void update(const std::vector<std::pair<std::string, Tensor>>& parameters);
  // Removes the key and returns its parameter; an error naming the key when it is absent.
  Tensor pop(const std::string& key);
  void clear();

  bool contains(const std::string& key) const { return own_parameters().contains(key); }
  size_t size() const { return own_parameters().size(); }
  bool empty() const { return size() == 0; }
  // The parameter under key; an error naming the key when it is absent.
  Tensor operator[](const std::string& key) const;
  std::vector<std::string> keys() const { return own_parameters().keys(); }
  std::vector<Tensor> values() const { return own_parameters().values(); }
  const TensorDict& items() const { return own_parameters(); }

  std::string type_name() const override { return "ParameterDict"; }
  std::string describe() const override;
  ModulePtr clone_structure() const override;  // fresh tensors of the same shapes and dtypes
};

}  // namespace minidl::nn
