// Views (share storage, differentiable): view/reshape, flatten, transpose/permute, slice/narrow/
// select, squeeze/unsqueeze, expand; plus contiguous, clone and to(device).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "framework/cuda.h"
#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;

namespace {
// Infers one -1 entry and checks the element count.
Shape infer_shape(const Shape& shape, int64_t numel, const char* op) {
  Shape out = shape;
  int64_t infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      MINIDL_CHECK(infer < 0, op, "only one dimension can be inferred in ", shape_str(shape));
      infer = static_cast<int64_t>(i);
    } else {
      MINIDL_CHECK(out[i] >= 0, op, "invalid shape dimension ", out[i], " in ", shape_str(shape));
    }
  }
  Shape known_dims = out;
  if (infer >= 0) known_dims[infer] = 1;
  const int64_t known = numel_of(known_dims, op);
  if (infer >= 0) {
    MINIDL_CHECK(known != 0 && numel % known == 0, op, "shape ", shape_str(shape), " is invalid for input of size ", numel);
    out[infer] = numel / known;
  }
  MINIDL_CHECK(numel_of(out, op) == numel, op, "shape ", shape_str(shape), " is invalid for input of size ", numel);
  return out;
}

// Strides that let a tensor of `shape`/`strides` be viewed as `target` without a copy, or nothing
// when the memory layout does not allow it (PyTorch's computeStride): each run of dims that is
// contiguous within itself must map onto whole dims of the target.
std::optional<Shape> view_strides(const Shape& shape, const Shape& strides, const Shape& target) {
  const int64_t nt = static_cast<int64_t>(target.size());
  if (shape.empty()) return Shape(target.size(), 1);
  Shape out(target.size());
  if (numel_of(shape) == 0) {
    if (shape == target) return strides;
    for (int64_t d = nt - 1; d >= 0; --d) out[d] = d == nt - 1 ? 1 : std::max<int64_t>(target[d + 1], 1) * out[d + 1];
    return out;
  }
  int64_t view_d = nt - 1;
  int64_t base = strides.back(), tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= shape[d];
    // A chunk ends at dim 0 or where the next-outer dim is not laid out right after this one.
    if (d == 0 || (shape[d - 1] != 1 && strides[d - 1] != tensor_numel * base)) {
      while (view_d >= 0 && (view_numel < tensor_numel || target[view_d] == 1)) {
        out[view_d] = view_numel * base;
        view_numel *= target[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        base = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

Tensor as_view(const Tensor& x, Shape sizes, Shape strides, int64_t offset, const char* name,
               autograd::BackwardFn backward) {
  Tensor out = make_view(x, std::move(sizes), std::move(strides), offset);
  autograd::record(name, {x}, {out}, {}, std::move(backward));
  return out;
}

// The gradient of a strided window of `shape`: zeros with g written into the window.
Tensor window_backward(const Tensor& g, const Shape& shape, int64_t dim, int64_t start, int64_t step) {
  Tensor out = zeros(shape, TensorOptions(g.dtype()).device(g.device()));
  {
    NoGradGuard ng;
    out.slice(dim, start, start + (g.size(dim) - 1) * step + 1, step).copy_(g);
  }
  autograd::record("SliceBackwardBackward", {g}, {out}, {}, [dim, start, step, n = g.size(dim)](const TensorList& gg, const TensorList&) {
    return TensorList{gg[0].slice(dim, start, start + (n - 1) * step + 1, step)};
  });
  return out;
}
}  // namespace

Tensor Tensor::view(const Shape& shape_in) const {
  Shape shape = infer_shape(shape_in, numel(), "view");
  // A non-contiguous tensor can still be viewed when its layout allows the new shape, as PyTorch.
  std::optional<Shape> st = is_contiguous() ? contiguous_strides(shape) : view_strides(this->shape(), strides(), shape);
  MINIDL_CHECK(st.has_value(), "view", "view size is not compatible with input tensor's size and stride (",
               meta_str(), " is not contiguous and ", shape_str(shape),
               " spans more than one of its subspaces); use reshape()");
  Shape in_shape = this->shape();
  return as_view(*this, shape, *st, offset(), "ViewBackward",
                 [in_shape](const TensorList& g, const TensorList&) { return TensorList{g[0].reshape(in_shape)}; });
}

Tensor Tensor::reshape(const Shape& shape_in) const {
  Shape shape = infer_shape(shape_in, numel(), "reshape");  // errors name reshape, not view
  // Non-contiguous inputs are always copied (the ops rely on reshape giving them a packed tensor);
  // PyTorch returns a view when the layout allows one: README, deliberate differences.
  if (is_contiguous()) return view(shape);
  return contiguous().view(shape);
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (dim() == 0) {
    wrap_dim(start, 0, "flatten");  // only 0 and -1 are valid dims of a 0-dim tensor
    wrap_dim(end, 0, "flatten");
    return reshape({1});
  }
  start = wrap_dim(start, dim(), "flatten");
  end = wrap_dim(end, dim(), "flatten");
  MINIDL_CHECK(start <= end, "flatten", "start_dim ", start, " must not exceed end_dim ", end);
  Shape s(shape().begin(), shape().begin() + start);
  int64_t m = 1;
  for (int64_t d = start; d <= end; ++d) m *= shape()[d];
  s.push_back(m);
  s.insert(s.end(), shape().begin() + end + 1, shape().end());
  return reshape(s);
}

Tensor Tensor::permute(const Shape& dims) const {
  MINIDL_CHECK(static_cast<int64_t>(dims.size()) == dim(), "permute", "number of dims ", dims.size(),
               " does not match tensor of ", dim(), " dims");
  Shape sizes(dim()), strides(dim()), inverse(dim());
  std::vector<bool> seen(dim(), false);
  for (int64_t i = 0; i < dim(); ++i) {
    int64_t d = wrap_dim(dims[i], dim(), "permute");
    MINIDL_CHECK(!seen[d], "permute", "repeated dim ", d, " in ", shape_str(dims));
    seen[d] = true;
    sizes[i] = shape()[d];
    strides[i] = this->strides()[d];
    inverse[d] = i;
  }
  return as_view(*this, sizes, strides, offset(), "PermuteBackward",
                 [inverse](const TensorList& g, const TensorList&) { return TensorList{g[0].permute(inverse)}; });
}

namespace {
// A view with t's own shape and strides, and a node of its own, as PyTorch's no-op views (t() of a
// vector, squeeze of a dim longer than 1): a hook or retain_grad on it must not land on t.
Tensor identity_view(const Tensor& t, const char* node) {
  return as_view(t, t.shape(), t.strides(), t.offset(), node,
                 [](const TensorList& g, const TensorList&) { return TensorList{g[0]}; });
}
}  // namespace

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  if (dim() == 0) {
    wrap_dim(d0, 0, "transpose");  // only 0 and -1 are valid dims of a 0-dim tensor
    wrap_dim(d1, 0, "transpose");
    return identity_view(*this, "TransposeBackward");
  }
  Shape p(dim());
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[wrap_dim(d0, dim(), "transpose")], p[wrap_dim(d1, dim(), "transpose")]);
  return permute(p);
}

Tensor Tensor::t() const {
  MINIDL_CHECK(dim() <= 2, "t", "expects a tensor with <= 2 dimensions, got ", dim());
  return dim() < 2 ? identity_view(*this, "TBackward") : transpose(0, 1);
}

namespace {
// select, slice and narrow index a dim, which a 0-dim tensor lacks (wrap_dim takes 0 and -1 there,
// as reductions over a 0-dim tensor need): PyTorch's error, not a read of an empty shape.
void check_has_dims(const char* op, const Tensor& t) {
  MINIDL_CHECK(t.dim() > 0, op, "cannot be applied to a 0-dim tensor (", t.meta_str(), ")");
}
}  // namespace

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  check_has_dims("slice", *this);
  d = wrap_dim(d, dim(), "slice");
  MINIDL_CHECK(step > 0, "slice", "step must be positive, got ", step);
  const int64_t n = shape()[d];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape sizes = shape(), strides = this->strides();
  sizes[d] = (end - start + step - 1) / step;
  strides[d] *= step;
  Shape in_shape = shape();
  return as_view(*this, sizes, strides, offset() + start * this->strides()[d], "SliceBackward",
                 [in_shape, d, start, step](const TensorList& g, const TensorList&) {
                   return TensorList{window_backward(g[0], in_shape, d, start, step)};
                 });
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  check_has_dims("narrow", *this);
  d = wrap_dim(d, dim(), "narrow");
  const int64_t n = shape()[d];
  // A negative start counts from the end, as torch.narrow (start == size is valid, with length 0).
  MINIDL_CHECK(start >= -n && start <= n, "narrow", "start out of range: ", start, " for dimension ", d, " of size ", n,
               " (expected in [", -n, ", ", n, "])");
  if (start < 0) start += n;
  MINIDL_CHECK(length >= 0 && start + length <= n, "narrow", "start ", start, " + length ", length,
               " exceeds dimension size ", n);
  return slice(d, start, start + length);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  check_has_dims("select", *this);
  d = wrap_dim(d, dim(), "select");
  const int64_t n = shape()[d];
  MINIDL_CHECK(index >= -n && index < n, "select", "index ", index, " out of range for dimension ", d, " of size ", n);
  if (index < 0) index += n;
  return slice(d, index, index + 1).squeeze(d);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  // Always a view (also of non-contiguous tensors), with PyTorch's stride for the new dim.
  Shape s = shape(), st = strides();
  const int64_t new_stride = d >= dim() ? 1 : s[d] * st[d];
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, new_stride);
  return as_view(*this, s, st, offset(), "UnsqueezeBackward",
                 [d](const TensorList& g, const TensorList&) { return TensorList{g[0].squeeze(d)}; });
}

