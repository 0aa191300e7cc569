#include "amp/custom_function.h"

#include "ops/autocast_hook.h"
#include "framework/grad_mode.h"
#include "ops/ops.h"

namespace minidl::amp {

autograd::CustomForward custom_fwd(autograd::CustomForward forward, std::optional<DType> cast_inputs, DeviceType device) {
  return [forward = std::move(forward), cast_inputs, device](autograd::FunctionCtx& ctx, const autograd::TensorList& inputs) {
    ThreadState fwd = capture_thread_state();
    if (!cast_inputs || !is_autocast_enabled(device)) {
      ctx.forward_state = std::make_shared<ThreadState>(fwd);
      return forward(ctx, inputs);
    }
    // Inside an autocast region: cast eligible inputs and run with autocast off.
    autograd::TensorList cast_in;
    for (const Tensor& t : inputs) {
      bool eligible = t.defined() && t.is_floating_point() && t.dtype() != DType::F64 && t.device().type == device;
      cast_in.push_back(eligible ? cast(t, *cast_inputs) : t);
    }
    autocast off(device, std::nullopt, false);
    ctx.forward_state = std::make_shared<ThreadState>(capture_thread_state());
    return forward(ctx, cast_in);
  };
}

autograd::CustomBackward custom_bwd(autograd::CustomBackward backward) {
  return [backward = std::move(backward)](autograd::FunctionCtx& ctx, const autograd::TensorList& grads) {
    if (!ctx.forward_state) return backward(ctx, grads);
    ThreadState s = *std::static_pointer_cast<ThreadState>(ctx.forward_state);
    s.grad_enabled = GradMode::is_enabled();  // grad mode belongs to the backward pass (create_graph)
    ThreadStateGuard guard(s);
    return backward(ctx, grads);
  };
}

}  // namespace minidl::amp
