// Sequential, ModuleList and ModuleDict.
#include "nn/container.h"

#include <algorithm>
#include <typeinfo>

#include "framework/error.h"
#include "nn/activation.h"
#include "nn/conv.h"

namespace minidl::nn {

Sequential::Sequential(std::vector<std::pair<std::string, AnyModule>> named) {
  for (auto& [name, m] : named) push_back(name, std::move(m));
}

void Sequential::push_back(AnyModule module) { push_back(std::to_string(modules_.size()), std::move(module)); }

void Sequential::push_back(const std::string& name, AnyModule module) {
  MINIDL_CHECK(module.defined(), "Sequential::push_back", "module '", name, "' is empty");
  register_module(name, module.ptr());
  modules_.push_back(std::move(module));
}

ModulePtr Sequential::clone_structure() const {
  auto copy = std::make_shared<Sequential>();
  for (const auto& [name, child] : named_children()) {
    auto layer = std::dynamic_pointer_cast<Layer>(child->clone_structure());
    MINIDL_CHECK(layer != nullptr, "Sequential::clone_structure", "module '", name, "' (", child->type_name(),
                 ") is not an nn::Layer, so its replica cannot be called through an AnyModule");
    copy->push_back(name, AnyModule(layer));
  }
  return copy;
}

namespace {
// A BatchNorm whose output goes straight into a plain ReLU runs both as batch_norm_relu: the same
// values with one pass over the activation fewer each way (ops/nn_ops.h). Not when the ReLU has its
// own autocast setting (its forward would run under it), and only for these exact classes (a
// subclass may override forward). The fused node is recorded under the BatchNorm's scope; the
// ReLU's forward is not called.
BatchNorm* fusable_batch_norm(const AnyModule& m, const AnyModule& next) {
  Module* bn = m.ptr().get();
  const Module* relu = next.ptr().get();
  const std::type_info& t = typeid(*bn);
  const bool plain_bn = t == typeid(BatchNorm2d) || t == typeid(BatchNorm1d) || t == typeid(BatchNorm);
  // A hooked ReLU must be called; a hooked BatchNorm's forward_relu runs unfused itself.
  return plain_bn && typeid(*relu) == typeid(ReLU) && !relu->amp_state() && !relu->has_hooks()
             ? static_cast<BatchNorm*>(bn)
             : nullptr;
}
}  // namespace

Tensor Sequential::forward(const Tensor& input) {
  auto scope = forward_scope();
  Tensor x = input;
  for (size_t i = 0; i < modules_.size(); ++i) {
    if (BatchNorm* bn = i + 1 < modules_.size() ? fusable_batch_norm(modules_[i], modules_[i + 1]) : nullptr) {
      x = bn->forward_relu(x);
      ++i;
      continue;
    }
    x = modules_[i].forward(x);
  }
  return x;
}

const AnyModule& Sequential::operator[](size_t i) const {
  MINIDL_CHECK(i < modules_.size(), "Sequential", "index ", i, " is out of range for ", modules_.size(), " modules");
  return modules_[i];
}

ModulePtr ModuleList::clone_structure() const {
  auto copy = std::make_shared<ModuleList>();
  for (const ModulePtr& m : modules_) copy->push_back(m->clone_structure());
  return copy;
}

void ModuleList::push_back(ModulePtr module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

const ModulePtr& ModuleList::operator[](size_t i) const {
  MINIDL_CHECK(i < modules_.size(), "ModuleList", "index ", i, " is out of range for ", modules_.size(), " modules");
  return modules_[i];
}

void ModuleDict::insert(const std::string& key, ModulePtr module) { assign_module(key, module); }

void ModuleDict::update(const std::vector<std::pair<std::string, ModulePtr>>& modules) {
  for (const auto& [key, module] : modules) insert(key, module);
}

ModulePtr ModuleDict::pop(const std::string& key) {
  ModulePtr m = (*this)[key];
  remove_module(key);
  return m;
}

void ModuleDict::clear() {
  for (const std::string& key : keys()) remove_module(key);
}

bool ModuleDict::contains(const std::string& key) const {
  const auto items = named_children();
  return std::any_of(items.begin(), items.end(), [&](const auto& item) { return item.first == key; });
}

ModulePtr ModuleDict::operator[](const std::string& key) const {
  for (const auto& [name, module] : named_children())
    if (name == key) return module;
  MINIDL_FAIL("ModuleDict", "no module under the key '", key, "'");
}

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& item : named_children()) out.push_back(item.first);
  return out;
}

ModulePtr ModuleDict::clone_structure() const {
  auto copy = std::make_shared<ModuleDict>();
  for (const auto& [key, module] : named_children()) copy->insert(key, module->clone_structure());
  return copy;
}

}  // namespace minidl::nn
