// Selections whose size depends on the values: nonzero, masked_select, bincount and unique, as
// torch's. Each reads a count back to the host (on a GPU it waits for the device there, as
// PyTorch's do) and is otherwise a composition of existing ops: a stable argsort puts the selected
// positions first in their order (O(n log n), where PyTorch's kernels are O(n)), then
// index_select, scatter_add and cumsum do the rest, on every backend. masked_select is
// differentiable in x (through index_select); the others return integers or are not.
#include "ops/common.h"

namespace minidl {

using namespace ops_detail;

namespace {
// The flat positions of a 1-D bool tensor's true elements, in order, as i64.
Tensor true_positions(const Tensor& flat_mask) {
  NoGradGuard no_grad;
  const int64_t count = sum(flat_mask).item_int();
  // Stable: among the false keys (the selected positions) the original order is kept.
  return argsort(logical_not(flat_mask), 0).narrow(0, 0, count);
}
}  // namespace

Tensor nonzero(const Tensor& x) {
  check_defined(x, "nonzero", "self");
  NoGradGuard no_grad;
  const Tensor mask = x.dtype() == DType::Bool ? x.reshape({-1}) : ne(x.reshape({-1}), 0.0);  // NaN counts as nonzero
  const Tensor flat = true_positions(mask);
  const TensorOptions i64 = TensorOptions(DType::I64).device(x.device());
  if (x.dim() == 0) return empty({flat.size(0), 0}, i64);
  // Row-major coordinates of each flat position.
  std::vector<Tensor> coords;
  int64_t stride = 1;
  std::vector<int64_t> strides(x.dim());
  for (int64_t d = x.dim() - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= std::max<int64_t>(x.size(d), 1);
  }
  for (int64_t d = 0; d < x.dim(); ++d) coords.push_back(remainder(div(flat, static_cast<double>(strides[d]), "floor"), static_cast<double>(std::max<int64_t>(x.size(d), 1))));
  return stack(coords, 1);
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  check_defined(x, "masked_select", "self");
  check_defined(mask, "masked_select", "mask");
  MINIDL_CHECK(mask.dtype() == DType::Bool, "masked_select", "expected BoolTensor for mask (got ", mask.meta_str(), ")");
  check_same_device("masked_select", x, mask);
  const Shape shape = broadcast_shapes(x.shape(), mask.shape(), "masked_select");
  const Tensor index = true_positions(mask.expand(shape).reshape({-1}));
  return index_select(x.expand(shape).reshape({-1}), 0, index);
}

Tensor bincount(const Tensor& x, const Tensor& weights, int64_t minlength) {
  check_defined(x, "bincount", "self");
  MINIDL_CHECK(x.dim() == 1 && !x.is_floating_point() && x.dtype() != DType::Bool, "bincount",
               "bincount only supports 1-d non-negative integral inputs (got ", x.meta_str(), ")");
  MINIDL_CHECK(minlength >= 0, "bincount", "minlength should be >= 0");
  if (weights.defined()) {
    MINIDL_CHECK(weights.dim() == 1 && weights.size(0) == x.size(0), "bincount", "weights should be 1-d and have the same length as input");
    check_same_device("bincount", x, weights);
  }
  // f32 weights sum in f32, any other weights in f64 (PyTorch's kernels); no weights count in i64.
  const DType dtype = !weights.defined() ? DType::I64 : (weights.dtype() == DType::F32 ? DType::F32 : DType::F64);
  int64_t bins = minlength;
  if (x.numel() > 0) {
    NoGradGuard no_grad;
    const std::vector<int64_t> range = stack({amin(x), amax(x)}).to(Device::cpu()).to_vector<int64_t>();  // one read
    MINIDL_CHECK(range[0] >= 0, "bincount", "bincount only supports 1-d non-negative integral inputs.");
    bins = std::max(bins, range[1] + 1);
  }
  const TensorOptions opts = TensorOptions(dtype).device(x.device());
  if (x.numel() == 0) return zeros({bins}, opts);
  const Tensor src = weights.defined() ? cast(weights, dtype) : ones({x.size(0)}, opts);
  return scatter_add(zeros({bins}, opts), 0, cast(x, DType::I64), src);
}

UniqueResult unique(const Tensor& x) {
  check_defined(x, "unique", "self");
  NoGradGuard no_grad;
  const TensorOptions i64 = TensorOptions(DType::I64).device(x.device());
  const int64_t n = x.numel();
  if (n == 0) return {empty({0}, TensorOptions(x.dtype()).device(x.device())), empty(x.shape(), i64), empty({0}, i64)};
  const auto [sorted, order] = sort(x.reshape({-1}), 0);
  // A sorted element starts a new value where it differs from the one before (each NaN differs).
  const Tensor starts = cat({ones({1}, TensorOptions(DType::Bool).device(x.device())), ne(sorted.narrow(0, 1, n - 1), sorted.narrow(0, 0, n - 1))});
  const Tensor group = sub(cumsum(starts, 0), 1.0);  // the value index of each sorted element
  const Tensor values = masked_select(sorted, starts);
  const Tensor counts = scatter_add(zeros({values.size(0)}, i64), 0, group, ones({n}, i64));
  const Tensor inverse = scatter_add(zeros({n}, i64), 0, order, group).reshape(x.shape());
  return {values, inverse, counts};
}

}  // namespace minidl
