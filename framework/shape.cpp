#include "framework/shape.h"

#include <algorithm>
#include <sstream>

#include "framework/error.h"

namespace minidl {

std::optional<int64_t> checked_numel(const Shape& shape) {
  int64_t n = 1, span = 1;  // span: the product with zero dims as 1, the largest contiguous stride
  for (int64_t s : shape) {
    if (__builtin_mul_overflow(span, std::max<int64_t>(s, 1), &span)) return std::nullopt;
    n *= s;
  }
  return n;
}

int64_t numel_of(const Shape& shape, const char* op) {
  const std::optional<int64_t> n = checked_numel(shape);
  MINIDL_CHECK(n.has_value(), op, "shape ", shape_str(shape), " overflows int64 (too many elements)");
  return *n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

const char* memory_format_name(MemoryFormat f) {
  return f == MemoryFormat::ChannelsLast ? "channels_last" : "contiguous";
}

namespace {
// The dims of a 4-D tensor from innermost to outermost in format f.
std::vector<size_t> inner_to_outer(size_t ndim, MemoryFormat f) {
  if (f == MemoryFormat::ChannelsLast) return {1, 3, 2, 0};
  std::vector<size_t> order(ndim);
  for (size_t i = 0; i < ndim; ++i) order[i] = ndim - 1 - i;
  return order;
}
}  // namespace

Shape strides_for(const Shape& shape, MemoryFormat f) {
  if (f == MemoryFormat::Contiguous || shape.size() != 4) return contiguous_strides(shape);
  Shape strides(4);
  int64_t s = 1;
  for (size_t d : inner_to_outer(4, f)) {
    strides[d] = s;
    s *= std::max<int64_t>(shape[d], 1);
  }
  return strides;
}

bool is_dense_in(const Shape& shape, const Shape& strides, MemoryFormat f) {
  if (f == MemoryFormat::ChannelsLast && shape.size() != 4) return false;
  int64_t expected = 1;
  for (size_t d : inner_to_outer(shape.size(), f)) {
    if (shape[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    MINIDL_CHECK(da == db || da == 1 || db == 1, op, "shapes ", shape_str(a), " and ", shape_str(b),
                 " cannot be broadcast together (dim ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool expandable_to(const Shape& shape, const Shape& target) {
  if (shape.size() > target.size()) return false;
  const size_t lead = target.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != target[lead + i] && shape[i] != 1) return false;
  return true;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t n = std::max<int64_t>(ndim, 1);
  MINIDL_CHECK(dim >= -n && dim < n, op, "dim ", dim, " out of range for a tensor of ", ndim,
               " dims (expected in [", -n, ", ", n - 1, "])");
  return dim < 0 ? dim + n : dim;
}

}  // namespace minidl
