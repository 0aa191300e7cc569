// Containers: Sequential (runs its modules in order; itself a Layer, so it nests), ModuleList
// (holds modules for a user's forward to index) and ModuleDict (holds them by name). Children are
// registered as "0", "1", ... unless given names, so their parameters read "0.weight",
// "encoder.fc.bias" as in PyTorch.
//
//   auto mlp = std::make_shared<nn::Sequential>(
//       std::make_shared<nn::Linear>(784, 256),   // [B, 784] -> [B, 256]
//       std::make_shared<nn::ReLU>(),
//       std::make_shared<nn::Linear>(256, 10));   // [B, 256] -> [B, 10]
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/any_module.h"
#include "nn/module.h"

namespace minidl::nn {

class Sequential : public Layer {
 public:
  Sequential() = default;
  template <class M0, class... Ms>
    requires(!std::is_same_v<std::decay_t<M0>, Sequential>)
  explicit Sequential(M0&& first, Ms&&... rest) {
    push_back(AnyModule(std::forward<M0>(first)));
    (push_back(AnyModule(std::forward<Ms>(rest))), ...);
  }
  // Named children, in order: Sequential({{"fc", linear}, {"act", relu}}).
  explicit Sequential(std::vector<std::pair<std::string, AnyModule>> named);

  void push_back(AnyModule module);  // named by its index
  void push_back(const std::string& name, AnyModule module);

  // Runs every module in order on the output of the previous one.
  Tensor forward(const Tensor& input) override;

  size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  const AnyModule& operator[](size_t i) const;
  template <class M>
  std::shared_ptr<M> at(size_t i) const { return (*this)[i].get<M>(); }
  std::vector<AnyModule>::const_iterator begin() const { return modules_.begin(); }
  std::vector<AnyModule>::const_iterator end() const { return modules_.end(); }

  std::string type_name() const override { return "Sequential"; }
  ModulePtr clone_structure() const override;  // each child's clone_structure(), same names

 private:
  std::vector<AnyModule> modules_;
};

class ModuleList : public Module {
 public:
  ModuleList() = default;
  explicit ModuleList(std::vector<ModulePtr> modules) {
    for (auto& m : modules) push_back(std::move(m));
  }

  void push_back(ModulePtr module);  // named by its index
  void extend(const std::vector<ModulePtr>& modules) {
    for (const auto& m : modules) push_back(m);
  }

  size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  const ModulePtr& operator[](size_t i) const;
  // The i-th module as its concrete type; throws when it is not an M.
  template <class M>
  std::shared_ptr<M> at(size_t i) const {
    auto p = std::dynamic_pointer_cast<M>((*this)[i]);
    MINIDL_CHECK(p != nullptr, "ModuleList::at", "module ", i, " is a ", (*this)[i]->type_name(),
                 ", not the requested type");
    return p;
  }
  std::vector<ModulePtr>::const_iterator begin() const { return modules_.begin(); }
  std::vector<ModulePtr>::const_iterator end() const { return modules_.end(); }

  std::string type_name() const override { return "ModuleList"; }
  ModulePtr clone_structure() const override;  // each child's clone_structure()

 private:
  std::vector<ModulePtr> modules_;
};

// Modules by name, in insertion order (PyTorch's nn.ModuleDict): a key is the child's name, so
// parameters read "<key>.weight". Setting an existing key replaces that module in its place.
//
//   auto heads = std::make_shared<nn::ModuleDict>(std::vector<std::pair<std::string, nn::ModulePtr>>{
//       {"digits", std::make_shared<nn::Linear>(256, 10)}, {"parity", std::make_shared<nn::Linear>(256, 2)}});
//   Tensor y = heads->at<nn::Linear>("digits")->forward(h);
class ModuleDict : public Module {
 public:
  ModuleDict() = default;
  explicit ModuleDict(const std::vector<std::pair<std::string, ModulePtr>>& modules) { update(modules); }

  // d[key] = module: a new key goes at the end, an existing key keeps its place.
  void insert(const std::string& key, ModulePtr module);
  // insert() for each pair, in order.
  void update(const std::vector<std::pair<std::string, ModulePtr>>& modules);
  // Removes the key and returns its module; an error naming the key when it is absent.
  ModulePtr pop(const std::string& key);
  void clear();

  bool contains(const std::string& key) const;
  size_t size() const { return named_children().size(); }
  bool empty() const { return size() == 0; }
  // The module stored under key; an error naming the key when it is absent.
  ModulePtr operator[](const std::string& key) const;
  // The module under key as its concrete type; throws when it is not an M.
  template <class M>
  std::shared_ptr<M> at(const std::string& key) const {
    ModulePtr m = (*this)[key];
    auto p = std::dynamic_pointer_cast<M>(m);
    MINIDL_CHECK(p != nullptr, "ModuleDict::at", "module '", key, "' is a ", m->type_name(), ", not the requested type");
    return p;
  }
  std::vector<std::string> keys() const;
  std::vector<ModulePtr> values() const { return children(); }
  std::vector<std::pair<std::string, ModulePtr>> items() const { return named_children(); }

  std::string type_name() const override { return "ModuleDict"; }
  ModulePtr clone_structure() const override;  // each child's clone_structure(), same keys
};

}  // namespace minidl::nn
