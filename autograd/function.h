// User-defined differentiable functions (the C++ form of torch.autograd.Function): a forward that
// runs without recording a graph and a backward that receives the output gradients.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "ops/node.h"

namespace minidl::autograd {

struct FunctionCtx {
  // Tensors needed by backward; checked against in-place modification like every saved tensor.
  void save_for_backward(TensorList tensors) { to_save = std::move(tensors); }
  const TensorList& saved_tensors() const { return saved; }
  // Non-tensor values for backward.
  std::vector<double> values;
  // Opaque state other layers attach to the forward (the autocast state for custom_bwd).
  std::shared_ptr<void> forward_state;

  TensorList to_save;  // filled by forward
  TensorList saved;    // unpacked for backward
};

using CustomForward = std::function<TensorList(FunctionCtx& ctx, const TensorList& inputs)>;
using CustomBackward = std::function<TensorList(FunctionCtx& ctx, const TensorList& grad_outputs)>;

// Runs forward on inputs (graph recording off inside), then records one node named `name` whose
// backward calls `backward` with one gradient per output; it must return one per input
// (undefined where an input needs none).
TensorList apply_function(const std::string& name, const TensorList& inputs, const CustomForward& forward,
                          CustomBackward backward);

}  // namespace minidl::autograd
