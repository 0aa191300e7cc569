// The C++ forms of torch.amp.custom_fwd / custom_bwd for user-defined functions: custom_fwd records
// the forward's autocast state and, with cast_inputs, runs the forward in that dtype with autocast
// off; custom_bwd runs the backward under the autocast state the forward saw (the engine itself
// always runs with autocast off).
#pragma once
#include <optional>

#include "autograd/function.h"

namespace minidl::amp {

autograd::CustomForward custom_fwd(autograd::CustomForward forward, std::optional<DType> cast_inputs = std::nullopt,
                                   DeviceType device = DeviceType::CPU);
autograd::CustomBackward custom_bwd(autograd::CustomBackward backward);

}  // namespace minidl::amp
