// Anomaly mode's checks (the switch is framework/anomaly_mode.h). record() calls the forward check
// for every op while the mode is on, the backward engine the backward check for every gradient a
// node returns. The element scan is the foreach inf-norm kernel (ops/foreach.h): max |x| is NaN
// when any element is NaN and inf when any is inf, so no element loop lives here.
#pragma once
#include <cstdint>
#include <string>

#include "ops/node.h"

namespace minidl::autograd {

// "nan" when t holds a NaN, "inf" when it holds an inf (and no NaN), nullptr otherwise (also for
// undefined, empty and non-floating tensors). Each call counts one check.
const char* non_finite_kind(const Tensor& t);
// The number of tensors anomaly mode has checked in this process: an observer for tests (it does
// not move while the mode is off).
uint64_t anomaly_checks();

// The forward op a backward node belongs to, from the node's name: "SqrtBackward" -> "sqrt",
// "LeakyReluBackward" -> "leaky_relu", "MaxPool2DWithIndicesBackward" -> "max_pool2d_with_indices",
// "ReluBackwardBackward" -> "relu_backward".
std::string forward_op_name(const std::string& node_name);

// Throws a minidl::Error when an output of the op recorded as `node_name` is not finite: names the
// op, its module path (the current scope name), the graph node (nullptr when none was recorded, under
// no-grad) and whether the op made the value or received it in an input.
void check_forward_outputs(const std::string& node_name, const Node* node, const TensorList& inputs,
                           const TensorList& outputs);
// While alive, check_forward_outputs does nothing on this thread: the engine holds one while a node
// computes its gradients (the ops a backward calls are judged by the backward check, which names
// the node), and the checks hold one while they scan (a scan's own copies are not judged).
class ForwardChecksOff {
 public:
  ForwardChecksOff();
  ~ForwardChecksOff();
  ForwardChecksOff(const ForwardChecksOff&) = delete;
  ForwardChecksOff& operator=(const ForwardChecksOff&) = delete;
};

// Throws a minidl::Error when `grad`, the gradient `node` returned for its forward input `input_nr`,
// is not finite: names the backward node, the forward op that recorded it and its module path.
void check_backward_output(const Node& node, size_t input_nr, const Tensor& grad);

}  // namespace minidl::autograd
