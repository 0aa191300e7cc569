// EmbeddingBag (torch.nn.functional.embedding_bag): the sum, mean or max of each bag of embedding
// rows, without the [indices, embedding_dim] intermediate a user would reduce by hand. Bags are the
// rows of a 2-D index tensor, or the runs of a 1-D one that `offsets` starts. Written in
// differentiable ops, so every backward (also second order) comes from the parts: the rows are
// gathered (index_select), weighted, and added into their bag (scatter_add); mean divides by the
// bag's count; max lays each bag out in a [bags, longest, dim] block padded with -inf and takes
// max over it, so the gradient goes to the winning row (PyTorch's max_indices). padding_idx rows
// take no part (not counted in a mean); an empty bag gives zeros. The offsets and the index range
// are validated on the host, as PyTorch's CPU kernel (a wait on CUDA). Autocast policy: None (not
// on PyTorch's lists), so it does not consult autocast.
#include <limits>

#include "ops/common.h"
#include "ops/sequence_ops.h"

namespace minidl {

using namespace ops_detail;

namespace {
const char* kOp = "embedding_bag";

// Bag starts as i64 [B] (B + 1 with include_last_offset): from offsets, or every n-th position of a
// [B, n] index tensor. Checks offsets as PyTorch does.
Tensor bag_starts(const Tensor& indices, const EmbeddingBagFuncOptions& o) {
  if (indices.dim() == 2) {
    MINIDL_CHECK(!o.offsets_.defined(), kOp, "if input is 2D, then offsets has to be undefined, as input is treated "
                 "as a mini-batch of fixed length sequences; got offsets ", o.offsets_.meta_str());
    const int64_t bags = indices.size(0), n = indices.size(1);
    return arange(0.0, static_cast<double>(bags * n), static_cast<double>(std::max<int64_t>(n, 1)),
                  TensorOptions(DType::I64).device(indices.device()))
        .narrow(0, 0, bags);
  }
  const Tensor& offsets = o.offsets_;
  MINIDL_CHECK(offsets.defined() && offsets.dim() == 1, kOp, "offsets has to be a 1-D tensor with a 1-D input, got ",
               offsets.defined() ? offsets.meta_str() : std::string("none"));
  check_same_device(kOp, indices, offsets);
  MINIDL_CHECK(offsets.dtype() == DType::I64 || offsets.dtype() == DType::I32, kOp,
               "expected i64 or i32 offsets, got ", offsets.meta_str());
  MINIDL_CHECK(!o.include_last_offset_ || offsets.numel() >= 1, kOp,
               "include_last_offset needs at least one offset (the end of the input)");
  Tensor starts = cast(offsets, DType::I64);
  if (starts.numel() == 0) return starts;
  const int64_t first = starts.narrow(0, 0, 1).item<int64_t>();
  MINIDL_CHECK(first == 0, kOp, "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start ",
               "from position 0; got ", first);
  const int64_t last = starts.narrow(0, starts.numel() - 1, 1).item<int64_t>();
  MINIDL_CHECK(last <= indices.numel(), kOp, "offsets[-1] can not be greater than the input's length ", indices.numel(),
               ", got ", last);
  if (starts.numel() > 1) {
    const Tensor steps = sub(starts.narrow(0, 1, starts.numel() - 1), starts.narrow(0, 0, starts.numel() - 1));
    MINIDL_CHECK(min(steps).item<int64_t>() >= 0, kOp, "offsets must be non-decreasing");
  }
  return starts;
}
}  // namespace

Tensor embedding_bag(const Tensor& indices, const Tensor& weight, const EmbeddingBagFuncOptions& o) {
  check_defined(indices, kOp, "input");
  check_defined(weight, kOp, "weight");
  check_same_device(kOp, indices, weight);
  MINIDL_CHECK(indices.dtype() == DType::I64 || indices.dtype() == DType::I32, kOp,
               "expected an i64 or i32 index tensor, got ", indices.meta_str());
  MINIDL_CHECK(indices.dim() == 1 || indices.dim() == 2, kOp, "input has to be a 1-D or 2-D tensor, got ",
               indices.meta_str());
  MINIDL_CHECK(weight.dim() == 2, kOp, "weight must be 2-D [num_embeddings, embedding_dim], got ", weight.meta_str());
  check_floating(kOp, weight);
  const int64_t rows = weight.size(0), dim = weight.size(1);
  std::optional<int64_t> padding_idx = o.padding_idx_;
  if (padding_idx) {
    MINIDL_CHECK(*padding_idx >= -rows && *padding_idx < rows, kOp, "padding_idx ", *padding_idx,
                 " must be within num_embeddings (", rows, ")");
    if (*padding_idx < 0) *padding_idx += rows;
  }
  Tensor weights = o.per_sample_weights_;
  if (weights.defined()) {
    MINIDL_CHECK(o.mode_ == EmbeddingBagMode::Sum, kOp, "per_sample_weights is only supported for mode sum");
    MINIDL_CHECK(weights.shape() == indices.shape(), kOp, "per_sample_weights ", weights.meta_str(),
                 " must have the input's shape ", shape_str(indices.shape()));
    MINIDL_CHECK(weights.dtype() == weight.dtype(), kOp, "per_sample_weights must have the weight's dtype, got ",
                 weights.meta_str(), " and ", weight.meta_str());
    check_same_device(kOp, weights, weight);
    weights = weights.reshape({-1});
  }
  if (o.max_norm_) embedding_renorm_(weight, indices, *o.max_norm_, o.norm_type_);
  Tensor starts = bag_starts(indices, o);
  Tensor flat = cast(indices, DType::I64).reshape({-1});
  if (o.include_last_offset_) {
    // The last offset ends the last bag; elements after it belong to none.
    const int64_t end = starts.narrow(0, starts.numel() - 1, 1).item<int64_t>();
    flat = flat.narrow(0, 0, end);
    if (weights.defined()) weights = weights.narrow(0, 0, end);
    starts = starts.narrow(0, 0, starts.numel() - 1);
  }
  const int64_t bags = starts.numel();
  if (bags == 0) {
    // No bag: the elements belong to none (weights narrowed alike, so the result stays in the graph).
    flat = flat.narrow(0, 0, 0);
    if (weights.defined()) weights = weights.narrow(0, 0, 0);
  }
  const int64_t length = flat.numel();
  const TensorOptions value_opts = TensorOptions(weight.dtype()).device(weight.device());
  if (length > 0) {
    const int64_t lo = min(flat).item<int64_t>(), hi = max(flat).item<int64_t>();
    MINIDL_CHECK(lo >= 0 && hi < rows, kOp, "index ", lo < 0 ? lo : hi, " is out of range for a table of ", rows, " rows");
  }

  const TensorOptions index_opts = TensorOptions(DType::I64).device(flat.device());
  // Each element's bag: the number of bag starts at or before it, minus one.
  Tensor marks = scatter_add(zeros({length + 1}, index_opts), 0, starts, ones({bags}, index_opts));
  Tensor bag = sub(cumsum(marks.narrow(0, 0, length), 0), 1.0);
  Tensor kept = padding_idx ? ne(flat, static_cast<double>(*padding_idx)) : ones({length}, TensorOptions(DType::Bool).device(flat.device()));
  Tensor picked = index_select(weight, 0, flat);  // [length, dim]
  if (weights.defined()) picked = mul(picked, weights.unsqueeze(1));
  Tensor kept_rows = kept.unsqueeze(1);
  // Kept rows per bag: mean's divisor and max's test for an empty bag (sum needs neither).
  auto kept_per_bag = [&] { return scatter_add(zeros({bags}, value_opts), 0, bag, cast(kept, weight.dtype())); };

  if (o.mode_ != EmbeddingBagMode::Max || length == 0) {  // without elements every bag is empty: zeros
    Tensor rows_in = where(kept_rows, picked, zeros({}, value_opts));
    Tensor out = scatter_add(zeros({bags, dim}, value_opts), 0, bag.unsqueeze(1).expand({length, dim}), rows_in);
    if (o.mode_ != EmbeddingBagMode::Mean) return out;
    return div(out, clamp(kept_per_bag(), 1.0, std::nullopt).unsqueeze(1));
  }
  // Max: element j goes to row bag[j] * longest + (j - starts[bag[j]]) of a -inf padded block.
  const Tensor bag_ends = cat({starts.narrow(0, 1, bags - 1), full({1}, static_cast<double>(length), index_opts)}, 0);
  const int64_t longest = max(sub(bag_ends, starts)).item<int64_t>();
  Tensor slot = add(mul(bag, static_cast<double>(longest)),
                    sub(arange(0.0, static_cast<double>(length), 1.0, index_opts), index_select(starts, 0, bag)));
  const Tensor neg_inf = full({}, -std::numeric_limits<double>::infinity(), value_opts);
  Tensor placed = scatter_add(zeros({bags * longest, dim}, value_opts), 0, slot.unsqueeze(1).expand({length, dim}),
                              where(kept_rows, picked, neg_inf));
  Tensor filled = gt(scatter_add(zeros({bags * longest}, index_opts), 0, slot, cast(kept, DType::I64)), 0.0);
  Tensor block = where(filled.unsqueeze(1), placed, neg_inf).reshape({bags, longest, dim});
  Tensor best = max(block, 1).values;
  return where(gt(kept_per_bag(), 0.0).unsqueeze(1), best, zeros({}, value_opts));
}

}  // namespace minidl
