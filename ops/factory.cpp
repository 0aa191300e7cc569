// Tensor factories beyond empty() (ops/tensor.cpp): filled, ranged and copied-in tensors.
#include <cmath>
#include <cstring>

#include "framework/half.h"
#include "ops/common.h"

namespace minidl {

Tensor full(const Shape& shape, double value, TensorOptions opts) {
  bool rg = opts.requires_grad_;
  Tensor t = empty(shape, opts.requires_grad(false));
  ops_detail::fill_new(t, value, "full");
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
  MINIDL_CHECK(std::isfinite(start) && std::isfinite(end) && std::isfinite(step), "arange", "unsupported range ", start, " -> ",
               end, " with step ", step, ": start, end and step must be finite");
  MINIDL_CHECK(step != 0, "arange", "step must be nonzero");
  // The default dtype is i64: fractional values would silently truncate (arange(0, 1, 0.25) -> 0s).
  MINIDL_CHECK(is_floating(opts.dtype_) || (std::trunc(start) == start && std::trunc(step) == step), "arange",
               "start ", start, " and step ", step, " are not integers but the dtype is ", dtype_name(opts.dtype_),
               "; pass a floating dtype (e.g. arange(", start, ", ", end, ", ", step, ", DType::F32))");
  // An integer dtype checks the step's sign against the end converted to the integer type, as
  // PyTorch's (arange(0, -0.5) is empty, arange(0, -1.5) an error). The length counts from the end
  // itself, as PyTorch's i32, u8 and floating dtypes and NumPy: arange(0, 5.5, 1, I64) has 6 elements.
  // Deliberate difference: PyTorch's i64 path truncates the end first (5 elements; pytorch#149097).
  const double end_checked = is_floating(opts.dtype_) ? end : std::trunc(end);
  MINIDL_CHECK((end_checked - start) / step >= 0, "arange", "upper bound and step are inconsistent (start ", start,
               ", end ", end, ", step ", step, ")");
  const double count = std::ceil((end - start) / step);  // > -1: arange(0, -0.5) ceils to -0
  MINIDL_CHECK(count < 9.2e18, "arange", "the range ", start, " -> ", end, " with step ", step, " has ", count,
               " elements, more than int64 can count");
  const int64_t n = static_cast<int64_t>(count);
  std::vector<double> v(n);
  for (int64_t k = 0; k < n; ++k) v[k] = start + k * step;
  Tensor out = cast(from_vector(v, {n}), opts.dtype_).to(opts.device_);
  if (opts.requires_grad_) out.requires_grad_(true);  // torch.arange(3., requires_grad=True)
  return out;
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
MINIDL_FOR_EACH_ELEMENT_TYPE(MINIDL_INSTANTIATE)
#undef MINIDL_INSTANTIATE

}  // namespace minidl
