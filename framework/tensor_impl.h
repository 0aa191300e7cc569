// The data of a tensor: a strided view of a Storage with a dtype, and the autograd fields
// (requires_grad, grad, grad_fn, hooks). The Tensor handle that users and ops pass around, with its
// methods, is the ops layer's (ops/tensor.h); this core record knows no ops.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "framework/dtype.h"
#include "framework/shape.h"
#include "framework/storage.h"

namespace minidl {

class Tensor;
namespace autograd {
struct Node;
}

using GradHook = std::function<Tensor(const Tensor&)>;  // returns a replacement, or undefined
// Runs on a leaf after its .grad was updated by backward (torch's post-accumulate-grad hook); gets
// the leaf itself, reads and may modify its .grad.
using PostAccumulateGradHook = std::function<void(const Tensor&)>;

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape sizes;
  Shape strides;
  int64_t offset = 0;  // in elements
  DType dtype = DType::F32;

  // Autograd. A leaf has no grad_fn; requires_grad on a non-leaf follows from its grad_fn.
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;
  std::shared_ptr<autograd::Node> grad_fn;
  uint32_t output_nr = 0;                          // which output of grad_fn this is
  std::weak_ptr<autograd::Node> grad_accumulator;  // leaves: their AccumulateGrad node
  std::vector<GradHook> hooks;
  std::vector<std::pair<uint64_t, PostAccumulateGradHook>> post_accumulate_hooks;  // leaves; id, hook
  bool retains_grad = false;
  std::string name;  // optional, shown in errors and reports (module path of a parameter)
};

// A new record over the same storage (and so the same version counter) with the given geometry,
// no autograd history and no name: what views and detach() are made of.
std::shared_ptr<TensorImpl> alias_of(const TensorImpl& base, Shape sizes, Shape strides, int64_t offset);

}  // namespace minidl
