// Embedding (torch.nn.functional.embedding): rows of a weight table picked by integer indices.
// Forward is index_select's row gather, backward its scatter-add (index_add into zeros), so
// repeated indices accumulate and gradients of any order work. padding_idx keeps the row's value
// in the output but routes no gradient to it: those outputs are taken from a detached copy of the
// gathered rows (where() passes gradient only through its taken branch). Autocast policy: None
// (not on PyTorch's lists), so it does not consult autocast.
#include "ops/common.h"
#include "ops/sequence_ops.h"

namespace minidl {

using namespace ops_detail;

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx) {
  const char* op = "embedding";
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
