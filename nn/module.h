// nn::Module: the base of every layer and model. A module owns named parameters, buffers and
// submodules (all in registration order), knows its dotted path from the root model ("block.0.fc")
// and names its parameter tensors after it ("block.0.fc.weight") so errors and AMP reports can say
// which weight is at fault. It switches train/eval mode, moves itself between devices and dtypes
// (keeping each parameter's Tensor identity, as libtorch's set_data does: optimizers built before
// `to()` keep working), and saves/loads its state dict.
//
// Modules are used through std::shared_ptr:
//
//   struct Net : nn::Module {
//     std::shared_ptr<nn::Linear> fc1, fc2;
//     Net() {
//       fc1 = register_module("fc1", std::make_shared<nn::Linear>(784, 256));
//       fc2 = register_module("fc2", std::make_shared<nn::Linear>(256, 10));
//     }
//     Tensor forward(const Tensor& x) {
//       return fc2->forward(relu(fc1->forward(x)));
//     }
//   };
//   Tensor y = nn::call(net, x);        // as PyTorch's net(x): forward inside the module's scope
//
// Calling a module (nn::call, Layer's operator(), AnyModule, Sequential, DataParallel, DDP) runs its
// forward inside its forward scope: the module path names the AMP scope, and its own set_autocast
// setting applies, whatever forward's body is. Calling forward() directly skips that, as calling
// forward() directly in PyTorch skips the module's __call__; a forward may open the scope itself
// (`auto scope = forward_scope();`, as the built-in layers do) to hold either way.
//
// forward() is not virtual on Module (C++ has no generic signature for it); modules with the
// signature Tensor forward(const Tensor&) derive from nn::Layer, and any module with that method
// can be held type-erased by nn::AnyModule / nn::Sequential.
#pragma once
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nn/module_hooks.h"
#include "ops/tensor.h"
#include "serialize/tensor_dict.h"

namespace minidl::nn {

class Module;
using ModulePtr = std::shared_ptr<Module>;

// ---- the AMP hook
// The AMP layer installs a factory that turns a module's forward into a scope: it may push the
// module path as the current scope name (recorded in each autograd node's AmpTag) and apply the
// module's own autocast setting (`model->set_autocast(dtype)`, PyTorch's decorated forward). The
// returned object is held for the duration of the forward. Without a factory, forward_scope()
// does nothing. Install once at start-up (not thread-safe against concurrent forwards).
using ForwardScopeFactory = std::function<std::shared_ptr<void>(const Module&)>;
void set_forward_scope_factory(ForwardScopeFactory factory);

// RAII token returned by Module::forward_scope(). While it lives, the module's scope is open on
// this thread, and a second forward_scope() of the same module (its forward opening the scope that
// calling it already opened) opens nothing more.
class ForwardScope {
 public:
  ForwardScope() = default;
  ForwardScope(const Module* module, std::shared_ptr<void> state);
  ForwardScope(ForwardScope&& other) noexcept
      : module_(std::exchange(other.module_, nullptr)), state_(std::move(other.state_)) {}
  ForwardScope& operator=(ForwardScope&&) = delete;
  ForwardScope(const ForwardScope&) = delete;
  ~ForwardScope();

 private:
  const Module* module_ = nullptr;  // set while this token holds the module's open scope
  std::shared_ptr<void> state_;
};

// What load_state_dict(strict=false) could not match (PyTorch's _IncompatibleKeys).
struct LoadResult {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

class Module : public std::enable_shared_from_this<Module> {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // ---- registration (names: non-empty, no '.', unique within this module)
  // Registers a leaf tensor as a parameter; floating tensors are set to require grad (unless
  // requires_grad is false). Returns the same tensor handle. An undefined tensor registers an
  // empty slot (PyTorch's register_parameter(name, None)), skipped by every iteration.
  Tensor register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  // Registers state that is not trained (running statistics, masks, class weights). Persistent
  // buffers are part of the state dict.
  Tensor register_buffer(const std::string& name, Tensor tensor, bool persistent = true);
  // Marks a registered buffer as one that load_state_dict zeroes when a state dict lacks it,
  // instead of reporting a missing key (BatchNorm's num_batches_tracked: PyTorch fills it with 0
  // for state dicts saved without it).
  void zero_buffer_when_missing(const std::string& name);
  // Registers a submodule and returns it with its own type.
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    register_module_impl(name, module);
    return module;
  }

