// Tensor's own methods (metadata, raw data, autograd flags, detach) and empty(). Its views,
// conversions, in-place updates and graph methods are defined with their op families.
#include "ops/tensor.h"

#include "framework/cuda.h"
#include "framework/error.h"
#include "framework/half.h"

namespace minidl {

TensorImpl* Tensor::impl() const {
  if (!impl_) throw Error("Tensor: operation on an undefined tensor");
  return impl_.get();
}

int64_t Tensor::size(int64_t dim) const {
  MINIDL_CHECK(this->dim() > 0, "Tensor::size", "dimension specified as ", dim, " but tensor has no dimensions");
  return shape()[wrap_dim(dim, this->dim(), "Tensor::size")];
}
int64_t Tensor::stride(int64_t dim) const {
  MINIDL_CHECK(this->dim() > 0, "Tensor::stride", "dimension specified as ", dim, " but tensor has no dimensions");
  return strides()[wrap_dim(dim, this->dim(), "Tensor::stride")];
}

bool Tensor::is_contiguous() const {
  const TensorImpl* i = impl();
  if (numel() == 0) return true;  // as PyTorch: no element is out of place
  int64_t expected = 1;
  for (size_t d = i->sizes.size(); d-- > 0;) {
    if (i->sizes[d] == 1) continue;
    if (i->strides[d] != expected) return false;
    expected *= i->sizes[d];
  }
  return true;
}

bool Tensor::is_contiguous(MemoryFormat f) const {
  return f == MemoryFormat::Contiguous ? is_contiguous() : is_dense_in(shape(), strides(), f);
}

MemoryFormat Tensor::suggest_memory_format() const {
  // By the strides alone (an empty tensor counts as contiguous, but keeps its channels-last layout).
  return is_contiguous(MemoryFormat::ChannelsLast) && !is_dense_in(shape(), strides(), MemoryFormat::Contiguous)
             ? MemoryFormat::ChannelsLast
             : MemoryFormat::Contiguous;
}

std::string Tensor::meta_str() const {
  if (!defined()) return "undefined";
  return detail::concat(dtype_name(dtype()), shape_str(shape()), " on ", device().str());
}

void* Tensor::raw_data() const {
  const TensorImpl* i = impl();
  char* base = static_cast<char*>(i->storage->data());
  // An empty tensor may own no allocation yet keep a view's offset (a zero-width slice of
  // pad or cat): offsetting a null base is undefined, and no element is ever read through it.
  if (base == nullptr) return nullptr;
  return base + i->offset * element_size(i->dtype);
}

template <class T>
T* Tensor::data_ptr() const {
  MINIDL_CHECK(dtype() == dtype_of<T>::value, "Tensor::data_ptr", "tensor is ", dtype_name(dtype()),
               ", requested ", dtype_name(dtype_of<T>::value));
  return static_cast<T*>(raw_data());
}

#define MINIDL_INSTANTIATE(T) template T* Tensor::data_ptr<T>() const;
MINIDL_FOR_EACH_ELEMENT_TYPE(MINIDL_INSTANTIATE)
#undef MINIDL_INSTANTIATE

Tensor& Tensor::requires_grad_(bool r) {
  MINIDL_CHECK(is_leaf() || r, "requires_grad_", "you can only change requires_grad flags of leaf variables");
  MINIDL_CHECK(!r || is_floating_point(), "requires_grad_", "only Tensors of floating point dtype can require gradients, got ",
               dtype_name(dtype()));
  impl()->requires_grad = r;
  return *this;
}

void Tensor::set_grad(const Tensor& g) {
  if (g.defined())
    // Shape, dtype and device must all match, as PyTorch's `x.grad = g` ("assigned grad has data of
    // a different type/size").
    MINIDL_CHECK(g.shape() == shape() && g.dtype() == dtype() && g.device() == device(), "set_grad", "assigned grad ",
                 g.meta_str(), " does not match tensor ", meta_str());
  impl()->grad = g.impl_ptr();
}

Tensor Tensor::detach() const {
  std::shared_ptr<TensorImpl> i = alias_of(*impl(), impl()->sizes, impl()->strides, impl()->offset);
  i->name = impl()->name;
  return Tensor(std::move(i));
}

// ---------------------------------------------------------------- allocation

Tensor empty(const Shape& shape, TensorOptions opts) {
  for (int64_t s : shape) MINIDL_CHECK(s >= 0, "empty", "negative dimension in shape ", shape_str(shape));
  if (!opts.device_.is_cpu()) cuda::check_device(opts.device_, "empty");
  auto i = std::make_shared<TensorImpl>();
  size_t nbytes = 0;
  MINIDL_CHECK(!__builtin_mul_overflow(static_cast<size_t>(numel_of(shape, "empty")), element_size(opts.dtype_), &nbytes), "empty",
               "shape ", shape_str(shape), " of ", dtype_name(opts.dtype_), " needs more bytes than size_t can count");
  i->storage = std::make_shared<Storage>(nbytes, opts.device_);
  i->sizes = shape;
  MINIDL_CHECK(opts.memory_format_ == MemoryFormat::Contiguous || shape.size() == 4, "empty",
               "required rank 4 tensor to use channels_last format, got shape ", shape_str(shape));
  i->strides = strides_for(shape, opts.memory_format_);
  i->dtype = opts.dtype_;
  Tensor t(std::move(i));
  if (opts.requires_grad_) t.requires_grad_(true);
  return t;
}

Tensor make_view(const Tensor& base, Shape sizes, Shape strides, int64_t offset) {
  return Tensor(alias_of(*base.impl(), std::move(sizes), std::move(strides), offset));
}

}  // namespace minidl
