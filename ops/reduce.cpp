// Reductions: sum, mean, var, the vector norm, logsumexp, max/min (all elements or along a dim,
// with indices), amax/amin (over dims), any/all, argmax/argmin and sum_to (the reverse of broadcasting). Autocast policy: None on CPU
// (sum is FP32SetOptDtype on CUDA, logsumexp FP32). Integer and bool sums produce i64, as PyTorch.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;
using kernels::ReduceOp;

// Autocast policies of this family (the policy table is built from these rows).
namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kSum{"sum", P::None, P::FP32SetOptDtype};
// PyTorch runs norm in f32 on CUDA (fp32_append_dtype: norm takes no dtype, so f32 is appended;
// our nearest policy is FP32SetOptDtype) and lists it for no CPU policy.
const amp::OpPolicy kNorm{"norm", P::None, P::FP32SetOptDtype};
// CUDA's fp32 list has logsumexp; the CPU lists do not (torch 1.13's CPU autocast keeps bf16).
const amp::OpPolicy kLogsumexp{"logsumexp", P::None, P::FP32};
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::reduce_policies() { return {&kSum, &kNorm, &kLogsumexp}; }

namespace {
// Sorted, wrapped, unique dims; empty means all.
std::vector<int64_t> normalize_dims(const std::vector<int64_t>& dims, int64_t ndim, const char* op) {
  std::set<int64_t> s;
  if (dims.empty()) for (int64_t d = 0; d < ndim; ++d) s.insert(d);
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, ndim, op);
    MINIDL_CHECK(s.insert(w).second, op, "dim ", w, " appears multiple times in the list of dims");
  }
  return {s.begin(), s.end()};
}

Shape keep_shape(const Shape& in, const std::vector<int64_t>& dims) {
  Shape s = in;
  for (int64_t d : dims) if (d < static_cast<int64_t>(s.size())) s[d] = 1;
  return s;
}

// How many elements each result of a reduction over dims sums (1 for a 0-dim x).
int64_t reduced_count(const Tensor& x, const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) if (x.dim() > 0) count *= x.shape()[d];
  return count;
}

Shape drop_shape(const Shape& in, const std::vector<int64_t>& dims) {
  Shape s;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d)
    if (!std::binary_search(dims.begin(), dims.end(), d)) s.push_back(in[d]);
  return s;
}

// Raw kernel call producing the keepdim-shaped result.
Tensor reduce_raw(ReduceOp op, const char* name, const Tensor& x, const std::vector<int64_t>& dims,
                  Tensor* indices = nullptr) {
  auto kernel = K().reduce.get(x.device(), x.dtype(), name);
  Shape ks = keep_shape(x.shape(), dims);
  Tensor out = new_empty(ks, x.dtype(), x.device());
  Tensor idx;
  if (indices) idx = new_empty(ks, DType::I64, x.device());
  if (x.dim() == 0) {
    out.copy_(x.detach());
    if (indices) idx.zero_();
  } else {
    kernel(op, out, idx, x.detach(), dims);
  }
  if (indices) *indices = idx;
  return out;
}
}  // namespace

Tensor sum(const Tensor& x_arg, std::vector<int64_t> dims_in, bool keepdim) {
  amp::AutocastInputs in(kSum, {x_arg});
  const Tensor& x_in = in[0];
  check_defined(x_in, "sum", "self");
  Tensor x = x_in.is_floating_point() ? x_in : cast(x_in, DType::I64);
  std::vector<int64_t> dims = normalize_dims(dims_in, x.dim(), "sum");
  Tensor out = reduce_raw(ReduceOp::Sum, "sum", x, dims);
  if (!keepdim) out = out.view(drop_shape(x.shape(), dims));
  autograd::record("SumBackward", {x}, {out}, {}, [in_shape = x.shape(), dims](const TensorList& g, const TensorList&) {
    return TensorList{g[0].reshape(keep_shape(in_shape, dims)).expand(in_shape)};
  });
  return out;
}

Tensor mean(const Tensor& x, std::vector<int64_t> dims_in, bool keepdim) {
  check_defined(x, "mean", "self");
  MINIDL_CHECK(x.is_floating_point(), "mean", "could not infer output dtype: input is ", dtype_name(x.dtype()),
               "; cast to a floating dtype first");
  // f16/bf16: sum and divide in f32, round once, as PyTorch's CUDA mean and 2.x's CPU one (1.13's
  // CPU mean accumulates in f16, so mean(full({2}, 60000, f16)) is inf there, 60000 here).
  if (is_low_precision(x.dtype())) return cast(mean(cast(x, DType::F32), std::move(dims_in), keepdim), x.dtype());
  std::vector<int64_t> dims = normalize_dims(dims_in, x.dim(), "mean");
  const int64_t count = reduced_count(x, dims);
  return div(sum(x, dims, keepdim), static_cast<double>(count));
}

