// Helpers shared by the differentiable ops: argument checks with clear messages, result types,
// output allocation and the kernel registry.
#pragma once
#include <cmath>
#include <functional>

#include "ops/autocast_hook.h"
#include "framework/grad_mode.h"
#include "ops/node.h"
#include "framework/error.h"
#include "ops/kernels.h"
#include "ops/ops.h"

namespace minidl::ops_detail {

inline const kernels::Registry& K() { return kernels::registry(); }

inline void check_defined(const Tensor& t, const char* op, const char* arg) {
  MINIDL_CHECK(t.defined(), op, "argument '", arg, "' is an undefined tensor");
}
inline void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  MINIDL_CHECK(a.device() == b.device(), op, "expected all tensors on the same device, got ", a.meta_str(), " and ",
               b.meta_str());
}
inline void check_floating(const char* op, const Tensor& t) {
  MINIDL_CHECK(t.is_floating_point(), op, "expected a floating point tensor, got ", t.meta_str());
}
// In-place writes into a tensor that takes part in autograd would silently corrupt gradients.
inline void check_inplace(const char* op, const Tensor& t) {
  // A leaf gets PyTorch's own words; other tensors are refused too (README: deliberate differences).
  MINIDL_CHECK(!(t.requires_grad() && GradMode::is_enabled()), op, "a ", t.is_leaf() ? "leaf Variable" : "tensor",
               " that requires grad is being used in an in-place operation (", t.meta_str(),
               "); wrap the update in NoGradGuard");
}

// An in-place op records no graph, so a source that requires grad would lose its gradient silently
// (PyTorch rebases the destination onto the graph instead; README: deliberate differences).
inline void check_inplace_source(const char* op, const Tensor& source) {
  MINIDL_CHECK(!(source.defined() && source.requires_grad() && GradMode::is_enabled()), op, "the source ",
               source.meta_str(), " requires grad, but in-place ops record no gradient and it would be lost; use the "
               "out-of-place op (e.g. y = add(y, w) for y.add_(w)), or NoGradGuard if no gradient is wanted");
}

// PyTorch's result type for a binary op: categories bool < integer < floating; dimensioned tensors
// decide unless a 0-dim operand is of a higher category.
// Fills a tensor that was just made, so nobody can hold a saved copy of it: its version stays 0, as
// PyTorch's factories (zeros(2)._version is 0). The value is checked as fill_'s.
void fill_new(const Tensor& fresh, double value, const char* op);

DType result_type(const Tensor& a, const Tensor& b);
// Result type of tensor-op-scalar: a float scalar lifts an integer/bool tensor to f32.
DType result_type(const Tensor& a, double scalar);
// The promotion categories: bool 0 < integer 1 < floating 2.
inline int type_category(DType t) { return t == DType::Bool ? 0 : (is_floating(t) ? 2 : 1); }
// PyTorch's rule for in-place ops: the promoted type must cast to self's dtype without leaving a
// category (no floating result into an integer tensor, no integer into a bool one), e.g.
// i64.add_(f32) and i64.mul_(0.5) are errors instead of silently truncating.
inline void check_inplace_result(const char* op, const Tensor& self, DType result) {
  MINIDL_CHECK(type_category(result) <= type_category(self.dtype()), op, "result type ", dtype_name(result),
               " can't be cast to the desired output type ", dtype_name(self.dtype()));
}
// add/sub of integer tensors (t: the result type) take only an integral alpha, as PyTorch.
inline void check_integer_alpha(const char* op, DType t, double alpha) {
  MINIDL_CHECK(is_floating(t) || alpha == std::trunc(alpha), op,
               "For integral input tensors, argument alpha must not be a floating point number.");
}

// A freshly allocated contiguous tensor on x's device.
inline Tensor new_empty(const Shape& shape, DType dtype, Device device) {
  return empty(shape, TensorOptions(dtype).device(device));
}

// A freshly allocated result of `shape` in the memory format of the first of `inputs` with that
// shape (channels-last images stay channels-last through element-wise ops, as PyTorch's). CPU only:
// the CUDA kernels write contiguous results.
inline Tensor new_empty_like(const Shape& shape, DType dtype, Device device, std::initializer_list<const Tensor*> inputs) {
  MemoryFormat f = MemoryFormat::Contiguous;
  if (device.is_cpu() && shape.size() == 4)
    for (const Tensor* t : inputs)
      if (t->defined() && t->shape() == shape) {
        f = t->suggest_memory_format();
        break;
      }
  return empty(shape, TensorOptions(dtype).device(device).memory_format(f));
}

// Whether `device`'s kernels check the indices they read, recording a bad one as a deferred error
// that the host reports at its next wait (framework/deferred_error.h), so that the op need not wait
// for the device to read the indices back. On the CPU the ops check indices at once.
inline bool device_checks_indices(Device device) { return device.is_cuda(); }

// Queues the device-side check of an i64 index (ops/kernels.h) on such a device; never waits.
inline void check_index_range_on_device(const Tensor& index, const kernels::IndexRangeCheck& check) {
  K().check_index_range.get(index.device(), DType::I64)(index.contiguous(), check);
}

// Runs a unary kernel (ops/kernels.h UnaryOp) on a floating tensor; integers and bool are
// promoted to f32 first, as torch.exp. Defined in ops/unary.cpp.
// A new tensor of `shape` (x's dtype and device) whose elements are keep_value with probability
// 1 - p and 0 otherwise, from `gen` (the default generator when null): the dropout family's masks.
Tensor random_keep_mask(const Shape& shape, const Tensor& x, double p, double keep_value, Generator* gen);
// [N, C, 1, ...]: one mask value per (sample, channel) of x (the feature dropouts).
Shape feature_mask_shape(const Tensor& x);

Tensor unary_forward(kernels::UnaryOp op, const char* name, const Tensor& x_in, double p0 = 0, double p1 = 0);

// x where x <= 0, else 0 (the exponential branch's argument of elu, selu, celu); ops/activation_more.cpp.
Tensor nonpositive_part(const Tensor& x);

// A piecewise-linear activation (hardtanh, softshrink, hardshrink, threshold, hardsigmoid) as one
// node: the value of `value(x)` and the gradient g * slope(x), slope piecewise constant (a 0/1 mask
// times `scale`). Its backward is a node of its own that saves x and gives x a zero gradient, so a
// second derivative is 0 (as PyTorch's native kernels), not a missing graph. Defined in
// ops/activation_more.cpp.
Tensor piecewise_linear(const char* node, const Tensor& x, const std::function<Tensor(const Tensor&)>& value,
                        const std::function<Tensor(const Tensor&)>& passes, double scale = 1.0);

}  // namespace minidl::ops_detail