  // ---- names
  const std::string& name() const { return name_; }  // as registered in the parent ("" for a root)
  const std::string& path() const { return path_; }  // dotted path from the root ("" for a root)
  // The class name without namespaces ("Linear", "Net"); override to choose another.
  virtual std::string type_name() const;
  // One line describing this module alone, e.g. "Linear(784 -> 256, bias)". Defaults to
  // type_name(); layers override it.
  virtual std::string describe() const;

  // ---- members, in registration order (parameters shared by two modules are listed once)
  TensorDict named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  TensorDict named_buffers(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, ModulePtr>> named_children() const;
  std::vector<ModulePtr> children() const;
  // This module (name "") and every descendant, pre-order, with dotted names relative to this one.
  std::vector<std::pair<std::string, ModulePtr>> named_modules();
  std::vector<ModulePtr> modules();
  int64_t num_parameters(bool trainable_only = false) const;

  // Calls fn on every descendant (children first, recursively) and then on this module.
  void apply(const std::function<void(Module&)>& fn);

  // ---- mode (recursive)
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // ---- device and dtype (recursive). Parameters keep their identity and stay leaves that require
  // grad; existing gradients are converted too. to(dtype) converts floating tensors only.
  void to(Device device);
  void to(DType dtype);
  void to(Device device, DType dtype);

  // Sets requires_grad on every parameter, recursively (torch's module.requires_grad_(False) freezes
  // a module: its parameters get no gradient and optimizers skip them). Returns this module.
  Module& requires_grad_(bool requires_grad = true);

  // Clears parameter gradients: undefined (set_to_none) or zero-filled.
  void zero_grad(bool set_to_none = true);

  // ---- state
  // Parameters and persistent buffers, module by module in pre-order (own parameters, then own
  // buffers, then each child), as tensors detached from the graph that share the module's storage.
  TensorDict state_dict() const;
  // Copies values into this module's tensors (converting dtype and device). Shape mismatches are
  // always errors; missing and unexpected keys are errors when strict. The error lists every
  // missing, unexpected and mismatched key, in PyTorch's wording and order (unexpected keys module by
  // module in pre-order). As PyTorch, a 1-D entry loads its first element into a 0-dim tensor (older
  // checkpoints stored scalars with shape [1]). Deviation from PyTorch: nothing is copied when there
  // is an error (PyTorch may have copied some tensors before raising).
  LoadResult load_state_dict(const TensorDict& state, bool strict = true);

  // A tree: one line per module (its describe()) with its parameter count, children indented.
  std::string summary() const;

  // ---- replication (dist::DataParallel on several devices; libtorch's Cloneable)
  // A new module of the same type and configuration, with parameters, buffers and submodules of
  // its own; their values do not matter (bind_replica overwrites them). The default throws an Error
  // naming the type. The built-in layers, containers and models provide it; a user module that is
  // to be replicated overrides it with what its constructor needs, e.g.
  //   nn::ModulePtr clone_structure() const override { return std::make_shared<Net>(hidden); }
  // or derives from nn::Cloneable<Net> (below) when its default constructor builds it. Replicas
  // are made of registered state only: a forward that reads anything else (an unregistered tensor
  // member, a counter) sees the replica's own copy of it, as in PyTorch's replicate().
  virtual ModulePtr clone_structure() const;
  // Makes this module, built by original.clone_structure(), a replica of `original`. Both trees
  // are walked together; each parameter slot takes on the tensor param_for(original's parameter)
  // returns (its storage, geometry, dtype and autograd history: a slot filled with a recorded copy
  // of the original passes its gradient back to the original's .grad), each buffer slot
  // buffer_for's. The slots keep their TensorImpl, so the handles the replica's layers hold
  // (`weight = register_parameter(...)`) see the new values. A tensor shared by two slots (tied
  // weights) is made once. Training mode, autocast setting and path follow the original, module
  // by module. Throws, naming the first difference, when the trees differ (submodule, parameter or
  // buffer names, defined slots, shapes).
  using ReplicaTensorFn = std::function<Tensor(const Tensor&)>;
  void bind_replica(const Module& original, const ReplicaTensorFn& param_for, const ReplicaTensorFn& buffer_for);
  // An independent copy (PyTorch's copy.deepcopy(module)): clone_structure() with every parameter
  // and buffer a copy of this module's (parameters are leaves that require grad as these do),
  // training mode and autocast settings as here; `device`, when given, is where the copy's tensors go.
  ModulePtr deep_copy(std::optional<Device> device = std::nullopt) const;

  // ---- hooks (nn/module_hooks.h): run when the module is called with one tensor, not when
  // forward() is called directly, as PyTorch's run in __call__.
  HookHandle register_forward_pre_hook(ForwardPreHook hook);
  HookHandle register_forward_hook(ForwardHook hook);
  HookHandle register_full_backward_pre_hook(BackwardPreHook hook);
  HookHandle register_full_backward_hook(BackwardHook hook);
  bool has_hooks() const { return hooks_ && !hooks_->empty(); }
  // The hooks registered now (empty when none), as a call takes them when it starts.
  ModuleHooks hooks() const { return hooks_ ? *hooks_ : ModuleHooks(); }

  // ---- AMP
  // Open at the top of a forward(): see ForwardScopeFactory. Cheap when no factory is installed.
  [[nodiscard]] ForwardScope forward_scope() const;
  // The module's own autocast setting, applied around its forward (the C++ form of decorating
  // forward with torch.autocast): set_autocast(DType::BF16) runs this module's forward in bf16
  // autocast, set_autocast(std::nullopt, false) runs it with autocast off.
  void set_autocast(std::optional<DType> dtype, bool enabled = true, DeviceType device = DeviceType::CPU);
  void clear_autocast() { amp_state_.reset(); }
  // A slot the AMP layer owns (the module's autocast override).
  const std::shared_ptr<void>& amp_state() const { return amp_state_; }
  void set_amp_state(std::shared_ptr<void> state) { amp_state_ = std::move(state); }

 protected:
  // For containers whose entries are reassigned and removed by name (ModuleDict, ParameterList,
  // ParameterDict: PyTorch's d[key] = value and del d[key]). An existing parameter or submodule of
  // that name is replaced in its place; a new name is registered at the end, as register_*.
  Tensor assign_parameter(const std::string& name, Tensor tensor);
  void assign_module(const std::string& name, const ModulePtr& module);
  // Removes a parameter or a submodule; an error when there is none of that name.
  void remove_parameter(const std::string& name);
  void remove_module(const std::string& name);
  // This module's own parameters, in order (no copy).
  const TensorDict& own_parameters() const { return parameters_; }

 private:
  void register_module_impl(const std::string& name, const ModulePtr& module);
  Tensor prepare_parameter(const std::string& name, Tensor tensor, bool requires_grad) const;
  void adopt_module(const std::string& name, const ModulePtr& module);
  static void release_module(Module& module);
  void set_path(const std::string& path);  // recursive; renames parameter tensors
  void check_new_name(const std::string& name, const char* what) const;
  void collect_state(const std::string& prefix, TensorDict& out, bool detach) const;
  void collect_zero_when_missing(const std::string& prefix, std::vector<std::string>& out) const;
  void collect_unexpected(const std::string& prefix, const TensorDict& state, std::vector<std::string>& out) const;
  void bind_replica_tree(const Module& original, const ReplicaTensorFn& param_for, const ReplicaTensorFn& buffer_for,
                         std::unordered_map<const TensorImpl*, Tensor>& made);
  void summary_lines(const std::string& label, int depth, std::vector<std::pair<std::string, int64_t>>& lines) const;

  std::string name_;
  std::string path_;
  bool training_ = true;
  TensorDict parameters_;
  TensorDict buffers_;
  std::vector<std::string> non_persistent_;
  std::vector<std::string> zero_when_missing_;
  std::vector<std::pair<std::string, ModulePtr>> children_;
  std::shared_ptr<void> amp_state_;
  std::shared_ptr<ModuleHooks> hooks_;  // created by the first register_*_hook
};

namespace detail {
// A call with one tensor that returns one: the calls module hooks run on.
template <class M, class... Args>
constexpr bool one_tensor_call() {
  if constexpr (sizeof...(Args) != 1) return false;
  else if constexpr (!(std::is_same_v<std::remove_cvref_t<Args>, Tensor> && ...)) return false;
  else return std::is_same_v<decltype(std::declval<M&>().forward(std::declval<const Tensor&>())), Tensor>;
}
}  // namespace detail

// Calls module.forward(args...) inside the module's forward scope (its AMP scope name and its own
// set_autocast setting) with its hooks around it (nn/module_hooks.h): the C++ form of PyTorch's
// module(x), for any forward signature.
template <class M, class... Args>
  requires std::is_base_of_v<Module, M>
decltype(auto) call(M& module, Args&&... args) {
  ForwardScope scope = module.forward_scope();
  if (module.has_hooks()) {
    if constexpr (detail::one_tensor_call<M, Args...>()) {
      return Tensor(detail::call_with_hooks(module, args..., [&module](const Tensor& x) -> Tensor { return module.forward(x); }));
    } else {
      detail::hooks_need_one_tensor(module);
    }
  }
  return module.forward(std::forward<Args>(args)...);
}
template <class M, class... Args>
  requires std::is_base_of_v<Module, M>
decltype(auto) call(const std::shared_ptr<M>& module, Args&&... args) {
  return call(*module, std::forward<Args>(args)...);
}

// A module with the signature Tensor forward(const Tensor&): every built-in layer. Sequential and
// other containers call it through this interface or through AnyModule.
class Layer : public Module {
 public:
  virtual Tensor forward(const Tensor& input) = 0;
  Tensor operator()(const Tensor& input) { return call(*this, input); }
};

// clone_structure() for a module whose default constructor builds it:
//   struct Net : nn::Cloneable<Net, nn::Layer> { Net() { ... } Tensor forward(const Tensor&) override; };
template <class Derived, class Base = Module>
class Cloneable : public Base {
 public:
  using Base::Base;
  ModulePtr clone_structure() const override {
    static_assert(std::is_default_constructible_v<Derived>,
                  "nn::Cloneable<Derived> builds replicas with Derived's default constructor; override "
                  "clone_structure() instead");
    return std::make_shared<Derived>();
  }
};

// Prints module.summary().
std::ostream& operator<<(std::ostream& os, const Module& module);
template <class M>
  requires std::is_base_of_v<Module, M>
std::ostream& operator<<(std::ostream& os, const std::shared_ptr<M>& module) {
  return os << static_cast<const Module&>(*module);
}

namespace detail {
using minidl::detail::concat;  // so nn code can say detail::concat
// Makes `param` hold `data`'s storage, shape, strides and dtype, keeping the TensorImpl (so every
// handle to the parameter, e.g. inside an optimizer, sees the change): libtorch's set_data.
void set_data(const Tensor& param, const Tensor& data);
// "1,234,567"
std::string group_digits(int64_t n);
}  // namespace detail

}  // namespace minidl::nn