Tensor Tensor::sum() const { return minidl::sum(*this); }
Tensor Tensor::mean() const { return minidl::mean(*this); }

Tensor var(const Tensor& x, std::vector<int64_t> dims_in, int64_t correction, bool keepdim) {
  check_defined(x, "var", "self");
  check_floating("var", x);
  // f16/bf16: squares and their sum are computed in f32 (they overflow f16 long before the result).
  if (is_low_precision(x.dtype())) return cast(var(cast(x, DType::F32), std::move(dims_in), correction, keepdim), x.dtype());
  std::vector<int64_t> dims = normalize_dims(dims_in, x.dim(), "var");
  const int64_t count = reduced_count(x, dims);
  Tensor centered = sub(x, mean(x, dims, true));
  Tensor ss = sum(mul(centered, centered), dims, keepdim);
  return div(ss, static_cast<double>(std::max<int64_t>(count - correction, 0)));
}

// sqrt(var) with its own backward: d std / dx = (x - mean) / ((n - correction) std), and 0 where the
// spread is 0 (PyTorch's std_backward masks there; sqrt's gradient would make it 0 * inf = NaN).
// The backward recomputes std from x with differentiable ops, so second derivatives hold.
Tensor std(const Tensor& x, std::vector<int64_t> dims_in, int64_t correction, bool keepdim) {
  check_defined(x, "std", "self");
  check_floating("std", x);
  if (is_low_precision(x.dtype())) return cast(std(cast(x, DType::F32), std::move(dims_in), correction, keepdim), x.dtype());
  std::vector<int64_t> dims = normalize_dims(dims_in, x.dim(), "std");
  const int64_t count = reduced_count(x, dims);
  Tensor out;
  {
    NoGradGuard ng;
    out = sqrt(var(x.detach(), dims, correction, keepdim));
  }
  const double divisor = static_cast<double>(std::max<int64_t>(count - correction, 0));
  autograd::record("StdBackward", {x}, {out}, {x},
                   [dims, correction, divisor, keep = keep_shape(x.shape(), dims)](const TensorList& g, const TensorList& s) {
                     const Tensor& xv = s[0];
                     Tensor sd = sqrt(var(xv, dims, correction, true));
                     Tensor zero = eq(sd, 0.0);
                     Tensor scale = div(g[0].reshape(keep), mul(where(zero, ones_like(sd), sd), divisor));
                     scale = where(zero, zeros_like(scale), scale);
                     return TensorList{mul(sub(xv, mean(xv, dims, true)), scale)};
                   });
  return out;
}

