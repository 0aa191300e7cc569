#include "ops/tensor.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <sstream>

#include "framework/cuda.h"
#include "framework/error.h"
#include "framework/half.h"
#include "ops/node.h"
#include "ops/ops.h"

namespace minidl {

TensorImpl* Tensor::impl() const {
  if (!impl_) throw Error("Tensor: operation on an undefined tensor");
  return impl_.get();
}

int64_t Tensor::size(int64_t dim) const { return shape()[wrap_dim(dim, this->dim(), "Tensor::size")]; }
int64_t Tensor::stride(int64_t dim) const { return strides()[wrap_dim(dim, this->dim(), "Tensor::stride")]; }

bool Tensor::is_contiguous() const {
  const TensorImpl* i = impl();
  int64_t expected = 1;
  for (size_t d = i->sizes.size(); d-- > 0;) {
    if (i->sizes[d] == 1) continue;
    if (i->strides[d] != expected) return false;
    expected *= i->sizes[d];
  }
  return true;
}

std::string Tensor::meta_str() const {
  if (!defined()) return "undefined";
  return detail::concat(dtype_name(dtype()), shape_str(shape()), " on ", device().str());
}

void* Tensor::raw_data() const {
  const TensorImpl* i = impl();
  return static_cast<char*>(i->storage->data()) + i->offset * element_size(i->dtype);
}

template <class T>
T* Tensor::data_ptr() const {
  MINIDL_CHECK(dtype() == dtype_of<T>::value, "Tensor::data_ptr", "tensor is ", dtype_name(dtype()),
               ", requested ", dtype_name(dtype_of<T>::value));
  return static_cast<T*>(raw_data());
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  Tensor c = cast(*this, dtype_of<T>::value).to(Device::cpu()).contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}

double Tensor::item() const {
  MINIDL_CHECK(numel() == 1, "item", "a Tensor with ", numel(), " elements cannot be converted to a scalar");
  return to_vector<double>()[0];
}

int64_t Tensor::item_int() const {
  MINIDL_CHECK(numel() == 1, "item", "a Tensor with ", numel(), " elements cannot be converted to a scalar");
  return to_vector<int64_t>()[0];
}

#define MINIDL_INSTANTIATE(T)                         \
  template T* Tensor::data_ptr<T>() const;            \
  template std::vector<T> Tensor::to_vector<T>() const;
MINIDL_INSTANTIATE(float)
MINIDL_INSTANTIATE(double)
MINIDL_INSTANTIATE(half)
MINIDL_INSTANTIATE(bfloat16)
MINIDL_INSTANTIATE(int64_t)
MINIDL_INSTANTIATE(int32_t)
MINIDL_INSTANTIATE(uint8_t)
MINIDL_INSTANTIATE(bool)
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
    MINIDL_CHECK(g.shape() == shape() && g.device() == device(), "set_grad", "assigned grad ", g.meta_str(),
                 " does not match tensor ", meta_str());
  impl()->grad = g.impl_ptr();
}

void Tensor::retain_grad() {
  if (is_leaf()) return;  // leaves keep .grad anyway
  if (impl()->retains_grad) return;
  impl()->retains_grad = true;
  impl()->grad_fn->retained.emplace_back(impl()->output_nr, impl_ptr());
}

void Tensor::register_hook(GradHook hook) {
  MINIDL_CHECK(requires_grad(), "register_hook", "cannot register a hook on a tensor that doesn't require gradient");
  if (is_leaf()) impl()->hooks.push_back(std::move(hook));
  else impl()->grad_fn->pre_hooks.emplace_back(impl()->output_nr, std::move(hook));
}