Tensor Tensor::squeeze(int64_t d) const {
  d = wrap_dim(d, dim(), "squeeze");  // a 0-dim tensor accepts 0 and -1
  if (dim() == 0 || shape()[d] != 1) return identity_view(*this, "SqueezeBackward");
  Shape s = shape(), st = strides();
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  Shape in_shape = shape();
  return as_view(*this, s, st, offset(), "SqueezeBackward",
                 [in_shape](const TensorList& g, const TensorList&) { return TensorList{g[0].reshape(in_shape)}; });
}

Tensor Tensor::squeeze() const {
  // A view that drops every size-1 dim (their strides do not matter).
  Shape s, st;
  for (int64_t d = 0; d < dim(); ++d)
    if (shape()[d] != 1) {
      s.push_back(shape()[d]);
      st.push_back(strides()[d]);
    }
  Shape in_shape = shape();
  return as_view(*this, s, st, offset(), "SqueezeBackward",
                 [in_shape](const TensorList& g, const TensorList&) { return TensorList{g[0].reshape(in_shape)}; });
}

Tensor Tensor::expand(const Shape& shape_in) const {
  MINIDL_CHECK(shape_in.size() >= shape().size(), "expand", "the number of sizes provided (", shape_in.size(),
               ") must be greater or equal to the number of dimensions in the tensor (", dim(), ")");
  const size_t lead = shape_in.size() - shape().size();
  Shape sizes(shape_in.size()), strides(shape_in.size(), 0);
  for (size_t i = 0; i < shape_in.size(); ++i) {
    if (i < lead) {
      MINIDL_CHECK(shape_in[i] >= 0, "expand", "invalid size ", shape_in[i], " for a new leading dim");
      sizes[i] = shape_in[i];
      continue;
    }
    // -1 keeps the size; any other negative size is an error (as PyTorch's).
    MINIDL_CHECK(shape_in[i] >= -1, "expand", "invalid size ", shape_in[i], " at dimension ", i, " (from ",
                 shape_str(shape()), " to ", shape_str(shape_in), "); only -1 may be negative");
    int64_t have = shape()[i - lead], want = shape_in[i] == -1 ? have : shape_in[i];
    MINIDL_CHECK(have == want || have == 1, "expand", "the expanded size ", want, " must match the existing size ",
                 have, " at non-singleton dimension ", i, " (from ", shape_str(shape()), " to ", shape_str(shape_in), ")");
    sizes[i] = want;
    strides[i] = have == want ? this->strides()[i - lead] : 0;
  }
  Shape in_shape = shape();
  return as_view(*this, sizes, strides, offset(), "ExpandBackward",
                 [in_shape](const TensorList& g, const TensorList&) { return TensorList{sum_to(g[0], in_shape)}; });
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(MemoryFormat::Contiguous); }

