// torch.nn.functional.local_response_norm (AlexNet's LRN): each value divided by
// (k + alpha / size * sum of the squares of the `size` neighbouring channels)^beta, the window
// centred on the channel (size/2 before, (size-1)/2 after) and zero-padded at the ends, as
// PyTorch's avg_pool over the padded squares (which counts the padding). A composite of mul,
// narrow, add and pow, so differentiable to any order; autocast: none (PyTorch's F form is
// Python over ops none of its lists cast).
#include "ops/common.h"

namespace minidl {

using namespace ops_detail;

Tensor local_response_norm(const Tensor& x, int64_t size, double alpha, double beta, double k) {
  const char* name = "local_response_norm";
  check_defined(x, name, "input");
  MINIDL_CHECK(x.dim() >= 3, name, "Expected 3D or higher dimensionality input (got ", x.dim(), " dimensions)");
  MINIDL_CHECK(size > 0, name, "size must be positive, got ", size);
  check_floating(name, x);
  if (x.numel() == 0) return x;
  const int64_t before = size / 2, after = (size - 1) / 2;
  Shape pad_before = x.shape(), pad_after = x.shape();
  pad_before[1] = before;
  pad_after[1] = after;
  const TensorOptions options = TensorOptions(x.dtype()).device(x.device());
  const Tensor squares = cat({zeros(pad_before, options), mul(x, x), zeros(pad_after, options)}, 1);
  const int64_t c = x.size(1);
  Tensor window = squares.narrow(1, 0, c);
  for (int64_t s = 1; s < size; ++s) window = add(window, squares.narrow(1, s, c));
  const Tensor denominator = pow(add(mul(div(window, static_cast<double>(size)), alpha), k), beta);
  return div(x, denominator);
}

}  // namespace minidl
