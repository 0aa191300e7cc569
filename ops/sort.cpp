// Sorting: sort, argsort and topk along one dim. Every line is sorted stably (equal values keep
// their order, so topk picks the earliest of equal values, where PyTorch leaves the choice open),
// NaN above every number as PyTorch's. Gradients flow to the selected elements (the adjoint of the
// gather: scatter_add into zeros), so they compose to any order. Autocast policy: none (PyTorch
// lists sort and topk for no device).
#include <algorithm>

#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;

namespace {
// The CUDA kernel compares every element of a line with every other (ops/cuda/sort.cu); longer
// lines are sorted by the CPU kernel, a copy there and back.
constexpr int64_t kMaxCudaSortLine = 4096;

// x's lines along dim, sorted, without autograd. x has at least one dim.
ValuesIndices sorted_lines(const Tensor& x, int64_t dim, bool descending) {
  const Tensor xc = x.detach().contiguous();
  if (!x.device().is_cpu() && x.shape()[dim] > kMaxCudaSortLine) {
    ValuesIndices r = sorted_lines(xc.to(Device::cpu()), dim, descending);
    return {r.values.to(x.device()), r.indices.to(x.device())};
  }
  ValuesIndices r{new_empty(x.shape(), x.dtype(), x.device()), new_empty(x.shape(), DType::I64, x.device())};
  K().sort.get(x.device(), x.dtype(), "sort")(r.values, r.indices, xc, dim, descending);
  return r;
}

// values = x's elements at indices along dim: the gradient goes back to those places.
void record_selection(const char* name, const Tensor& x, const Tensor& values, const Tensor& indices, int64_t dim) {
  if (!x.is_floating_point()) return;
  autograd::record(name, {x}, {values}, {indices}, [dim, shape = x.shape()](const TensorList& g, const TensorList& s) {
    return TensorList{scatter_add(zeros(shape, TensorOptions(g[0].dtype()).device(g[0].device())), dim, s[0], g[0])};
  });
}
}  // namespace

ValuesIndices sort(const Tensor& x, int64_t dim, bool descending) {
  const char* name = "sort";
  check_defined(x, name, "self");
  if (x.dim() == 0) {
    wrap_dim(dim, 0, name);
    ValuesIndices r = sort(x.reshape({1}), 0, descending);
    return {r.values.reshape({}), r.indices.reshape({})};
  }
  dim = wrap_dim(dim, x.dim(), name);
  ValuesIndices r = sorted_lines(x, dim, descending);
  record_selection("SortBackward", x, r.values, r.indices, dim);
  return r;
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending) {
  NoGradGuard no_grad;
  check_defined(x, "argsort", "self");
  return sort(x, dim, descending).indices;
}

ValuesIndices topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool sorted) {
  (void)sorted;  // the k values always come sorted (PyTorch's sorted=false leaves the order open)
  const char* name = "topk";
  check_defined(x, name, "self");
  if (x.dim() == 0) {
    wrap_dim(dim, 0, name);
    MINIDL_CHECK(k == 0 || k == 1, name, "k (", k, ") is out of range for a 0-dim tensor (0 or 1)");
    // As PyTorch's, a 0-dim tensor gives itself and index 0, for k 0 too.
    ValuesIndices r = topk(x.reshape({1}), 1, 0, largest, true);
    return {r.values.reshape({}), r.indices.reshape({})};
  }
  dim = wrap_dim(dim, x.dim(), name);
  MINIDL_CHECK(k >= 0 && k <= x.shape()[dim], name, "k (", k, ") is out of range for dimension ", dim, " of size ",
               x.shape()[dim], " (", x.meta_str(), ")");
  ValuesIndices all = sorted_lines(x, dim, largest);
  ValuesIndices r{all.values.narrow(dim, 0, k).contiguous(), all.indices.narrow(dim, 0, k).contiguous()};
  record_selection("TopkBackward", x, r.values, r.indices, dim);
  return r;
}

}  // namespace minidl