Tensor Tensor::contiguous(MemoryFormat f) const {
  if (f == MemoryFormat::ChannelsLast)
    MINIDL_CHECK(dim() == 4, "contiguous", "required rank 4 tensor to use channels_last format, got ", meta_str());
  return is_contiguous(f) ? *this : clone(f);
}

Tensor Tensor::clone() const { return clone(suggest_memory_format()); }

Tensor Tensor::clone(MemoryFormat f) const {
  if (f == MemoryFormat::ChannelsLast)
    MINIDL_CHECK(dim() == 4, "clone", "required rank 4 tensor to use channels_last format, got ", meta_str());
  Tensor out = empty(shape(), TensorOptions(dtype()).device(device()).memory_format(f));
  K().copy.get(device(), dtype())(out, *this);
  autograd::record("CloneBackward", {*this}, {out}, {}, [](const TensorList& g, const TensorList&) { return TensorList{g[0]}; });
  return out;
}

Tensor Tensor::to(DType t) const { return cast(*this, t); }

Tensor Tensor::to(Device d) const {
  if (d == device()) return *this;
  cuda::check_device(d, "to");
  Tensor out = empty(shape(), TensorOptions(dtype()).device(d));
  // Cross-device copies run on the non-CPU side's copy kernel.
  Device kernel_device = d.is_cpu() ? device() : d;
  K().copy.get(kernel_device, dtype())(out, *this);
  Device src = device();
  autograd::record("ToDeviceBackward", {*this}, {out}, {}, [src](const TensorList& g, const TensorList&) { return TensorList{g[0].to(src)}; });
  return out;
}