uint64_t Tensor::register_post_accumulate_grad_hook(PostAccumulateGradHook hook) {
  MINIDL_CHECK(requires_grad(), "register_post_accumulate_grad_hook",
               "cannot register a hook on a tensor that doesn't require gradient");
  MINIDL_CHECK(is_leaf(), "register_post_accumulate_grad_hook",
               "post accumulate grad hooks cannot be registered on non-leaf tensors");
  static std::atomic<uint64_t> next_id{1};
  const uint64_t id = next_id++;
  impl()->post_accumulate_hooks.emplace_back(id, std::move(hook));
  return id;
}

void Tensor::remove_post_accumulate_grad_hook(uint64_t id) {
  auto& hooks = impl()->post_accumulate_hooks;
  std::erase_if(hooks, [id](const auto& h) { return h.first == id; });
}

Tensor Tensor::detach() const {
  std::shared_ptr<TensorImpl> i = alias_of(*impl(), impl()->sizes, impl()->strides, impl()->offset);
  i->name = impl()->name;
  return Tensor(std::move(i));
}

// ---------------------------------------------------------------- factories

Tensor empty(const Shape& shape, TensorOptions opts) {
  for (int64_t s : shape) MINIDL_CHECK(s >= 0, "empty", "negative dimension in shape ", shape_str(shape));
  if (!opts.device_.is_cpu()) cuda::check_device(opts.device_, "empty");
  auto i = std::make_shared<TensorImpl>();
  i->storage = std::make_shared<Storage>(static_cast<size_t>(numel_of(shape)) * element_size(opts.dtype_), opts.device_);
  i->sizes = shape;
  i->strides = contiguous_strides(shape);
  i->dtype = opts.dtype_;
  Tensor t(std::move(i));
  if (opts.requires_grad_) t.requires_grad_(true);
  return t;
}

Tensor full(const Shape& shape, double value, TensorOptions opts) {
  bool rg = opts.requires_grad_;
  Tensor t = empty(shape, opts.requires_grad(false));
  t.fill_(value);
  if (rg) t.requires_grad_(true);
  return t;
}
Tensor zeros(const Shape& shape, TensorOptions opts) { return full(shape, 0.0, opts); }
Tensor ones(const Shape& shape, TensorOptions opts) { return full(shape, 1.0, opts); }
Tensor scalar_tensor(double value, TensorOptions opts) { return full({}, value, opts); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), TensorOptions(t.dtype()).device(t.device())); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), TensorOptions(t.dtype()).device(t.device())); }
Tensor empty_like(const Tensor& t) { return empty(t.shape(), TensorOptions(t.dtype()).device(t.device())); }
Tensor full_like(const Tensor& t, double v) { return full(t.shape(), v, TensorOptions(t.dtype()).device(t.device())); }

Tensor arange(double start, double end, double step, TensorOptions opts) {
  MINIDL_CHECK(step != 0, "arange", "step must be nonzero");
  // The default dtype is i64: fractional values would silently truncate (arange(0, 1, 0.25) -> 0s).
  MINIDL_CHECK(is_floating(opts.dtype_) || (std::trunc(start) == start && std::trunc(step) == step), "arange",
               "start ", start, " and step ", step, " are not integers but the dtype is ", dtype_name(opts.dtype_),
               "; pass a floating dtype (e.g. arange(", start, ", ", end, ", ", step, ", DType::F32))");
  MINIDL_CHECK((end - start) / step >= 0, "arange", "upper bound and step are inconsistent (start ", start,
               ", end ", end, ", step ", step, ")");
  int64_t n = static_cast<int64_t>(std::ceil((end - start) / step));
  std::vector<double> v(n);
  for (int64_t k = 0; k < n; ++k) v[k] = start + k * step;
  return cast(from_vector(v, {n}), opts.dtype_).to(opts.device_);
}

Tensor from_blob(const void* data, const Shape& shape, DType dtype, TensorOptions opts) {
  Tensor t = empty(shape, TensorOptions(dtype));
  if (t.nbytes()) std::memcpy(t.raw_data(), data, t.nbytes());
  if (opts.device_ != Device::cpu()) t = t.to(opts.device_);
  if (opts.requires_grad_) t.requires_grad_(true);
  return t;
}

