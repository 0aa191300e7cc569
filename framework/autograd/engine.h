// The backward engine: runs the graph from some roots in dependency order, with no recursion
// (a chain of 100,000 nodes needs no stack depth), accumulating into leaf .grad or capturing the
// gradients of chosen inputs (grad()).
#pragma once
#include <functional>
#include <memory>

#include "framework/autograd/node.h"

namespace minidl::autograd {

// Accumulates d(roots)/d(leaf) into every reachable leaf's .grad. grad_roots may be empty for
// 0-dim/1-element roots (ones are used).
void backward(const TensorList& roots, const TensorList& grad_roots = {}, bool retain_graph = false,
              bool create_graph = false);

// Returns d(outputs)/d(inputs) without touching any .grad (torch.autograd.grad). An input that
// the outputs do not depend on is an error unless allow_unused (then its result is undefined).
TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs = {},
                bool retain_graph = false, bool create_graph = false, bool allow_unused = false);

// The autocast layer installs a factory whose returned object, held for the whole backward pass,
// turns autocast off (backward always runs with autocast off).
using BackwardScopeFactory = std::function<std::shared_ptr<void>()>;
void set_backward_scope_factory(BackwardScopeFactory factory);

}  // namespace minidl::autograd
