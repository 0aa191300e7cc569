// Diagonals as torch's: diagonal (any two dims, an offset), diag (vector -> matrix, matrix ->
// vector), trace, and the products outer and dot. Compositions of permute, reshape, strided
// slices, where and sum, so they run on every backend and differentiate to any order. Deliberate
// difference: diagonal returns a new tensor, not a view of x (writing into it leaves x unchanged).
#include <algorithm>

#include "ops/common.h"

namespace minidl {

using namespace ops_detail;

namespace {
using P = amp::CastPolicy;
// dot: on CUDA's promote list (the widest input dtype), on no CPU list.
const amp::OpPolicy kDot{"dot", P::None, P::Promote};
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::diagonal_policies() { return {&kDot}; }

Tensor diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  check_defined(x, "diagonal", "self");
  MINIDL_CHECK(x.dim() >= 2, "diagonal", "diagonal dimensions requires ndim larger than 1 (got ", x.meta_str(), ")");
  const int64_t d1 = wrap_dim(dim1, x.dim(), "diagonal"), d2 = wrap_dim(dim2, x.dim(), "diagonal");
  MINIDL_CHECK(d1 != d2, "diagonal", "diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  // The other dims in order, then dim1 and dim2: the diagonal becomes the last dim, as torch's.
  std::vector<int64_t> order;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != d1 && d != d2) order.push_back(d);
  order.push_back(d1);
  order.push_back(d2);
  const int64_t rows = x.size(d1), cols = x.size(d2);
  Shape flat(x.shape().size() - 1);
  for (size_t k = 0; k + 2 < order.size(); ++k) flat[k] = x.size(order[k]);
  flat.back() = rows * cols;
  const Tensor matrices = x.permute(order).reshape(flat);
  // Element (i, i + offset) of a row-major rows x cols block sits at i (cols + 1) + offset.
  const int64_t count = std::max<int64_t>(0, offset >= 0 ? std::min(rows, cols - offset) : std::min(rows + offset, cols));
  const int64_t first = offset >= 0 ? offset : -offset * cols;
  if (count == 0) return matrices.narrow(-1, 0, 0).clone();
  // A copy in every case (reshape and slice may give views of x).
  return matrices.slice(-1, first, first + (count - 1) * (cols + 1) + 1, cols + 1).clone();
}

Tensor diag(const Tensor& x, int64_t diagonal_offset) {
  check_defined(x, "diag", "self");
  MINIDL_CHECK(x.dim() == 1 || x.dim() == 2, "diag", "Supports 1D or 2D tensors. Got ", x.dim(), "D");
  if (x.dim() == 2) return diagonal(x, diagonal_offset, 0, 1);
  // A vector of n values on diagonal k of an (n + |k|)-square matrix, zeros elsewhere.
  const int64_t k = diagonal_offset, n = x.size(0), m = n + std::abs(k);
  const TensorOptions opts = TensorOptions(x.dtype()).device(x.device());
  const Tensor padded = cat({x, zeros({std::abs(k)}, opts)});  // the value of row i (k >= 0) or column j (k < 0)
  const Tensor index = arange(0, static_cast<double>(m), 1, TensorOptions(DType::I64).device(x.device()));
  const Tensor on_diagonal = eq(sub(index.unsqueeze(0), index.unsqueeze(1)), static_cast<double>(k));  // col - row == k
  return where(on_diagonal, k >= 0 ? padded.unsqueeze(1) : padded.unsqueeze(0), zeros({m, m}, opts));
}

Tensor trace(const Tensor& x) {
  check_defined(x, "trace", "self");
  MINIDL_CHECK(x.dim() == 2, "trace", "expected a matrix, but got tensor with dim ", x.dim());
  MINIDL_CHECK(x.dtype() != DType::Bool, "trace", "not implemented for 'Bool'");
  return sum(diagonal(x, 0, 0, 1));
}

Tensor outer(const Tensor& a, const Tensor& b) {
  check_defined(a, "outer", "self");
  check_defined(b, "outer", "vec2");
  MINIDL_CHECK(a.dim() == 1 && b.dim() == 1, "outer", "expected 1-D tensors (got ", a.meta_str(), " and ", b.meta_str(), ")");
  return mul(a.unsqueeze(1), b.unsqueeze(0));
}

Tensor dot(const Tensor& a_arg, const Tensor& b_arg) {
  check_defined(a_arg, "dot", "self");
  check_defined(b_arg, "dot", "tensor");
  amp::AutocastInputs in(kDot, {a_arg, b_arg});
  const Tensor &a = in[0], &b = in[1];
  MINIDL_CHECK(a.dim() == 1 && b.dim() == 1, "dot", "1D tensors expected, but got ", a.dim(), "D and ", b.dim(), "D tensors");
  MINIDL_CHECK(a.size(0) == b.size(0), "dot", "inconsistent tensor size, expected tensor [", a.size(0),
               "] and src [", b.size(0), "] to have the same number of elements, but got ", a.size(0), " and ", b.size(0),
               " elements respectively");
  MINIDL_CHECK(a.dtype() == b.dtype(), "dot", "expected both vectors to have same dtype, but found ", dtype_name(a.dtype()),
               " and ", dtype_name(b.dtype()));
  MINIDL_CHECK(a.dtype() != DType::Bool, "dot", "not implemented for 'Bool'");
  // Floating sums accumulate in f32 for f16/bf16; an integer dot keeps its dtype, wrapping as
  // PyTorch's (the i64 sum of the wrapped products, cast back, is that sum modulo 2^bits).
  const Tensor s = sum(mul(a, b));
  return s.dtype() == a.dtype() ? s : cast(s, a.dtype());
}

}  // namespace minidl
