// The backward engine: runs the graph from some roots in dependency order, with no recursion
// (a chain of 100,000 nodes needs no stack depth), accumulating into leaf .grad or capturing the
// gradients of chosen inputs (grad()). It runs with autocast off, and it is where gradients
// accumulate: into a leaf's .grad (its AccumulateGrad node) and into retained non-leaf .grad.
// Hooks, in the order they run: a tensor's gradient hooks (register_hook) before its gradient is
// used, a leaf's post-accumulate-grad hooks after its .grad was updated, and the end-of-backward
// callbacks (queue_callback) once the walk is done. DistributedDataParallel is built on the last two.
#pragma once
#include <functional>

#include "ops/node.h"

namespace minidl::autograd {

// Accumulates d(roots)/d(leaf) into every reachable leaf's .grad. grad_roots may be empty for
// 0-dim/1-element roots (ones are used).
void backward(const TensorList& roots, const TensorList& grad_roots = {}, bool retain_graph = false,
              bool create_graph = false);

// Returns d(outputs)/d(inputs) without touching any .grad (torch.autograd.grad). An input that
// the outputs do not depend on is an error unless allow_unused (then its result is undefined).
TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs = {},
                bool retain_graph = false, bool create_graph = false, bool allow_unused = false);

// Named options of grad() (torch.autograd.grad's keywords):
//   autograd::grad({loss}, params, GradOptions().create_graph(true));
// retain_graph defaults to create_graph, as PyTorch's retain_graph=None.
struct GradOptions {
  TensorList grad_outputs_;
  bool retain_graph_ = false;
  bool create_graph_ = false;
  bool allow_unused_ = false;
  GradOptions& grad_outputs(TensorList v) { grad_outputs_ = std::move(v); return *this; }
  GradOptions& retain_graph(bool v = true) { retain_graph_ = v; return *this; }
  GradOptions& create_graph(bool v = true) { create_graph_ = v; return *this; }
  GradOptions& allow_unused(bool v = true) { allow_unused_ = v; return *this; }
};
inline TensorList grad(const TensorList& outputs, const TensorList& inputs, const GradOptions& options) {
  return grad(outputs, inputs, options.grad_outputs_, options.retain_graph_, options.create_graph_,
              options.allow_unused_);
}

// Queues fn to run once the backward pass running on this thread has walked its whole graph, after
// every leaf's .grad and post-accumulate-grad hook (torch's Variable._execution_engine
// .queue_callback). Only valid while a backward runs (from a hook or a node); callbacks run in queue
// order, still inside that backward call, and a callback may queue more. If the backward throws,
// its queued callbacks are dropped.
void queue_callback(std::function<void()> fn);
// True while a backward() or grad() runs on this thread.
bool in_backward();
// True while the innermost of them is a grad() call (which leaves every .grad alone).
bool in_grad_call();

// What Tensor::backward() calls (ops/tensor.h binds it here, at its call sites).
struct Engine {
  static void backward(const TensorList& roots, const TensorList& grad_roots, bool retain_graph, bool create_graph) {
    autograd::backward(roots, grad_roots, retain_graph, create_graph);
  }
};

}  // namespace minidl::autograd
