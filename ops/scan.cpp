// Cumulative sum along one dim (torch.cumsum). Integer and bool inputs give i64, as PyTorch's;
// `dtype` casts the input first (a differentiable cast) and skips autocast. The backward is the
// cumulative sum of the gradient from the end of each line, itself differentiable (its backward
// is cumsum again). Autocast policy: none on CPU, FP32SetOptDtype on CUDA (PyTorch's fp32 list).
#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;

namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kCumsum{"cumsum", P::None, P::FP32SetOptDtype};

// out[i] = x[0] + ... + x[i] along dim (reverse: x[i] + ... + x[n-1]); x has at least one dim.
Tensor scan(const Tensor& x, int64_t dim, bool reverse) {
  Tensor out = new_empty(x.shape(), x.dtype(), x.device());
  K().scan.get(x.device(), x.dtype(), "cumsum")(out, x.detach().contiguous(), dim, reverse);
  if (x.is_floating_point())
    autograd::record(reverse ? "CumsumReverseBackward" : "CumsumBackward", {x}, {out}, {},
                     [dim, reverse](const TensorList& g, const TensorList&) { return TensorList{scan(g[0], dim, !reverse)}; });
  return out;
}
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::scan_policies() { return {&kCumsum}; }

Tensor cumsum(const Tensor& x_arg, int64_t dim, std::optional<DType> dtype) {
  const char* name = "cumsum";
  check_defined(x_arg, name, "self");
  Tensor x;
  if (dtype) {
    x = cast(x_arg, *dtype);
  } else {
    amp::AutocastInputs in(kCumsum, {x_arg});
    x = in[0].is_floating_point() ? in[0] : cast(in[0], DType::I64);
  }
  if (x.dim() == 0) {
    wrap_dim(dim, 1, name);
    return scan(x.reshape({1}), 0, false).reshape({});
  }
  return scan(x, wrap_dim(dim, x.dim(), name), false);
}

}  // namespace minidl