namespace {
ValuesIndices extreme(ReduceOp op, const char* name, const Tensor& x, int64_t dim, bool keepdim) {
  check_defined(x, name, "self");
  // Bool (PyTorch's max/min take it): the kernels compare its bytes as u8, the values return to bool.
  if (x.dtype() == DType::Bool) {
    ValuesIndices r = extreme(op, name, cast(x, DType::U8), dim, keepdim);
    return {cast(r.values, DType::Bool), r.indices};
  }
  dim = wrap_dim(dim, x.dim(), name);
  if (x.dim() > 0) MINIDL_CHECK(x.shape()[dim] > 0, name, "cannot reduce over a zero-size dimension ", dim);
  Tensor idx;
  Tensor out = reduce_raw(op, name, x, {dim}, &idx);
  if (!keepdim && x.dim() > 0) {
    out = out.squeeze(dim);
    idx = idx.squeeze(dim);
  }
  if (x.is_floating_point())
    autograd::record(op == ReduceOp::Max ? "MaxBackward" : "MinBackward", {x}, {out}, {idx},
                     [in_shape = x.shape(), dim, keepdim](const TensorList& g, const TensorList& s) {
                       // Route the gradient to the selected element: one_hot along dim, times g.
                       Tensor gk = keepdim ? g[0] : g[0].unsqueeze(dim);
                       Tensor ik = keepdim ? s[0] : s[0].unsqueeze(dim);
                       Tensor pos = arange(0, static_cast<double>(in_shape.empty() ? 1 : in_shape[dim]), 1, TensorOptions(DType::I64).device(g[0].device()));
                       Shape ps(in_shape.size(), 1);
                       if (!ps.empty()) ps[dim] = in_shape[dim];
                       Tensor mask = cast(eq(pos.reshape(ps), ik), g[0].dtype());
                       return TensorList{mul(mask, gk).expand(in_shape).contiguous().reshape(in_shape)};
                     });
  return {out, idx};
}

Tensor extreme_all(ReduceOp op, const char* name, const Tensor& x) {
  check_defined(x, name, "self");
  MINIDL_CHECK(x.numel() > 0, name, "operation does not have an identity: cannot reduce an empty tensor");
  Tensor out;
  {
    NoGradGuard ng;
    out = extreme(op, name, x.detach().reshape({-1}), 0, false).values;
  }
  // As PyTorch's max()/min() without a dim: the gradient is split evenly among all elements equal
  // to the result (all NaNs when the result is NaN), unlike max(x, dim) which picks one index.
  if (x.is_floating_point())
    autograd::record(op == ReduceOp::Max ? "MaxBackward" : "MinBackward", {x}, {out}, {x, autograd::output(out)},
                     [](const TensorList& g, const TensorList& s) {
                       const Tensor& x = s[0];
                       const double v = s[1].item();
                       Tensor mask = cast(v != v ? ne(x, x) : eq(x, v), g[0].dtype());
                       return TensorList{div(mul(mask, g[0]), sum(mask))};
                     });
  return out;
}
}  // namespace

ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim) { return extreme(ReduceOp::Max, "max", x, dim, keepdim); }
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim) { return extreme(ReduceOp::Min, "min", x, dim, keepdim); }
Tensor max(const Tensor& x) { return extreme_all(ReduceOp::Max, "max", x); }
Tensor min(const Tensor& x) { return extreme_all(ReduceOp::Min, "min", x); }

namespace {
// amax/amin over dims (empty = all): the extreme value of each slice, no indices. As PyTorch's, the
// gradient is shared evenly by the elements equal to the extreme, (g / count) * mask, which is NaN
// across a slice whose extreme is NaN (no element equals it).
Tensor extreme_over_dims(ReduceOp op, const char* name, const Tensor& x, const std::vector<int64_t>& dims_in, bool keepdim) {
  check_defined(x, name, "self");
  if (x.dtype() == DType::Bool) return cast(extreme_over_dims(op, name, cast(x, DType::U8), dims_in, keepdim), DType::Bool);
  const std::vector<int64_t> dims = normalize_dims(dims_in, x.dim(), name);
  for (int64_t d : dims)
    MINIDL_CHECK(x.dim() == 0 || x.shape()[d] > 0, name, "expected reduction dim ", d, " to have non-zero size (",
                 x.meta_str(), ")");
  const Tensor r = reduce_raw(op, name, x, dims);  // keepdim-shaped
  Tensor out = keepdim ? r : r.view(drop_shape(x.shape(), dims));
  if (x.is_floating_point())
    autograd::record(op == ReduceOp::Max ? "AmaxBackward" : "AminBackward", {x}, {out}, {x, autograd::output(out)},
                     [dims, keep = keep_shape(x.shape(), dims)](const TensorList& g, const TensorList& s) {
                       const Tensor mask = cast(eq(s[0], s[1].reshape(keep)), g[0].dtype());
                       return TensorList{mul(div(g[0].reshape(keep), sum(mask, dims, true)), mask)};
                     });
  return out;
}
}  // namespace

Tensor amax(const Tensor& x, std::vector<int64_t> dims, bool keepdim) { return extreme_over_dims(ReduceOp::Max, "amax", x, dims, keepdim); }
Tensor amin(const Tensor& x, std::vector<int64_t> dims, bool keepdim) { return extreme_over_dims(ReduceOp::Min, "amin", x, dims, keepdim); }

namespace {
// any/all: whether some / every element is non-zero (NaN counts as non-zero), over all elements or
// along dim, as counts of the zeros or non-zeros; an empty slice gives false / true. bool results,
// except u8 inputs, which give u8 (PyTorch 1.13's quirk, kept).
Tensor logical_reduce(const char* name, bool every, const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  check_defined(x, name, "self");
  NoGradGuard no_grad;
  const Tensor hits = every ? eq(x.detach(), 0.0) : ne(x.detach(), 0.0);
  const Tensor count = dim ? sum(hits, {*dim}, keepdim) : sum(hits);
  const Tensor r = every ? eq(count, 0.0) : gt(count, 0.0);
  return x.dtype() == DType::U8 ? cast(r, DType::U8) : r;
}
}  // namespace

