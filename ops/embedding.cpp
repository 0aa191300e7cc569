// Embedding (torch.nn.functional.embedding): rows of a weight table picked by integer indices.
// Forward is index_select's row gather, backward its scatter-add (index_add into zeros), so
// repeated indices accumulate and gradients of any order work. padding_idx keeps the row's value
// in the output but routes no gradient to it: those outputs are taken from a detached copy of the
// gathered rows (where() passes gradient only through its taken branch). max_norm renormalises the
// named rows in place first (embedding_renorm_). Autocast policy: None (not on PyTorch's lists), so
// it does not consult autocast.
#include "ops/common.h"
#include "ops/sequence_ops.h"

namespace minidl {

using namespace ops_detail;

const Tensor& embedding_renorm_(const Tensor& weight, const Tensor& indices, double max_norm, double norm_type) {
  const char* op = "embedding_renorm_";
  check_defined(weight, op, "weight");
  check_defined(indices, op, "indices");
  check_same_device(op, indices, weight);
  check_floating(op, weight);
  MINIDL_CHECK(weight.dim() == 2, op, "weight must be 2-D [num_embeddings, embedding_dim], got ", weight.meta_str());
  MINIDL_CHECK(indices.dtype() == DType::I64 || indices.dtype() == DType::I32, op, "expected an i64 or i32 index tensor, got ",
               indices.meta_str());
  if (indices.numel() == 0) return weight;
  NoGradGuard no_grad;
  amp::AutocastDisabled autocast_off;  // the norms in the table's own dtype
  const int64_t rows = weight.size(0);
  const Tensor named = unique(cast(indices, DType::I64).reshape({-1})).values;
  MINIDL_CHECK(min(named).item<int64_t>() >= 0 && max(named).item<int64_t>() < rows, op, "an index is out of range for a table of ",
               rows, " rows");
  const Tensor norms = norm(index_select(weight.detach(), 0, named), norm_type, {1});
  const TensorOptions value_opts = TensorOptions(weight.dtype()).device(weight.device());
  // Each named row's factor placed at its row (0 + scale is exact), 1 for every other row.
  const Tensor scale = div(full({}, max_norm, value_opts), add(norms, 1e-7));
  const Tensor over = gt(norms, max_norm);
  const Tensor placed = scatter_add(zeros({rows}, value_opts), 0, named, where(over, scale, zeros({}, value_opts)));
  const Tensor shrink = gt(scatter_add(zeros({rows}, TensorOptions(DType::I64).device(weight.device())), 0, named,
                                       cast(over, DType::I64)), 0.0);
  weight.mul_(where(shrink, placed, ones({}, value_opts)).unsqueeze(1));
  return weight;
}

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx,
                 std::optional<double> max_norm, double norm_type) {
  const char* op = "embedding";
  if (max_norm) embedding_renorm_(weight, indices, *max_norm, norm_type);
  check_defined(indices, op, "indices");
  check_defined(weight, op, "weight");
  check_same_device(op, indices, weight);
  MINIDL_CHECK(indices.dtype() == DType::I64 || indices.dtype() == DType::I32, op,
               "expected an i64 or i32 index tensor, got ", indices.meta_str());
  MINIDL_CHECK(weight.dim() == 2, op, "weight must be 2-D [num_embeddings, embedding_dim], got ", weight.meta_str());
  const int64_t rows = weight.size(0);
  if (padding_idx) {
    MINIDL_CHECK(*padding_idx >= -rows && *padding_idx < rows, op, "padding_idx ", *padding_idx,
                 " must be within num_embeddings (", rows, ")");
    if (*padding_idx < 0) *padding_idx += rows;
  }
  const Tensor flat = cast(indices, DType::I64).reshape({-1});
  if (device_checks_indices(flat.device())) {
    // Checked where the indices live, without waiting: a bad one is reported at the next
    // synchronisation. Queued ahead of index_select's own check, so the message names embedding.
    check_index_range_on_device(flat, {cuda::DeferredOp::Embedding, rows});
  } else if (flat.numel() > 0) {
    const int64_t lo = min(flat).item<int64_t>(), hi = max(flat).item<int64_t>();
    MINIDL_CHECK(lo >= 0 && hi < rows, op, "index ", lo < 0 ? lo : hi, " is out of range for a table of ", rows, " rows");
  }
  Tensor picked = index_select(weight, 0, flat);
  if (padding_idx && picked.requires_grad()) {
    Tensor keep = ne(flat, static_cast<double>(*padding_idx)).unsqueeze(1);
    picked = where(keep, picked, picked.detach());
  }
  Shape out_shape = indices.shape();
  out_shape.push_back(weight.size(1));
  return picked.reshape(out_shape);
}

}  // namespace minidl
