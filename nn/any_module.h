// nn::AnyModule: a type-erased handle to any module with Tensor forward(const Tensor&) (libtorch's
// AnyModule, reduced to the one signature our containers need). Built-in layers derive from
// nn::Layer, but a user's model works too without deriving from anything but nn::Module.
#pragma once
#include <concepts>
#include <functional>
#include <memory>

#include "framework/error.h"
#include "nn/module.h"

namespace minidl::nn {

// A module class with a Tensor forward(const Tensor&) method.
template <class M>
concept TensorModule = std::derived_from<M, Module> && requires(M& m, const Tensor& x) {
  { m.forward(x) } -> std::convertible_to<Tensor>;
};

class AnyModule {
 public:
  AnyModule() = default;
  template <TensorModule M>
  AnyModule(std::shared_ptr<M> module)  // NOLINT: implicit, so containers take shared_ptrs directly
      : module_(module) {
    MINIDL_CHECK(module != nullptr, "AnyModule", "null module");
    M* raw = module.get();  // kept alive by module_
    forward_ = [raw](const Tensor& x) -> Tensor { return call(*raw, x); };  // in the module's scope
  }

  bool defined() const { return module_ != nullptr; }
  Tensor forward(const Tensor& x) const {
    MINIDL_CHECK(defined(), "AnyModule", "forward on an empty AnyModule");
    return forward_(x);
  }
  Tensor operator()(const Tensor& x) const { return forward(x); }

  const ModulePtr& ptr() const { return module_; }
  // The module as its concrete type; throws when it is not an M.
  template <class M>
  std::shared_ptr<M> get() const {
    auto p = std::dynamic_pointer_cast<M>(module_);
    MINIDL_CHECK(p != nullptr, "AnyModule::get", "the module is a ", module_ ? module_->type_name() : "null",
                 ", not the requested type");
    return p;
  }

 private:
  ModulePtr module_;
  std::function<Tensor(const Tensor&)> forward_;
};

}  // namespace minidl::nn
