// Tensor factories beyond empty() (ops/tensor.cpp): filled, ranged and copied-in tensors, and eye,
// linspace, logspace and meshgrid (compositions of arange and element-wise ops).
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


Tensor eye(int64_t n, std::optional<int64_t> m_opt, TensorOptions opts) {
  const int64_t m = m_opt.value_or(n);
  MINIDL_CHECK(n >= 0, "eye", "n must be greater or equal to 0, got ", n);
  MINIDL_CHECK(m >= 0, "eye", "m must be greater or equal to 0, got ", m);
  const bool rg = opts.requires_grad_;
  const Device device = opts.device_;
  // 1 where the row index equals the column index, built on the device.
  const TensorOptions index = TensorOptions(DType::I64).device(device);
  Tensor out = cast(eq(arange(0, static_cast<double>(n), 1, index).unsqueeze(1), arange(0, static_cast<double>(m), 1, index).unsqueeze(0)),
                    opts.dtype_);
  if (rg) out.requires_grad_(true);
  return out;
}

namespace {
// A range end as the dtype holds it: PyTorch converts the ends first (an integer dtype truncates
// them) and refuses one the dtype cannot represent, or a bool dtype.
double range_end(DType t, double v, const char* op) {
  MINIDL_CHECK(t != DType::Bool, op, "not implemented for 'Bool'");
  MINIDL_CHECK(std::isfinite(v), op, "the range's ends must be finite (got ", v, ")");
  const DTypeTraits& tr = traits(t);
  const double lowest = tr.is_floating ? -tr.max : (t == DType::U8 ? 0.0 : -tr.max - 1);
  MINIDL_CHECK(v >= lowest && v <= tr.max, op, "value cannot be converted to type ", dtype_name(t), " without overflow (", v, ")");
  return tr.is_floating ? v : std::trunc(v);
}
}  // namespace

Tensor linspace(double start_in, double end_in, int64_t steps, TensorOptions opts) {
  MINIDL_CHECK(steps >= 0, "linspace", "number of steps must be non-negative");
  const DType dtype = opts.dtype_;
  const double start = range_end(dtype, start_in, "linspace"), end = range_end(dtype, end_in, "linspace");
  // Floating dtypes compute in their own precision (f16/bf16 in f32), integers in f64 and truncate,
  // as PyTorch's kernel; each half counts from its own end (start + step i, end - step (steps - 1 - i)).
  const bool single = dtype == DType::F32 || is_low_precision(dtype);
  const DType compute = single ? DType::F32 : DType::F64;
  auto rounded = [single](double v) { return single ? static_cast<double>(static_cast<float>(v)) : v; };
  Tensor out;
  if (steps <= 1) {
    out = full({steps}, start, TensorOptions(compute));
  } else {
    const double step = rounded((rounded(end) - rounded(start)) / rounded(static_cast<double>(steps - 1)));
    const Tensor i = arange(steps, compute);
    const Tensor from_start = add(mul(i, step), rounded(start));
    const Tensor from_end = rsub(mul(rsub(i, static_cast<double>(steps - 1)), step), rounded(end));
    out = where(lt(i, static_cast<double>(steps / 2)), from_start, from_end);
  }
  out = cast(out, dtype).to(opts.device_);
  if (opts.requires_grad_) out.requires_grad_(true);
  return out;
}

Tensor logspace(double start, double end, int64_t steps, double base, TensorOptions opts) {
  // base ** linspace(start, end), each power taken in the dtype's compute precision.
  const DType dtype = opts.dtype_;
  const DType compute = is_floating(dtype) && dtype != DType::F64 ? DType::F32 : DType::F64;
  Tensor exponents = linspace(range_end(dtype, start, "logspace"), range_end(dtype, end, "logspace"), steps, TensorOptions(compute));
  Tensor out = cast(pow(full_like(exponents, base), exponents), dtype).to(opts.device_);
  if (opts.requires_grad_) out.requires_grad_(true);
  return out;
}

std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, const std::string& indexing) {
  MINIDL_CHECK(indexing == "ij" || indexing == "xy", "meshgrid", "indexing must be one of \"xy\" or \"ij\", but received: ", indexing);
  MINIDL_CHECK(!tensors.empty(), "meshgrid", "expects a non-empty TensorList");
  Shape shape;
  for (size_t k = 0; k < tensors.size(); ++k) {
    ops_detail::check_defined(tensors[k], "meshgrid", "tensors");
    MINIDL_CHECK(tensors[k].dim() <= 1, "meshgrid", "Expected 0D or 1D tensor in the tensor list but got: ", tensors[k].meta_str());
    MINIDL_CHECK(tensors[k].dtype() == tensors[0].dtype() && tensors[k].device() == tensors[0].device(), "meshgrid",
                 "expects all tensors to have the same dtype and device (got ", tensors[0].meta_str(), " and ",
                 tensors[k].meta_str(), ")");
    shape.push_back(tensors[k].numel());
  }
  // "xy" swaps the first two dims (Cartesian indexing), as numpy.meshgrid.
  const bool swap = indexing == "xy" && tensors.size() >= 2;
  if (swap) std::swap(shape[0], shape[1]);
  std::vector<Tensor> out;
  for (size_t k = 0; k < tensors.size(); ++k) {
    size_t axis = k;
    if (swap && k < 2) axis = 1 - k;
    Shape view(tensors.size(), 1);
    view[axis] = shape[axis];
    out.push_back(tensors[k].reshape(view).expand(shape));
  }
  return out;
}

}  // namespace minidl
