// The autograd graph as the ops record it: a Node per differentiable op application, with one Edge
// per forward input pointing at the node that produced it (or the leaf's AccumulateGrad). Ops
// record a FunctionNode whose backward is a lambda written in differentiable ops, so create_graph
// gives higher-order derivatives for free. Every node is tagged with the precision it ran in, from
// the autocast state. Running the graph is the engine's (autograd/engine.h, the floor above).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ops/tensor.h"

namespace minidl::autograd {

struct Node;
using TensorList = std::vector<Tensor>;

struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

// Shape/dtype/device of a tensor flowing through an edge: used to make zero gradients for unused
// outputs and to validate (and dtype-convert) the gradients a node returns.
struct TensorMeta {
  Shape shape;
  DType dtype = DType::F32;
  Device device;
};

// The precision a node ran in, filled by record() from the autocast state. `policy` is the name of the autocast
// policy that chose the compute dtype ("none" outside autocast).
struct AmpTag {
  std::string policy = "none";
  DType compute_dtype = DType::F32;
  bool autocast_enabled = false;
  DType autocast_dtype = DType::F32;
  std::string scope;  // module path or scope name active when the node was recorded
};

struct Node {
  std::vector<Edge> next_edges;       // one per forward input
  std::vector<TensorMeta> input_meta;  // one per forward input
  std::vector<TensorMeta> output_meta; // one per forward output (= one per incoming gradient)
  uint64_t sequence_nr = 0;
  AmpTag amp;
  // Hooks on the gradient of forward output i (register_hook / retain_grad on non-leaf tensors).
  std::vector<std::pair<uint32_t, GradHook>> pre_hooks;
  // Non-leaf outputs whose .grad is kept (retain_grad): the engine accumulates into them after the
  // pre-hooks of that output ran.
  std::vector<std::pair<uint32_t, std::weak_ptr<TensorImpl>>> retained;

  Node();
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  virtual std::string name() const = 0;
  // grads: one per forward output (zeros where that output received no gradient).
  // Returns one gradient per forward input (undefined where none is needed).
  virtual TensorList apply(TensorList&& grads) = 0;
  virtual void release_saved() {}
};

// A value saved for backward. Records the storage version at save time and refuses to unpack if
// the tensor was modified in place since (PyTorch's error). Outputs of the owning node are saved
// without their grad_fn (no reference cycle) and re-attached on unpack.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t, bool is_output);
  ~SavedTensor();
  SavedTensor(SavedTensor&& o) noexcept;
  SavedTensor& operator=(SavedTensor&&) = delete;
  SavedTensor(const SavedTensor&) = delete;
  Tensor unpack(const std::shared_ptr<Node>& owner, const std::string& owner_name) const;
  void release();
  const Tensor& peek() const { return data_; }  // no checks; for reports
  std::shared_ptr<Node> steal_grad_fn();       // for iterative graph destruction

 private:
  Tensor data_;
  uint32_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false;
  bool requires_grad_ = false;
  bool released_ = false;
  size_t counted_bytes_ = 0;  // contribution to saved_tensor_bytes()
};

// Bytes currently held by saved tensors across all graphs (parameters excluded: the model owns
// them anyway), and the peak since the last reset. Measures activation memory for backward.
size_t saved_tensor_bytes();
size_t peak_saved_tensor_bytes();
void reset_peak_saved_tensor_bytes();

// What an op hands to record() as a value to save.
struct Saved {
  Tensor tensor;
  bool is_output = false;
  Saved(const Tensor& t) : tensor(t) {}  // NOLINT: implicit for brace lists
  Saved(const Tensor& t, bool out) : tensor(t), is_output(out) {}
};
inline Saved output(const Tensor& t) { return Saved(t, true); }

using BackwardFn = std::function<TensorList(const TensorList& grads, const TensorList& saved)>;

struct FunctionNode final : Node {
  std::string op_name;
  std::vector<SavedTensor> saved;
  BackwardFn backward;

  ~FunctionNode() override;
  std::string name() const override { return op_name; }
  TensorList apply(TensorList&& grads) override;
  void release_saved() override;
  std::weak_ptr<Node> self;  // set by record(); lets saved outputs re-attach to this node
};

// Leaves end in an AccumulateGrad node. It computes nothing: the engine, on reaching it, runs the
// leaf's hooks and adds into its .grad (autograd/engine.cpp), so it has no gradients to return.
struct AccumulateGrad final : Node {
  std::weak_ptr<TensorImpl> leaf;
  std::string name() const override { return "AccumulateGrad"; }
  TensorList apply(TensorList&&) override { return {}; }
};

// True when grad mode is on and any defined input requires grad.
bool needs_grad(std::initializer_list<Tensor> inputs);
bool needs_grad(const TensorList& inputs);

// Connects outputs to a new FunctionNode over inputs (no-op when needs_grad(inputs) is false).
// Returns the node (or nullptr) so callers can inspect it.
std::shared_ptr<FunctionNode> record(const char* op_name, const TensorList& inputs,
                                     const TensorList& outputs, std::vector<Saved> saved, BackwardFn backward);

// The edge that gradient for t flows into (its grad_fn, or its leaf accumulator).
Edge gradient_edge(const Tensor& t);

// Called for every node recorded on this thread, with its outputs (the precision report's
// recorder, amp/precision_report.h, sets it while it measures); nullptr stops it.
using NodeObserver = void (*)(void* ctx, Node& node, const TensorList& outputs);
void set_node_observer(NodeObserver observer, void* ctx);

}  // namespace minidl::autograd
