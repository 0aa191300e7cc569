// Cumulative sums and products along one dim (torch.cumsum, torch.cumprod). Integer and bool inputs
// give i64, as PyTorch's; `dtype` casts the input first (a differentiable cast) and skips autocast.
// cumsum's backward is the cumulative sum of the gradient from the end of each line, itself
// differentiable. cumprod's backward is PyTorch's formula in differentiable ops, zeros included:
// before a line's first zero, sum_{j >= i} g_j out_j / x_i; at the first zero, the same sum with
// that zero taken as 1 (out_j / x_i there is the product of the others); after it, 0. Autocast
// policy: none on CPU, FP32SetOptDtype on CUDA for both (PyTorch's fp32 list).
#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;
using kernels::ScanOp;

namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kCumsum{"cumsum", P::None, P::FP32SetOptDtype};
const amp::OpPolicy kCumprod{"cumprod", P::None, P::FP32SetOptDtype};

Tensor cumprod_along(const Tensor& x, int64_t dim);

// out[i] = x[0] + ... + x[i] along dim (reverse: x[i] + ... + x[n-1]); x has at least one dim.
Tensor cumsum_along(const Tensor& x, int64_t dim, bool reverse) {
  Tensor out = new_empty(x.shape(), x.dtype(), x.device());
  K().scan.get(x.device(), x.dtype(), "cumsum")(ScanOp::Sum, out, x.detach().contiguous(), dim, reverse);
  if (x.is_floating_point())
    autograd::record(reverse ? "CumsumReverseBackward" : "CumsumBackward", {x}, {out}, {},
                     [dim, reverse](const TensorList& g, const TensorList&) { return TensorList{cumsum_along(g[0], dim, !reverse)}; });
  return out;
}

// d(sum g * cumprod(x)) / dx, in differentiable ops (see the file comment).
Tensor cumprod_gradient(const Tensor& x, const Tensor& out, const Tensor& g, int64_t dim) {
  const Tensor is_zero = cast(eq(x, 0.0), DType::I64);
  const Tensor zeros_seen = cumsum_along(is_zero, dim, false);  // zeros up to here
  const Tensor before = eq(zeros_seen, 0.0);
  const Tensor first_zero = eq(add(zeros_seen, is_zero), 2.0);  // a zero, and the first of its line
  const Tensor one = ones_like(x);
  const Tensor at_before = div(cumsum_along(mul(g, out), dim, true), where(before, x, one));
  const Tensor at_first = cumsum_along(mul(g, cumprod_along(where(first_zero, one, x), dim)), dim, true);
  return where(before, at_before, where(first_zero, at_first, zeros_like(x)));
}

Tensor cumprod_along(const Tensor& x, int64_t dim) {
  Tensor out = new_empty(x.shape(), x.dtype(), x.device());
  K().scan.get(x.device(), x.dtype(), "cumprod")(ScanOp::Prod, out, x.detach().contiguous(), dim, false);
  if (x.is_floating_point())
    autograd::record("CumprodBackward", {x}, {out}, {x, autograd::output(out)}, [dim](const TensorList& g, const TensorList& s) {
      return TensorList{cumprod_gradient(s[0], s[1], g[0], dim)};
    });
  return out;
}

// cumsum/cumprod's entry: the input cast to `dtype` when given (no autocast), else autocast's
// choice (its scope held while the op runs) with integers and bool promoted to i64; a 0-dim x as
// one element.
template <class Along>
Tensor scan_entry(const amp::OpPolicy& policy, const Tensor& x_arg, int64_t dim, std::optional<DType> dtype, Along along) {
  check_defined(x_arg, policy.op, "self");
  std::optional<amp::AutocastInputs> in;
  Tensor x;
  if (dtype) {
    x = cast(x_arg, *dtype);
  } else {
    in.emplace(policy, TensorList{x_arg});
    x = (*in)[0].is_floating_point() ? (*in)[0] : cast((*in)[0], DType::I64);
  }
  if (x.dim() == 0) {
    wrap_dim(dim, 0, policy.op);
    return along(x.reshape({1}), 0).reshape({});
  }
  return along(x, wrap_dim(dim, x.dim(), policy.op));
}
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::scan_policies() { return {&kCumsum, &kCumprod}; }

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return scan_entry(kCumsum, x, dim, dtype, [](const Tensor& v, int64_t d) { return cumsum_along(v, d, false); });
}

Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return scan_entry(kCumprod, x, dim, dtype, cumprod_along);
}

}  // namespace minidl
