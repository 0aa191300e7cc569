#include "nn/module_hooks.h"

#include <algorithm>
#include <atomic>

#include "autograd/function.h"
#include "framework/error.h"
#include "framework/grad_mode.h"
#include "nn/module.h"

namespace minidl::nn {

void ModuleHooks::remove(uint64_t id) {
  auto drop = [id](auto& list) {
    list.erase(std::remove_if(list.begin(), list.end(), [id](const auto& entry) { return entry.first == id; }), list.end());
  };
  drop(forward_pre);
  drop(forward);
  drop(backward_pre);
  drop(backward);
}

uint64_t ModuleHooks::next_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

void HookHandle::remove() {
  if (auto hooks = hooks_.lock()) hooks->remove(id_);
  hooks_.reset();
}

namespace {
std::string module_name(const Module& m) { return m.path().empty() ? m.type_name() : m.path() + " (" + m.type_name() + ")"; }

// Adds hook to one of the module's lists (created on first use) and returns its handle.
template <class List, class Hook>
HookHandle add_hook(std::shared_ptr<ModuleHooks>& hooks, List ModuleHooks::*list, Hook hook, const Module& module,
                    const char* what) {
  MINIDL_CHECK(static_cast<bool>(hook), what, "the hook of ", module_name(module), " is empty");
  if (!hooks) hooks = std::make_shared<ModuleHooks>();
  const uint64_t id = ModuleHooks::next_id();
  ((*hooks).*list).emplace_back(id, std::move(hook));
  return HookHandle(hooks, id);
}

// What a backward hook of one call shares between its two identity nodes.
struct BackwardCall {
  ModuleHooks hooks;                 // as registered when the call started
  std::shared_ptr<Module> keep;      // the module, alive until the graph is freed (when shared-owned)
  Module* module = nullptr;
  bool input_requires_grad = false;
  Tensor grad_output;                // set by the output's node, read by the input's
};

Tensor identity_node(const Tensor& t, autograd::CustomBackward backward) {
  return autograd::apply_function(
      "BackwardHook", {t}, [](autograd::FunctionCtx&, const autograd::TensorList& in) { return autograd::TensorList{in[0]}; },
      std::move(backward))[0];
}

// The output's node: the backward pre-hooks on grad_output; the backward hooks too when the input
// takes no gradient (there is no input node to run them).
Tensor output_boundary(const Tensor& y, const std::shared_ptr<BackwardCall>& call) {
  if (!y.requires_grad()) return y;
  return identity_node(y, [call](autograd::FunctionCtx&, const autograd::TensorList& grads) -> autograd::TensorList {
    Module& m = *call->module;
    Tensor go = grads[0];
    for (const auto& [id, hook] : call->hooks.backward_pre)
      if (Tensor r = hook(m, go); r.defined()) {
        MINIDL_CHECK(!go.defined() || r.shape() == go.shape(), "register_full_backward_pre_hook", "the hook of ",
                     module_name(m), " returned a gradient of shape ", shape_str(r.shape()), " for an output of shape ",
                     shape_str(go.shape()));
        go = r;
      }
    call->grad_output = go;
    if (!call->input_requires_grad)
      for (const auto& [id, hook] : call->hooks.backward)
        MINIDL_CHECK(!hook(m, Tensor(), go).defined(), "register_full_backward_hook", "the hook of ", module_name(m),
                     " returned a grad_input, but its input does not require grad (return an undefined tensor)");
    return {go};
  });
}

// The input's node: the backward hooks with (grad_input, grad_output), each may replace grad_input.
Tensor input_boundary(const Tensor& x, const std::shared_ptr<BackwardCall>& call) {
  call->input_requires_grad = x.requires_grad();
  if (!x.requires_grad()) return x;
  return identity_node(x, [call](autograd::FunctionCtx&, const autograd::TensorList& grads) -> autograd::TensorList {
    Module& m = *call->module;
    Tensor gi = grads[0];
    for (const auto& [id, hook] : call->hooks.backward)
      if (Tensor r = hook(m, gi, call->grad_output); r.defined()) {
        MINIDL_CHECK(!gi.defined() || r.shape() == gi.shape(), "register_full_backward_hook", "the hook of ",
                     module_name(m), " returned a grad_input of shape ", shape_str(r.shape()), " for an input of shape ",
                     shape_str(gi.shape()));
        gi = r;
      }
    return {gi};
  });
}
}  // namespace

HookHandle Module::register_forward_pre_hook(ForwardPreHook hook) {
  return add_hook(hooks_, &ModuleHooks::forward_pre, std::move(hook), *this, "register_forward_pre_hook");
}
HookHandle Module::register_forward_hook(ForwardHook hook) {
  return add_hook(hooks_, &ModuleHooks::forward, std::move(hook), *this, "register_forward_hook");
}
HookHandle Module::register_full_backward_pre_hook(BackwardPreHook hook) {
  return add_hook(hooks_, &ModuleHooks::backward_pre, std::move(hook), *this, "register_full_backward_pre_hook");
}
HookHandle Module::register_full_backward_hook(BackwardHook hook) {
  return add_hook(hooks_, &ModuleHooks::backward, std::move(hook), *this, "register_full_backward_hook");
}

namespace detail {
Tensor call_with_hooks(Module& module, const Tensor& input, const std::function<Tensor(const Tensor&)>& forward) {
  ModuleHooks hooks = module.hooks();
  Tensor x = input;
  for (const auto& [id, hook] : hooks.forward_pre)
    if (Tensor r = hook(module, x); r.defined()) x = r;
  std::shared_ptr<BackwardCall> backward;
  if (GradMode::is_enabled() && (!hooks.backward.empty() || !hooks.backward_pre.empty())) {
    backward = std::make_shared<BackwardCall>();
    backward->module = &module;
    backward->keep = module.weak_from_this().lock();
    x = input_boundary(x, backward);
  }
  Tensor y = forward(x);
  for (const auto& [id, hook] : hooks.forward)
    if (Tensor r = hook(module, x, y); r.defined()) y = r;
  if (backward) {
    backward->hooks = std::move(hooks);
    y = output_boundary(y, backward);
  }
  return y;
}

void hooks_need_one_tensor(const Module& module) {
  MINIDL_FAIL("nn::call", module_name(module), " has hooks, which run on calls with one tensor that return one; ",
              "this call has another signature (remove the hooks, or call a module that takes one tensor)");
}
}  // namespace detail

}  // namespace minidl::nn