template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, TensorOptions opts) {
  MINIDL_CHECK(static_cast<int64_t>(values.size()) == numel_of(shape), "from_vector", "got ", values.size(),
               " values for shape ", shape_str(shape), " (", numel_of(shape), " elements)");
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return from_blob(bytes.data(), shape, DType::Bool, TensorOptions(DType::Bool)).to(opts.dtype_).to(opts.device_).requires_grad_(opts.requires_grad_);
  } else {
    Tensor t = from_blob(values.data(), shape, dtype_of<T>::value);
    if (opts.dtype_ != t.dtype()) t = cast(t, opts.dtype_);
    if (opts.device_ != t.device()) t = t.to(opts.device_);
    if (opts.requires_grad_) t.requires_grad_(true);
    return t;
  }
}
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape) {
  return from_vector(values, shape, TensorOptions(dtype_of<T>::value));
}
#define MINIDL_INSTANTIATE(T)                                                         \
  template Tensor from_vector<T>(const std::vector<T>&, const Shape&, TensorOptions); \
  template Tensor from_vector<T>(const std::vector<T>&, const Shape&);
MINIDL_INSTANTIATE(float)
MINIDL_INSTANTIATE(double)
MINIDL_INSTANTIATE(half)
MINIDL_INSTANTIATE(bfloat16)
MINIDL_INSTANTIATE(int64_t)
MINIDL_INSTANTIATE(int32_t)
MINIDL_INSTANTIATE(uint8_t)
MINIDL_INSTANTIATE(bool)
#undef MINIDL_INSTANTIATE

Tensor make_view(const Tensor& base, Shape sizes, Shape strides, int64_t offset) {
  return Tensor(alias_of(*base.impl(), std::move(sizes), std::move(strides), offset));
}

// ---------------------------------------------------------------- printing

namespace {
void print_rec(std::ostream& os, const std::vector<double>& v, const Shape& shape, size_t dim, int64_t& pos,
               bool is_float, bool is_bool, int indent) {
  if (dim == shape.size()) {
    double x = v[pos++];
    if (is_float) os << std::setprecision(4) << x;
    else if (is_bool) os << (x != 0 ? "true" : "false");
    else os << static_cast<int64_t>(x);
    return;
  }
  os << '[';
  const int64_t n = shape[dim];
  const bool elide = n > 8;
  for (int64_t k = 0; k < n; ++k) {
    if (elide && k == 3) {
      os << "..., ";
      // skip the middle block
      int64_t inner = 1;
      for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
      pos += (n - 6) * inner;
      k = n - 3;
    }
    print_rec(os, v, shape, dim + 1, pos, is_float, is_bool, indent + 1);
    if (k + 1 < n) {
      os << ',';
      if (dim + 1 < shape.size()) os << '\n' << std::string(indent + 8, ' ');
      else os << ' ';
    }
  }
  os << ']';
}
}  // namespace

std::string to_string(const Tensor& t) {
  if (!t.defined()) return "tensor(undefined)";
  std::vector<double> v = t.to_vector<double>();
  std::ostringstream os;  // a private stream: the caller's formatting state is left alone
  os << "tensor(";
  int64_t pos = 0;
  print_rec(os, v, t.shape(), 0, pos, t.is_floating_point(), t.dtype() == DType::Bool, 0);
  os << ", dtype=" << dtype_name(t.dtype());
  if (t.dim() > 1 || t.numel() > 8) os << ", shape=" << shape_str(t.shape());
  if (!t.device().is_cpu()) os << ", device=" << t.device().str();
  if (t.grad_fn()) os << ", grad_fn=<" << t.grad_fn()->name() << '>';
  else if (t.requires_grad()) os << ", requires_grad=true";
  os << ')';
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << to_string(t); }

}  // namespace minidl