// ---- in-place

const Tensor& Tensor::zero_() const { return fill_(0.0); }

namespace {
// The element-wise kernels write a contiguous result, and on the CPU a channels-last one too.
void check_dense_destination(const char* op, const Tensor& t) {
  const bool dense = t.is_contiguous() || (t.device().is_cpu() && t.dim() == 4 && t.is_contiguous(MemoryFormat::ChannelsLast));
  MINIDL_CHECK(dense, op, "in-place ", op, " needs a contiguous (or, on the CPU, channels-last) destination, got a strided view");
}

// PyTorch's overlap rule for an in-place op (get_overlap_status): a source that shares memory with
// the destination in another layout or at another offset would be read after it was overwritten,
// so it is refused; the same memory in the same layout (x.add_(x)) is fine. As PyTorch, only
// tensors that cover their memory densely are compared (others are "too hard" and pass).
bool dense_without_gaps(const Tensor& t) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of the dims longer than 1
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1) dims.emplace_back(t.strides()[d], t.size(d));
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

void check_no_partial_overlap(const char* op, const Tensor& dst, const Tensor& src) {
  if (dst.impl()->storage != src.impl()->storage) return;  // the usual case: nothing shared
  if (dst.numel() == 0 || src.numel() == 0 || !dense_without_gaps(dst) || !dense_without_gaps(src)) return;
  const char* a = static_cast<const char*>(dst.raw_data());
  const char* b = static_cast<const char*>(src.raw_data());
  const char* a_end = a + dst.numel() * element_size(dst.dtype());
  const char* b_end = b + src.numel() * element_size(src.dtype());
  const bool full = a == b && a_end == b_end && dst.strides() == src.strides();
  MINIDL_CHECK(full || a_end <= b || b_end <= a, op,
               "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single "
               "memory location (destination ", dst.meta_str(), ", source ", src.meta_str(),
               "). Please clone() the tensor before performing the operation.");
}

