// torch.nn.functional.max_unpool1d / max_unpool2d: the partial inverse of max pooling. Each value
// goes to the position its index names (a flat index into its output plane, as max_pool's
// indices), every other position is 0. Where two values name the same position (overlapping
// windows that chose the same maximum) the later one is kept, as PyTorch's CPU kernel writes them in
// order. Forward: the indices sorted per plane (stable), all but the last of each run of equal
// indices masked out, one scatter_add; backward: the output gradient gathered at the indices
// (every value at a shared position receives it, as PyTorch's). Autocast: none.
#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;

namespace {

// x and indices [P, K] (planes, values per plane) -> [P, out_size].
Tensor unpool_planes(const Tensor& x, const Tensor& indices, int64_t out_size) {
  Tensor out;
  {
    NoGradGuard no_grad;
    const ValuesIndices sorted = sort(indices, 1);
    const int64_t k = indices.size(1);
    // The last of each run of equal indices: the next sorted index differs, or there is none.
    const Tensor differs_from_next =
        cat({ne(sorted.values.narrow(1, 0, k - 1), sorted.values.narrow(1, 1, k - 1)),
             ones({indices.size(0), 1}, TensorOptions(DType::Bool).device(x.device()))},
            1);
    const Tensor values = where(differs_from_next, gather(x.detach(), 1, sorted.indices), zeros({}, x.dtype()).to(x.device()));
    out = scatter_add(zeros({x.size(0), out_size}, TensorOptions(x.dtype()).device(x.device())), 1, sorted.values, values);
  }
  autograd::record("MaxUnpoolBackward", {x}, {out}, {indices},
                   [](const TensorList& g, const TensorList& s) { return TensorList{gather(g[0], 1, s[0])}; });
  return out;
}

// The shared checks and the [P, K] views; `spatial` is the number of pooled dims (1 or 2).
Tensor max_unpool(const char* name, const Tensor& x, const Tensor& indices, int spatial, const Shape& out_spatial) {
  check_defined(x, name, "input");
  check_defined(indices, name, "indices");
  check_floating(name, x);
  check_same_device(name, x, indices);
  MINIDL_CHECK(indices.dtype() == DType::I64, name, "elements in indices should be type int64 but got: ",
               dtype_name(indices.dtype()));
  MINIDL_CHECK(x.dim() == spatial + 1 || x.dim() == spatial + 2, name, "Input to ", name, " should be a ", spatial + 1,
               "d or ", spatial + 2, "d Tensor, but got a tensor with ", x.dim(), " dimensions.");
  MINIDL_CHECK(indices.shape() == x.shape(), name, "Expected shape of indices to be same as that of the input tensor (",
               shape_str(x.shape()), ") but got indices tensor with shape: ", shape_str(indices.shape()));
  int64_t out_size = 1;
  for (int64_t s : out_spatial) {
    MINIDL_CHECK(s > 0, name, "the output size must be positive, got ", shape_str(out_spatial));
    out_size *= s;
  }
  const int64_t lead = x.dim() - spatial;  // [N, C] or [C]
  int64_t planes = 1;
  for (int64_t d = 0; d < lead; ++d) planes *= x.size(d);
  const int64_t per_plane = planes > 0 ? x.numel() / planes : 0;
  if (x.numel() > 0) {
    NoGradGuard no_grad;
    const double lo = min(indices).item(), hi = max(indices).item();
    MINIDL_CHECK(lo >= 0 && hi < static_cast<double>(out_size), name, "Found an invalid max index: ",
                 static_cast<int64_t>(lo < 0 ? lo : hi), " (output volumes are of size ", shape_str(out_spatial), ")");
  }
  Shape out_shape(x.shape().begin(), x.shape().begin() + lead);
  out_shape.insert(out_shape.end(), out_spatial.begin(), out_spatial.end());
  if (x.numel() == 0) return mul(zeros(out_shape, TensorOptions(x.dtype()).device(x.device())), 1.0);
  return unpool_planes(x.reshape({planes, per_plane}), indices.reshape({planes, per_plane}), out_size).reshape(out_shape);
}

// PyTorch's default output length: (in - 1) * stride - 2 * padding + kernel.
int64_t default_length(int64_t in, int64_t kernel, int64_t stride, int64_t padding) {
  return (in - 1) * (stride > 0 ? stride : kernel) - 2 * padding + kernel;
}

}  // namespace

Tensor max_unpool2d(const Tensor& x, const Tensor& indices, Size2 kernel_size, Size2 stride, Size2 padding,
                    std::optional<Size2> output_size) {
  check_defined(x, "max_unpool2d", "input");
  MINIDL_CHECK(x.dim() >= 2, "max_unpool2d", "Input to max_unpool2d should be a 3d or 4d Tensor, but got a tensor with ",
               x.dim(), " dimensions.");
  const int64_t h = x.size(x.dim() - 2), w = x.size(x.dim() - 1);
  const Size2 out = output_size ? *output_size
                                : Size2{default_length(h, kernel_size[0], stride[0], padding[0]),
                                        default_length(w, kernel_size[1], stride[1], padding[1])};
  return max_unpool("max_unpool2d", x, indices, 2, {out[0], out[1]});
}

Tensor max_unpool1d(const Tensor& x, const Tensor& indices, int64_t kernel_size, int64_t stride, int64_t padding,
                    std::optional<int64_t> output_size) {
  check_defined(x, "max_unpool1d", "input");
  MINIDL_CHECK(x.dim() >= 1, "max_unpool1d", "Input to max_unpool1d should be a 2d or 3d Tensor, but got a 0-dim tensor");
  const int64_t out = output_size ? *output_size : default_length(x.size(x.dim() - 1), kernel_size, stride, padding);
  return max_unpool("max_unpool1d", x, indices, 1, {out});
}

}  // namespace minidl
