// Tensor: a reference-counted handle to a TensorImpl (framework/tensor_impl.h: a strided view of a
// Storage with a dtype, a device and the autograd fields), and its methods. Copying a Tensor copies
// the handle, as in PyTorch; clone() copies the data. It stands at the bottom of the ops layer: its
// views, conversions and in-place methods are ops, defined with their families (ops/view.cpp,
// ops/reduce.cpp, ...).
#pragma once
#include <functional>
#include <initializer_list>
#include <ostream>  // operator<< below: `std::cout << t` needs nothing more
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "framework/device.h"
#include "framework/dtype.h"
#include "framework/shape.h"
#include "framework/storage.h"
#include "framework/tensor_impl.h"

namespace minidl {

namespace autograd {
struct Engine;
}

// How a factory builds a tensor: dtype, device, requires_grad; chainable.
struct TensorOptions {
  DType dtype_ = DType::F32;
  Device device_ = Device::cpu();
  bool requires_grad_ = false;
  MemoryFormat memory_format_ = MemoryFormat::Contiguous;  // ChannelsLast: 4-D shapes only

  TensorOptions() = default;
  TensorOptions(DType t) : dtype_(t) {}  // NOLINT: implicit, as torch::TensorOptions
  TensorOptions(Device d) : device_(d) {}  // NOLINT
  TensorOptions& dtype(DType t) { dtype_ = t; return *this; }
  TensorOptions& device(Device d) { device_ = d; return *this; }
  TensorOptions& requires_grad(bool r = true) { requires_grad_ = r; return *this; }
  TensorOptions& memory_format(MemoryFormat f) { memory_format_ = f; return *this; }
};

// Named options of Tensor::backward (torch.Tensor.backward's keywords):
//   loss.backward(BackwardOptions().retain_graph(true));
// retain_graph defaults to create_graph, as PyTorch's retain_graph=None.
struct BackwardOptions {
  bool retain_graph_ = false;
  bool create_graph_ = false;
  BackwardOptions& retain_graph(bool v = true) { retain_graph_ = v; return *this; }
  BackwardOptions& create_graph(bool v = true) { create_graph_ = v; return *this; }
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- metadata
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl()->sizes; }
  const Shape& sizes() const { return impl()->sizes; }
  const Shape& strides() const { return impl()->strides; }
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(impl()->sizes.size()); }
  int64_t numel() const { return numel_of(impl()->sizes); }
  int64_t offset() const { return impl()->offset; }
  DType dtype() const { return impl()->dtype; }
  Device device() const { return impl()->storage->device(); }
  bool is_contiguous() const;
  // Dense in format f (torch.Tensor.is_contiguous(memory_format=...)).
  bool is_contiguous(MemoryFormat f) const;
  // ChannelsLast when this 4-D tensor is dense in NHWC order and not in NCHW order, else Contiguous
  // (torch's suggest_memory_format): the format ops give results computed from it.
  MemoryFormat suggest_memory_format() const;
  bool is_floating_point() const { return is_floating(dtype()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(dtype()); }
  std::string meta_str() const;  // "f32[2, 3] on cpu"

  // ---- raw data (no checks beyond the dtype; for kernels and tests)
  void* raw_data() const;  // first element of this view
  template <class T> T* data_ptr() const;
  template <class T> std::vector<T> to_vector() const;  // contiguous copy in element order
  double item() const;                                   // one-element tensors
  int64_t item_int() const;                              // exact for i64 (item() rounds above 2^53)
  template <class T> T item() const {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return static_cast<T>(item_int());
    else return static_cast<T>(item());
  }

  // ---- autograd
  bool requires_grad() const { return impl()->requires_grad; }
  Tensor& requires_grad_(bool r = true);
  bool is_leaf() const { return impl()->grad_fn == nullptr; }
  const std::shared_ptr<autograd::Node>& grad_fn() const { return impl()->grad_fn; }
  Tensor grad() const { return Tensor(impl()->grad); }
  void set_grad(const Tensor& g);
  void retain_grad();
  void register_hook(GradHook hook);
  // Leaves only: hook(leaf) runs after backward has accumulated into this leaf's .grad
  // (torch.Tensor.register_post_accumulate_grad_hook). Returns an id for removal.
  uint64_t register_post_accumulate_grad_hook(PostAccumulateGradHook hook);
  void remove_post_accumulate_grad_hook(uint64_t id);  // unknown ids are ignored
  uint32_t version() const { return impl()->storage->version(); }
  void bump_version() const { impl()->storage->bump_version(); }
  // Runs the autograd engine from this tensor (autograd/engine.h, the floor above the ops). A
  // template, so the call binds where it is written, with the engine in view: the ops layer needs
  // nothing from the floor above it, and `loss.backward()` still reads as in PyTorch.
  template <class Engine = autograd::Engine>
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false, bool create_graph = false) const {
    Engine::backward({*this}, {gradient}, retain_graph, create_graph);
  }
  template <class Engine = autograd::Engine>
  void backward(const BackwardOptions& options) const { backward<Engine>(Tensor(), options); }
  template <class Engine = autograd::Engine>
  void backward(const Tensor& gradient, const BackwardOptions& options) const {
    Engine::backward({*this}, {gradient}, options.retain_graph_, options.create_graph_);
  }
  Tensor detach() const;  // shares storage and version counter, no grad_fn
  const std::string& name() const { return impl()->name; }
  void set_name(std::string n) const { impl()->name = std::move(n); }

  // ---- conversions and copies (differentiable where PyTorch's are)
  Tensor to(DType t) const;
  Tensor to(Device d) const;
  Tensor contiguous() const;
  // This tensor when dense in format f, else a copy that is (differentiable, as contiguous()).
  Tensor contiguous(MemoryFormat f) const;
  // A copy of the data (differentiable). Without a format it keeps a channels-last tensor
  // channels-last and makes every other one contiguous (PyTorch's preserve_format keeps any dense
  // strides; minidl allocates only these two layouts).
  Tensor clone() const;
  Tensor clone(MemoryFormat f) const;

  // ---- views (share storage; differentiable)
  Tensor view(const Shape& shape) const;
  Tensor reshape(const Shape& shape) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;
  Tensor permute(const Shape& dims) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze(int64_t dim) const;
  Tensor squeeze() const;
  Tensor expand(const Shape& shape) const;

  // ---- in-place (not differentiable on tensors that require grad; bump the version)
  const Tensor& zero_() const;
  const Tensor& fill_(double value) const;
  const Tensor& copy_(const Tensor& src) const;  // any dtype/strides, broadcasting src
  const Tensor& add_(const Tensor& other, double alpha = 1.0) const;
  const Tensor& mul_(double value) const;
  const Tensor& mul_(const Tensor& other) const;

  // ---- common reductions as methods
  Tensor sum() const;
  Tensor mean() const;

  TensorImpl* impl() const;
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// ---- factories
Tensor empty(const Shape& shape, TensorOptions opts = {});
Tensor zeros(const Shape& shape, TensorOptions opts = {});
Tensor ones(const Shape& shape, TensorOptions opts = {});
Tensor full(const Shape& shape, double value, TensorOptions opts = {});
Tensor scalar_tensor(double value, TensorOptions opts = {});  // 0-dim
Tensor arange(double start, double end, double step = 1.0, TensorOptions opts = DType::I64);
inline Tensor arange(double end, TensorOptions opts = DType::I64) { return arange(0, end, 1, opts); }
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor empty_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
// Copies the elements of a host buffer of the given dtype into a new tensor of that shape and
// dtype; opts supplies the device and requires_grad (its dtype is not used: the buffer's is).
Tensor from_blob(const void* data, const Shape& shape, DType dtype, TensorOptions opts = {});
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, TensorOptions opts);
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape);  // dtype from T
template <class T>
Tensor from_vector(const std::vector<T>& values) { return from_vector(values, Shape{static_cast<int64_t>(values.size())}); }
// Builds a view (no copy) over existing storage.
Tensor make_view(const Tensor& base, Shape sizes, Shape strides, int64_t offset);

std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::string to_string(const Tensor& t);

}  // namespace minidl