Tensor any(const Tensor& x) { return logical_reduce("any", false, x, std::nullopt, false); }
Tensor all(const Tensor& x) { return logical_reduce("all", true, x, std::nullopt, false); }
Tensor any(const Tensor& x, int64_t dim, bool keepdim) { return logical_reduce("any", false, x, dim, keepdim); }
Tensor all(const Tensor& x, int64_t dim, bool keepdim) { return logical_reduce("all", true, x, dim, keepdim); }

namespace {
// argmax/argmin: max/min's index along dim (the first of equal extremes; the first NaN wins), i64.
// Bool is refused, as PyTorch's argmax/argmin (max/min take it). dim nullopt: over all elements.
Tensor arg_extreme(ReduceOp op, const char* name, const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  check_defined(x, name, "self");
  MINIDL_CHECK(x.dtype() != DType::Bool, name, "takes no bool tensor, as PyTorch's (got ", x.meta_str(),
               "); cast to an integer dtype first");
  NoGradGuard ng;
  if (!dim) return extreme(op, name, x.reshape({-1}), 0, false).indices;
  return extreme(op, name, x, *dim, keepdim).indices;
}
}  // namespace

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) { return arg_extreme(ReduceOp::Max, "argmax", x, dim, keepdim); }
Tensor argmax(const Tensor& x) { return arg_extreme(ReduceOp::Max, "argmax", x, std::nullopt, false); }
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) { return arg_extreme(ReduceOp::Min, "argmin", x, dim, keepdim); }
Tensor argmin(const Tensor& x) { return arg_extreme(ReduceOp::Min, "argmin", x, std::nullopt, false); }

// ---- the vector norm
namespace {
// ||x||_p over sorted dims, keepdim-shaped, for an f32/f64 x; records nothing.
Tensor norm_values(const Tensor& x, double p, const std::vector<int64_t>& dims) {
  NoGradGuard ng;
  const Tensor xd = x.detach();
  if (p == 2.0) return sqrt(reduce_raw(ReduceOp::Sum, "norm", mul(xd, xd), dims));
  if (p == 1.0) return reduce_raw(ReduceOp::Sum, "norm", abs(xd), dims);
  if (p == 0.0) return reduce_raw(ReduceOp::Sum, "norm", cast(ne(xd, 0.0), x.dtype()), dims);
  if (std::isinf(p)) {
    Tensor r = abs(xd);
    for (int64_t d : dims) r = extreme(p > 0 ? ReduceOp::Max : ReduceOp::Min, "norm", r, d, true).values;
    return r;
  }
  return pow(reduce_raw(ReduceOp::Sum, "norm", pow(abs(xd), p), dims), 1.0 / p);
}

// d||x||_p/dx * g in differentiable ops (PyTorch's norm_backward): n is the keepdim-shaped norm, g
// the keepdim-shaped incoming gradient. Where the norm is 0 the gradient is 0.
Tensor norm_gradient(const Tensor& x, const Tensor& n, const Tensor& g, double p, const std::vector<int64_t>& dims) {
  if (p == 0.0) return zeros_like(x);
  if (p == 1.0) return mul(sign(x), g);
  const Tensor zero = zeros_like(g);
  if (std::isinf(p)) {
    // The gradient is shared evenly by the elements at the extreme (as PyTorch's amax backward);
    // a NaN element is the extreme of a NaN norm (PyTorch 2.x; with sign(NaN) = 0 every gradient
    // is then 0, as PyTorch's, not the NaN of a gradient shared among no extreme).
    const Tensor ax = abs(x);
    const Tensor at = add(cast(eq(ax, n), x.dtype()), cast(ne(ax, ax), x.dtype()));
    return mul(mul(sign(x), at), div(g, sum(at, dims, true)));
  }
  const Tensor scale = where(eq(n, 0.0), zero, div(g, pow(n, p - 1.0)));  // g / n^(p-1)
  if (p < 1.0) {
    const Tensor ax = abs(x);
    const Tensor d = where(eq(x, 0.0), zeros_like(x), pow(ax, p - 1.0));
    return mul(mul(sign(x), d), mul(g, pow(n, 1.0 - p)));
  }
  if (p < 2.0) return mul(mul(sign(x), pow(abs(x), p - 1.0)), scale);
  if (p == 2.0) return mul(x, scale);
  return mul(mul(x, pow(abs(x), p - 2.0)), scale);
}
}  // namespace