// PyTorch's checked conversion of a fill value: a value outside the dtype's range is an error
// ("value cannot be converted to type uint8_t without overflow"), not a wrapped or infinite fill.
// Floating dtypes take inf and NaN; bool takes anything. An integral value into u8 may be negative
// down to -255 (it wraps, as PyTorch's integer scalars: full(-1, u8) is 255); a fractional one may not.
void check_fill_value(const char* op, double v, DType t) {
  if (t == DType::Bool) return;
  const double top = traits(t).max;
  bool fits;
  if (is_floating(t)) {
    fits = !std::isfinite(v) || std::abs(v) <= top;
  } else {
    const bool integral = std::isfinite(v) && std::trunc(v) == v;
    const double bottom = t == DType::U8 ? (integral ? -top : 0.0) : -top - 1;
    // i64's max rounds up to 2^63 as a double, which no longer fits: refused (PyTorch converts it,
    // an undefined conversion that gives INT64_MIN on x86).
    fits = v >= bottom && (t == DType::I64 ? v < top : v <= top);  // false for NaN
  }
  MINIDL_CHECK(fits, op, "value ", v, " cannot be converted to ", dtype_name(t), " without overflow");
}
}  // namespace

void ops_detail::fill_new(const Tensor& fresh, double value, const char* op) {
  check_fill_value(op, value, fresh.dtype());
  K().fill.get(fresh.device(), fresh.dtype())(fresh, value);
}

const Tensor& Tensor::fill_(double value) const {
  check_inplace("fill_", *this);
  fill_new(*this, value, "fill_");
  bump_version();
  return *this;
}

const Tensor& Tensor::copy_(const Tensor& src) const {
  check_inplace("copy_", *this);
  check_defined(src, "copy_", "src");
  check_inplace_source("copy_", src);
  // PyTorch's internal-overlap check: an expanded destination (stride 0 over a dim of size > 1)
  // would keep whichever write came last.
  for (int64_t d = 0; d < dim(); ++d)
    MINIDL_CHECK(strides()[d] != 0 || shape()[d] <= 1, "copy_", "the destination ", meta_str(),
                 " has more than one element referring to a single memory location (stride 0 in dim ", d,
                 "); clone() it before writing");
  MINIDL_CHECK(broadcast_shapes(shape(), src.shape(), "copy_") == shape(), "copy_", "source ",
               shape_str(src.shape()), " does not broadcast to destination ", shape_str(shape()));
  if (src.device() == device()) check_no_partial_overlap("copy_", *this, src);
  Device kernel_device = device().is_cpu() ? src.device() : device();
  K().copy.get(kernel_device, dtype())(*this, src);
  bump_version();
  return *this;
}

const Tensor& Tensor::add_(const Tensor& other, double alpha) const {
  check_inplace("add_", *this);
  check_inplace_source("add_", other);
  check_same_device("add_", *this, other);
  check_inplace_result("add_", *this, result_type(*this, other));
  check_integer_alpha("add_", dtype(), alpha);
  Tensor o = other.dtype() == dtype() ? other : cast(other.detach(), dtype());
  MINIDL_CHECK(broadcast_shapes(shape(), o.shape(), "add_") == shape(), "add_", "other ", shape_str(o.shape()),
               " does not broadcast to ", shape_str(shape()));
  check_dense_destination("add_", *this);
  check_no_partial_overlap("add_", *this, o);
  K().binary.get(device(), dtype())(kernels::BinaryOp::Add, *this, *this, o.detach(), 0.0, alpha);
  bump_version();
  return *this;
}

const Tensor& Tensor::mul_(double value) const {
  check_inplace("mul_", *this);
  check_inplace_result("mul_", *this, result_type(*this, value));
  check_dense_destination("mul_", *this);
  K().binary.get(device(), dtype())(kernels::BinaryOp::Mul, *this, *this, Tensor(), value, 1.0);
  bump_version();
  return *this;
}

const Tensor& Tensor::mul_(const Tensor& other) const {
  check_inplace("mul_", *this);
  check_inplace_source("mul_", other);
  check_same_device("mul_", *this, other);
  check_inplace_result("mul_", *this, result_type(*this, other));
  check_dense_destination("mul_", *this);
  Tensor o = other.dtype() == dtype() ? other : cast(other.detach(), dtype());
  MINIDL_CHECK(broadcast_shapes(shape(), o.shape(), "mul_") == shape(), "mul_", "other ", shape_str(o.shape()),
               " does not broadcast to ", shape_str(shape()));
  check_no_partial_overlap("mul_", *this, o);
  K().binary.get(device(), dtype())(kernels::BinaryOp::Mul, *this, *this, o.detach(), 0.0, 1.0);
  bump_version();
  return *this;
}

}  // namespace minidl
