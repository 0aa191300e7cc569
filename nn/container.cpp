// Sequential and ModuleList.
#include "nn/container.h"

#include "framework/error.h"

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

Tensor Sequential::forward(const Tensor& input) {
  auto scope = forward_scope();
  Tensor x = input;
  for (const AnyModule& m : modules_) x = m.forward(x);
  return x;
}

const AnyModule& Sequential::operator[](size_t i) const {
  MINIDL_CHECK(i < modules_.size(), "Sequential", "index ", i, " is out of range for ", modules_.size(), " modules");
  return modules_[i];
}

void ModuleList::push_back(ModulePtr module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

const ModulePtr& ModuleList::operator[](size_t i) const {
  MINIDL_CHECK(i < modules_.size(), "ModuleList", "index ", i, " is out of range for ", modules_.size(), " modules");
  return modules_[i];
}

}  // namespace minidl::nn