Tensor norm(const Tensor& x_arg, double p, std::vector<int64_t> dims_in, bool keepdim) {
  amp::AutocastInputs in(kNorm, {x_arg});
  const Tensor& x = in[0];
  check_defined(x, "norm", "self");
  MINIDL_CHECK(x.is_floating_point(), "norm", "expected a floating point input, got ", x.meta_str());
  MINIDL_CHECK(!std::isnan(p), "norm", "p must be a number, got nan");
  // f16/bf16 accumulate in f32 and round once, as PyTorch's reductions.
  if (is_low_precision(x.dtype())) return cast(norm(cast(x, DType::F32), p, std::move(dims_in), keepdim), x.dtype());
  const std::vector<int64_t> dims = normalize_dims(dims_in, x.dim(), "norm");
  if (std::isinf(p) && x.dim() > 0)
    for (int64_t d : dims)
      MINIDL_CHECK(x.shape()[d] > 0, "norm", "the inf norm of an empty dimension (", d, ") is undefined");
  const Tensor n = norm_values(x, p, dims);  // keepdim-shaped
  Tensor out = keepdim ? n : n.view(drop_shape(x.shape(), dims));
  // The output is saved as an output: under create_graph it is the norm as a function of x again,
  // so gradients of the gradient see that dependence.
  autograd::record("NormBackward", {x}, {out}, {x, autograd::output(out)},
                   [p, dims, keep = keep_shape(x.shape(), dims)](const TensorList& g, const TensorList& s) {
                     return TensorList{norm_gradient(s[0], s[1].reshape(keep), g[0].reshape(keep), p, dims)};
                   });
  return out;
}

// ---- logsumexp
namespace {
// PyTorch's logsumexp_out_impl on an f32/f64 x: m = max over dims with +-inf replaced by 0, then
// log(sum(exp(x - m))) + m; an empty x skips the max (its sums are 0: the result is -inf).
Tensor logsumexp_floating(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  Tensor out;
  {
    NoGradGuard ng;
    const Tensor xd = x.detach();
    Tensor r;
    if (x.numel() == 0) {
      r = log(sum(exp(xd), dims, true));
    } else {
      Tensor m = reduce_raw(ReduceOp::Max, "logsumexp", xd, dims);  // keepdim-shaped
      m = where(eq(abs(m), INFINITY), zeros_like(m), m);
      r = add(log(sum(exp(sub(xd, m)), dims, true)), m);
    }
    out = keepdim ? r : r.view(drop_shape(x.shape(), dims));
  }
  // PyTorch's logsumexp_backward: g * exp(x - result). The result is saved as an output, so under
  // create_graph the second derivative sees its dependence on x.
  autograd::record("LogsumexpBackward", {x}, {out}, {x, autograd::output(out)},
                   [keep = keep_shape(x.shape(), dims)](const TensorList& g, const TensorList& s) {
                     return TensorList{mul(g[0].reshape(keep), exp(sub(s[0], s[1].reshape(keep))))};
                   });
  return out;
}
}  // namespace

Tensor logsumexp(const Tensor& x_arg, std::vector<int64_t> dims_in, bool keepdim) {
  amp::AutocastInputs in(kLogsumexp, {x_arg});
  const Tensor& x = in[0];
  check_defined(x, "logsumexp", "self");
  const std::vector<int64_t> dims = normalize_dims(dims_in, x.dim(), "logsumexp");
  // Integer and bool inputs give PyTorch's default dtype; f16/bf16 compute in f32, round once.
  if (!x.is_floating_point()) return logsumexp_floating(cast(x, DType::F32), dims, keepdim);
  if (is_low_precision(x.dtype())) return cast(logsumexp_floating(cast(x, DType::F32), dims, keepdim), x.dtype());
  return logsumexp_floating(x, dims, keepdim);
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const int64_t lead = x.dim() - static_cast<int64_t>(shape.size());
  MINIDL_CHECK(lead >= 0, "sum_to", "cannot reduce ", shape_str(x.shape()), " to the larger shape ", shape_str(shape));
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d < lead) { dims.push_back(d); continue; }
    const int64_t want = shape[d - lead];
    if (want == 1 && x.shape()[d] != 1) dims.push_back(d);
    else MINIDL_CHECK(want == x.shape()[d], "sum_to", "cannot reduce ", shape_str(x.shape()), " to ", shape_str(shape));
  }
  if (dims.empty()) return x.reshape(shape);
  return sum(x, dims, true).reshape(shape);
}

}  // namespace minidl
