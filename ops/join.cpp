// Joining and splitting: cat, stack, split, chunk. Autocast policy: Promote on CPU (cat/stack take
// the widest floating input dtype; f16 mixed with bf16 promotes to f32).
#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;

// Autocast policies of this family (the policy table is built from these rows).
namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kCat{"cat", P::Promote, P::None};
const amp::OpPolicy kStack{"stack", P::Promote, P::None};
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::join_policies() { return {&kCat, &kStack}; }

Tensor cat(const std::vector<Tensor>& tensors_arg, int64_t dim) {
  amp::AutocastInputs in(kCat, tensors_arg);
  const std::vector<Tensor>& tensors = in.list();
  MINIDL_CHECK(!tensors.empty(), "cat", "expected a non-empty list of tensors");
  // Legacy rule kept by PyTorch: 1-D empty tensors are skipped.
  // The result dtype counts every tensor, the skipped ones too (as torch.cat's result_type).
  auto skipped = [](const Tensor& p) { return p.dim() == 1 && p.numel() == 0; };
  std::vector<Tensor> parts;
  DType t = tensors[0].defined() ? tensors[0].dtype() : DType::F32;
  for (const Tensor& p : tensors) {
    check_defined(p, "cat", "tensors");
    t = promote_types(t, p.dtype());
    if (!skipped(p)) parts.push_back(p);
  }
  Tensor out;
  if (parts.empty()) {
    out = new_empty({0}, t, tensors[0].device());
  } else {
    const Tensor& ref = parts[0];
    MINIDL_CHECK(ref.dim() > 0, "cat", "zero-dimensional tensor (at position 0) cannot be concatenated");
    dim = wrap_dim(dim, ref.dim(), "cat");
    Shape shape = ref.shape();
    shape[dim] = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      const Tensor& p = parts[i];
      check_same_device("cat", ref, p);
      MINIDL_CHECK(p.dim() == ref.dim(), "cat", "tensors must have the same number of dimensions: got ", ref.dim(),
                   " and ", p.dim(), " (tensor ", i, ")");
      for (int64_t d = 0; d < ref.dim(); ++d)
        MINIDL_CHECK(d == dim || p.shape()[d] == ref.shape()[d], "cat",
                     "sizes of tensors must match except in dimension ", dim, ": expected size ", ref.shape()[d],
                     " but got size ", p.shape()[d], " for tensor ", i, " in dim ", d);
      shape[dim] += p.shape()[dim];
    }
    out = new_empty(shape, t, ref.device());
    NoGradGuard ng;
    int64_t at = 0;
    for (const Tensor& p : parts) {
      out.narrow(dim, at, p.shape()[dim]).copy_(p.detach());
      at += p.shape()[dim];
    }
  }
  // Every input is recorded, a skipped empty one too: its gradient is empty, as PyTorch's.
  TensorList inputs;
  std::vector<int64_t> sizes;  // each input's extent along dim; -1 for a skipped one
  for (const Tensor& p : tensors) {
    inputs.push_back(p.dtype() == t ? p : cast(p, t));
    sizes.push_back(skipped(p) ? -1 : p.shape()[dim]);
  }
  autograd::record("CatBackward", inputs, {out}, {}, [dim, sizes](const TensorList& g, const TensorList&) {
    TensorList grads;
    int64_t at = 0;
    for (int64_t s : sizes) {
      if (s < 0) {
        grads.push_back(new_empty({0}, g[0].dtype(), g[0].device()));
        continue;
      }
      grads.push_back(g[0].narrow(dim, at, s));
      at += s;
    }
    return grads;
  });
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors_arg, int64_t dim) {
  amp::AutocastInputs in(kStack, tensors_arg);
  const std::vector<Tensor>& tensors = in.list();
  MINIDL_CHECK(!tensors.empty(), "stack", "expected a non-empty list of tensors");
  dim = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_defined(tensors[i], "stack", "tensors");
    MINIDL_CHECK(tensors[i].shape() == tensors[0].shape(), "stack", "expects each tensor to be equal size, but got ",
                 shape_str(tensors[0].shape()), " at entry 0 and ", shape_str(tensors[i].shape()), " at entry ", i);
    parts.push_back(tensors[i].unsqueeze(dim));
  }
  return cat(parts, dim);
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  check_defined(x, "split", "self");
  MINIDL_CHECK(x.dim() > 0, "split", "expects at least a 1-dimensional tensor, got ", x.meta_str());
  MINIDL_CHECK(split_size >= 0, "split", "split_size must be non-negative, got ", split_size);
  dim = wrap_dim(dim, x.dim(), "split");
  std::vector<Tensor> out;
  const int64_t n = x.shape()[dim];
  // As PyTorch: an empty dim may be split with split_size 0 (one empty piece).
  MINIDL_CHECK(split_size > 0 || n == 0, "split", "split_size can only be 0 if dimension size is 0, but got dimension size of ", n);
  for (int64_t at = 0; at < n; at += split_size) out.push_back(x.narrow(dim, at, std::min(split_size, n - at)));
  if (out.empty()) out.push_back(x);
  return out;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  check_defined(x, "chunk", "self");
  MINIDL_CHECK(x.dim() > 0, "chunk", "expects at least a 1-dimensional tensor, got ", x.meta_str());
  MINIDL_CHECK(chunks > 0, "chunk", "number of chunks must be positive, got ", chunks);
  dim = wrap_dim(dim, x.dim(), "chunk");
  const int64_t n = x.shape()[dim];
  // An empty dim still gives `chunks` (empty) pieces, as torch.chunk.
  if (n == 0) {
    std::vector<Tensor> out;
    for (int64_t i = 0; i < chunks; ++i) out.push_back(x.narrow(dim, 0, 0));
    return out;
  }
  return split(x, (n + chunks - 1) / chunks, dim);
}

}  // namespace minidl
