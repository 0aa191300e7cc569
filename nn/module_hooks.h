// Module hooks: PyTorch's register_forward_pre_hook, register_forward_hook,
// register_full_backward_pre_hook and register_full_backward_hook, for modules called with one
// tensor that return one (every nn::Layer, and any module called as nn::call(m, tensor)).
//
//   auto handle = model->fc1->register_forward_hook([&](nn::Module&, const Tensor&, const Tensor& out) {
//     features = out.detach();
//     return Tensor();  // undefined: keep the output
//   });
//   ...
//   handle.remove();
//
// They run when the module is called (nn::call, Layer's operator(), AnyModule, Sequential,
// DataParallel's replicas), in registration order, not when forward() is called directly: as in
// PyTorch, where they run in __call__. In order: the forward pre-hooks (each may return a
// replacement input), the forward, the forward hooks (each may return a replacement output). With
// backward hooks, the input (after the pre-hooks) and the output (after the forward hooks) pass
// through identity nodes named "BackwardHook", as PyTorch's BackwardHookFunction: when the output's
// gradient arrives, the backward pre-hooks run on it (each may return a replacement); when the
// input's gradient is computed, the backward hooks run with (grad_input, grad_output) and may
// return a replacement grad_input of the same shape. When the input does not require grad, the
// backward hooks run as soon as grad_output is known, with an undefined grad_input, and must return
// an undefined tensor. A hook's module argument is the module called (a replica's own, under
// DataParallel). The hooks of a call are those registered when it started; a backward hook holds
// the module alive until the graph is freed.
//
// Deviations from PyTorch: one tensor in and out (PyTorch passes tuples); a module called with
// another signature while it has hooks is an error naming it, never a silent skip. Replicas and
// deep copies get copies of the hook lists (removing a hook through its handle does not reach
// copies made before).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "ops/tensor.h"

namespace minidl::nn {

class Module;

// Each returns a replacement, or an undefined tensor to keep what it was given.
using ForwardPreHook = std::function<Tensor(Module& module, const Tensor& input)>;
using ForwardHook = std::function<Tensor(Module& module, const Tensor& input, const Tensor& output)>;
using BackwardPreHook = std::function<Tensor(Module& module, const Tensor& grad_output)>;
using BackwardHook = std::function<Tensor(Module& module, const Tensor& grad_input, const Tensor& grad_output)>;

// One module's hooks, each kind in registration order under the id its handle removes.
struct ModuleHooks {
  std::vector<std::pair<uint64_t, ForwardPreHook>> forward_pre;
  std::vector<std::pair<uint64_t, ForwardHook>> forward;
  std::vector<std::pair<uint64_t, BackwardPreHook>> backward_pre;
  std::vector<std::pair<uint64_t, BackwardHook>> backward;
  bool empty() const { return forward_pre.empty() && forward.empty() && backward_pre.empty() && backward.empty(); }
  void remove(uint64_t id);
  static uint64_t next_id();
};

// What register_*_hook returns (PyTorch's RemovableHandle): remove() takes the hook off its
// module; nothing once removed, or when the module is gone.
class HookHandle {
 public:
  HookHandle() = default;
  HookHandle(std::weak_ptr<ModuleHooks> hooks, uint64_t id) : hooks_(std::move(hooks)), id_(id) {}
  void remove();
  uint64_t id() const { return id_; }

 private:
  std::weak_ptr<ModuleHooks> hooks_;
  uint64_t id_ = 0;
};

namespace detail {
// Runs forward(input) with module's hooks around it (nn::call does, when the module has hooks).
Tensor call_with_hooks(Module& module, const Tensor& input, const std::function<Tensor(const Tensor&)>& forward);
// The error for a module with hooks called with another signature than one tensor in and out.
[[noreturn]] void hooks_need_one_tensor(const Module& module);
}  // namespace detail

}  // namespace minidl::nn
