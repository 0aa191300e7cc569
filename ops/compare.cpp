// Comparisons (bool results, not differentiable), isnan/isinf/isfinite, logical_and/or/xor/not,
// where (differentiable in
// both branches), tril/triu (where with a diagonal mask) and clamp.
#include <cmath>
#include <algorithm>
#include <limits>

#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;
using kernels::BinaryOp;

namespace {
Tensor compare(BinaryOp op, const char* name, const Tensor& a, const Tensor& b) {
  check_defined(a, name, "self");
  check_defined(b, name, "other");
  check_same_device(name, a, b);
  const DType t = result_type(a, b);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  auto kernel = K().binary.get(a.device(), t, name);
  Tensor x = cast(a, t).detach(), y = cast(b, t).detach();
  Tensor out = new_empty(shape, DType::Bool, x.device());
  kernel(op, out, x, y, 0.0, 1.0);
  return out;
}
Tensor compare(BinaryOp op, const char* name, const Tensor& a, double s) {
  check_defined(a, name, "self");
  const DType t = result_type(a, s);
  auto kernel = K().binary.get(a.device(), t, name);
  Tensor x = cast(a, t).detach();
  Tensor out = new_empty(x.shape(), DType::Bool, x.device());
  kernel(op, out, x, Tensor(), s, 1.0);
  return out;
}
}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) { return compare(BinaryOp::Eq, "eq", a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(BinaryOp::Ne, "ne", a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(BinaryOp::Lt, "lt", a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(BinaryOp::Le, "le", a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare(BinaryOp::Gt, "gt", a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(BinaryOp::Ge, "ge", a, b); }
Tensor eq(const Tensor& a, double b) { return compare(BinaryOp::Eq, "eq", a, b); }
Tensor ne(const Tensor& a, double b) { return compare(BinaryOp::Ne, "ne", a, b); }
Tensor lt(const Tensor& a, double b) { return compare(BinaryOp::Lt, "lt", a, b); }
Tensor le(const Tensor& a, double b) { return compare(BinaryOp::Le, "le", a, b); }
Tensor gt(const Tensor& a, double b) { return compare(BinaryOp::Gt, "gt", a, b); }
Tensor ge(const Tensor& a, double b) { return compare(BinaryOp::Ge, "ge", a, b); }

// Integer and bool tensors hold no NaN or infinity: all false (isfinite: all true), as PyTorch's.
Tensor isnan(const Tensor& x) {
  check_defined(x, "isnan", "self");
  return ne(x, x);
}
Tensor isinf(const Tensor& x) {
  check_defined(x, "isinf", "self");
  return x.is_floating_point() ? eq(abs(x.detach()), INFINITY) : zeros(x.shape(), TensorOptions(DType::Bool).device(x.device()));
}
Tensor isfinite(const Tensor& x) {
  check_defined(x, "isfinite", "self");
  if (!x.is_floating_point()) return ones(x.shape(), TensorOptions(DType::Bool).device(x.device()));
  return eq(sub(x.detach(), x.detach()), 0.0);  // x - x is 0 for a finite x, NaN for inf and NaN
}

// Truth values as torch's: nonzero (NaN included) is true. Broadcasting; any two dtypes.
namespace {
Tensor truth(const Tensor& x, const char* op, const char* arg) {
  check_defined(x, op, arg);
  return x.dtype() == DType::Bool ? x.detach() : ne(x.detach(), 0.0);
}
// The truth values of a pair, after the op's own broadcast check (so an error names it).
std::pair<Tensor, Tensor> truth_pair(const Tensor& a, const Tensor& b, const char* op) {
  Tensor ta = truth(a, op, "self"), tb = truth(b, op, "other");
  broadcast_shapes(ta.shape(), tb.shape(), op);
  check_same_device(op, ta, tb);
  return {ta, tb};
}
}  // namespace
Tensor logical_not(const Tensor& x) { return eq(truth(x, "logical_not", "self"), 0.0); }
Tensor logical_and(const Tensor& a, const Tensor& b) {  // mul of two bool tensors is their and
  auto [ta, tb] = truth_pair(a, b, "logical_and");
  return mul(ta, tb);
}
Tensor logical_or(const Tensor& a, const Tensor& b) {  // add of two bool tensors is their or
  auto [ta, tb] = truth_pair(a, b, "logical_or");
  return add(ta, tb);
}
Tensor logical_xor(const Tensor& a, const Tensor& b) {
  auto [ta, tb] = truth_pair(a, b, "logical_xor");
  return ne(ta, tb);
}

Tensor where(const Tensor& cond, const Tensor& a_in, const Tensor& b_in) {
  check_defined(cond, "where", "condition");
  check_defined(a_in, "where", "self");
  check_defined(b_in, "where", "other");
  MINIDL_CHECK(cond.dtype() == DType::Bool, "where", "condition must be a bool tensor, got ", cond.meta_str());
  check_same_device("where", cond, a_in);
  check_same_device("where", a_in, b_in);
  const DType t = result_type(a_in, b_in);
  Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a_in.shape(), "where"), b_in.shape(), "where");
  auto kernel = K().where.get(a_in.device(), t, "where");
  Tensor a = cast(a_in, t), b = cast(b_in, t);
  Tensor out = new_empty(shape, t, a.device());
  kernel(out, cond, a, b);
  autograd::record("WhereBackward", {a, b}, {out}, {cond},
                   [sa = a.shape(), sb = b.shape()](const TensorList& g, const TensorList& s) {
                     Tensor z = zeros_like(g[0]);
                     return TensorList{sum_to(where(s[0], g[0], z), sa), sum_to(where(s[0], z, g[0]), sb)};
                   });
  return out;
}

// Integer clamp: stays integer for integral bounds (a fractional or infinite bound promotes to
// f32, as torch's type promotion with a float scalar); bounds outside the dtype's range are errors,
// as PyTorch's "value cannot be converted ... without overflow". A bool tensor clamps as i64 (torch
// promotes bool with an integer scalar to its default integer type).
Tensor clamp_integer(const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  auto integral = [](std::optional<double> b) { return !b || (std::isfinite(*b) && *b == std::floor(*b)); };
  if (!integral(lo) || !integral(hi)) return clamp(cast(x, DType::F32), lo, hi);
  if (x.dtype() == DType::Bool) return clamp_integer(cast(x, DType::I64), lo, hi);
  const double top = traits(x.dtype()).max, bottom = x.dtype() == DType::U8 ? 0.0 : -top - 1;
  Tensor r = x.detach();
  for (auto [bound, below] : {std::pair{lo, true}, std::pair{hi, false}}) {
    if (!bound) continue;
    MINIDL_CHECK(*bound >= bottom && *bound < top + 1, "clamp", below ? "min " : "max ", *bound,
                 " cannot be converted to ", dtype_name(x.dtype()), " without overflow");
    // Applied in order, so min > max leaves every element at max.
    r = where(below ? lt(r, *bound) : gt(r, *bound), full_like(r, *bound), r);
  }
  return r;
}

namespace {
// x with the elements off one side of diagonal `diagonal` of its last two dims zeroed: lower keeps
// column - row <= diagonal (tril), else column - row >= diagonal (triu). Differentiable through where.
Tensor triangle(const char* name, const Tensor& x, int64_t diagonal, bool lower) {
  check_defined(x, name, "self");
  MINIDL_CHECK(x.dim() >= 2, name, "expected a tensor of at least 2 dims, got ", x.meta_str());
  const TensorOptions index_opts = TensorOptions(DType::I64).device(x.device());
  const int64_t rows = x.shape()[x.dim() - 2], cols = x.shape()[x.dim() - 1];
  const Tensor offset = sub(arange(0, static_cast<double>(cols), 1, index_opts).reshape({1, cols}),
                            arange(0, static_cast<double>(rows), 1, index_opts).reshape({rows, 1}));  // column - row
  const Tensor keep = lower ? le(offset, static_cast<double>(diagonal)) : ge(offset, static_cast<double>(diagonal));
  return where(keep, x, zeros({}, TensorOptions(x.dtype()).device(x.device())));
}
}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle("tril", x, diagonal, true); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle("triu", x, diagonal, false); }

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  check_defined(x, "masked_fill", "self");
  check_defined(mask, "masked_fill", "mask");
  check_same_device("masked_fill", x, mask);
  MINIDL_CHECK(mask.dtype() == DType::Bool, "masked_fill", "expected a bool mask, got ", mask.meta_str());
  MINIDL_CHECK(broadcast_shapes(x.shape(), mask.shape(), "masked_fill") == x.shape(), "masked_fill", "mask ",
               shape_str(mask.shape()), " does not broadcast to the input's shape ", shape_str(x.shape()));
  return where(mask, full_like(x.detach(), value), x);
}

Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  check_defined(x, "clamp", "self");
  MINIDL_CHECK(lo || hi, "clamp", "At least one of 'min' or 'max' must not be None");
  if (!x.is_floating_point()) return clamp_integer(x, lo, hi);
  const double l = lo.value_or(-std::numeric_limits<double>::infinity());
  const double h = hi.value_or(std::numeric_limits<double>::infinity());
  auto kernel = K().unary.get(x.device(), x.dtype(), "clamp");
  Tensor out = new_empty(x.shape(), x.dtype(), x.device());
  // min > max sets every element to max, as torch.clamp (= min(max(x, min), max)); NaN stays NaN.
  // Both bounds given and either NaN: every element is NaN, as PyTorch 1.13's clamp(x, min, max); a
  // single NaN bound (its clamp_min / clamp_max) leaves x as it is. The gradient is 0 in both cases.
  if (lo && hi && (std::isnan(*lo) || std::isnan(*hi))) out.fill_(std::numeric_limits<double>::quiet_NaN());
  else kernel(kernels::UnaryOp::Clamp, out, x, std::min(l, h), h);
  autograd::record("ClampBackward", {x}, {out}, {x}, [l, h](const TensorList& g, const TensorList& s) {
    // Gradient passes where the input was inside [min, max] (boundaries included, as PyTorch).
    Tensor inside = cast(eq(add(cast(ge(s[0], l), g[0].dtype()), cast(le(s[0], h), g[0].dtype())), 2.0), g[0].dtype());
    return TensorList{mul(g[0], inside)};
  });
  return out;
}

}  // namespace minidl
