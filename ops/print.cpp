// Printing tensors as PyTorch does: nested brackets, long dims elided, dtype, shape, device and
// grad_fn after the values.
#include <iomanip>
#include <ostream>
#include <sstream>

#include "ops/node.h"
#include "ops/tensor.h"

namespace minidl {

namespace {
// PyTorch's print options: a tensor of more than kThreshold elements is summarized, each dim longer
// than 2 * kEdgeItems showing only its first and last kEdgeItems entries.
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;

void print_rec(std::ostream& os, const std::vector<double>& v, const Shape& shape, size_t dim, int64_t& pos,
               bool is_float, bool is_bool, bool summarize, int indent) {
  if (dim == shape.size()) {
    double x = v[pos++];
    if (is_float) os << std::setprecision(4) << x;
    else if (is_bool) os << (x != 0 ? "true" : "false");
    else os << static_cast<int64_t>(x);
    return;
  }
  os << '[';
  const int64_t n = shape[dim];
  const bool elide = summarize && n > 2 * kEdgeItems;
  for (int64_t k = 0; k < n; ++k) {
    if (elide && k == kEdgeItems) {
      os << "..., ";
      // skip the middle block
      int64_t inner = 1;
      for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
      pos += (n - 2 * kEdgeItems) * inner;
      k = n - kEdgeItems;
    }
    print_rec(os, v, shape, dim + 1, pos, is_float, is_bool, summarize, indent + 1);
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
  print_rec(os, v, t.shape(), 0, pos, t.is_floating_point(), t.dtype() == DType::Bool, t.numel() > kThreshold, 0);
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
