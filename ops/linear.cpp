// Matrix products: mm, bmm, matmul (NumPy/PyTorch semantics incl. batch broadcasting), linear and
// addmm. Autocast policy: LowerPrecision, declared below; each public op consults autocast once and
// composites (matmul, linear) run the implementations of their parts. The bias
// of linear/addmm is written into the output first and the GEMM accumulates onto it (beta = 1),
// so the bias costs no extra pass over memory.
#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;

namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kMm{"mm", P::LowerPrecision, P::LowerPrecision};
const amp::OpPolicy kBmm{"bmm", P::LowerPrecision, P::LowerPrecision};
const amp::OpPolicy kMatmul{"matmul", P::LowerPrecision, P::LowerPrecision};
const amp::OpPolicy kAddmm{"addmm", P::LowerPrecision, P::LowerPrecision};
const amp::OpPolicy kLinear{"linear", P::LowerPrecision, P::LowerPrecision};

void check_matmul_args(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(a, op, "self");
  check_defined(b, op, "mat2");
  check_same_device(op, a, b);
  // As PyTorch: integer products on CPU (exact, in the integer type); bool and CUDA integers refuse.
  MINIDL_CHECK(a.is_floating_point() || (a.device().is_cpu() && a.dtype() != DType::Bool), op,
               "expected a floating point tensor", a.device().is_cpu() ? " or an integer one" : " (integer products run on CPU only)",
               ", got ", a.meta_str());
  MINIDL_CHECK(a.dtype() == b.dtype(), op, "expected both operands to have the same dtype, but got ", dtype_name(a.dtype()),
               " != ", dtype_name(b.dtype()));
}

// Whether a matrix is stored column-major: a transposed view of a contiguous one, as linear's
// weight.t(). PyTorch's test in mm_mat1_backward / mm_mat2_backward.
bool column_major(const Tensor& m) { return m.stride(0) == 1 && m.stride(1) == m.size(0); }

// Gradients of c = a b, each in its operand's own layout (as PyTorch): for linear's weight.t() the
// gradient is computed as (g^T a)^T, so after the transpose's backward the weight's gradient arrives
// contiguous and the leaf keeps it without a copy (a transposed one would be copied, ~13% of an
// MLP step), and under autocast it narrows and widens in flat passes.
Tensor mat1_grad(const Tensor& g, const Tensor& b, bool a_column_major) {
  return a_column_major ? mm(b, g.t()).t() : mm(g, b.t());
}
Tensor mat2_grad(const Tensor& g, const Tensor& a, bool b_column_major) {
  return b_column_major ? mm(g.t(), a).t() : mm(a.t(), g);
}

Tensor gemm(const char* op, const Tensor& a, const Tensor& b, const Shape& out_shape, const Tensor& init, double alpha,
            double beta) {
  auto kernel = K().gemm.get(a.device(), a.dtype(), op);
  Tensor out = new_empty(out_shape, a.dtype(), a.device());
  NoGradGuard ng;
  if (init.defined() && beta != 0) out.copy_(init.detach());
  if (alpha == 0) {
    // BLAS skips the product when alpha is 0, so PyTorch's result ignores NaN and inf in a and b.
    if (!init.defined() || beta == 0) out.zero_();
    else if (beta != 1) out.mul_(beta);
    return out;
  }
  kernel(out, a.detach(), b.detach(), alpha, init.defined() ? beta : 0.0);
  return out;
}

Tensor mm_impl(const Tensor& a, const Tensor& b) {
  check_matmul_args("mm", a, b);
  MINIDL_CHECK(a.dim() == 2 && b.dim() == 2, "mm", "expected 2-D tensors, got ", a.meta_str(), " and ", b.meta_str());
  MINIDL_CHECK(a.size(1) == b.size(0), "mm", "mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x", a.size(1),
               " and ", b.size(0), "x", b.size(1), ")");
  Tensor out = gemm("mm", a, b, {a.size(0), b.size(1)}, Tensor(), 1.0, 0.0);
  const bool ga = a.requires_grad(), gb = b.requires_grad();
  autograd::record("MmBackward", {a, b}, {out}, {gb ? a : Tensor(), ga ? b : Tensor()},
                   [ga, gb, acm = column_major(a), bcm = column_major(b)](const TensorList& g, const TensorList& s) {
                     return TensorList{ga ? mat1_grad(g[0], s[1], acm) : Tensor(), gb ? mat2_grad(g[0], s[0], bcm) : Tensor()};
                   });
  return out;
}

Tensor bmm_impl(const Tensor& a, const Tensor& b) {
  check_matmul_args("bmm", a, b);
  MINIDL_CHECK(a.dim() == 3 && b.dim() == 3, "bmm", "expected 3-D tensors, got ", a.meta_str(), " and ", b.meta_str());
  MINIDL_CHECK(a.size(0) == b.size(0), "bmm", "batch sizes differ: ", a.size(0), " vs ", b.size(0));
  MINIDL_CHECK(a.size(2) == b.size(1), "bmm", "shapes cannot be multiplied (", shape_str(a.shape()), " and ",
               shape_str(b.shape()), ")");
  Tensor out = gemm("bmm", a, b, {a.size(0), a.size(1), b.size(2)}, Tensor(), 1.0, 0.0);
  const bool ga = a.requires_grad(), gb = b.requires_grad();
  autograd::record("BmmBackward", {a, b}, {out}, {gb ? a : Tensor(), ga ? b : Tensor()},
                   [ga, gb](const TensorList& g, const TensorList& s) {
                     return TensorList{ga ? bmm(g[0], s[1].transpose(1, 2)) : Tensor(),
                                       gb ? bmm(s[0].transpose(1, 2), g[0]) : Tensor()};
                   });
  return out;
}

Tensor matmul_impl(const Tensor& a, const Tensor& b) {
  check_matmul_args("matmul", a, b);
  const int64_t da = a.dim(), db = b.dim();
  MINIDL_CHECK(da >= 1 && db >= 1, "matmul", "both arguments need at least 1 dimension, got ", a.meta_str(), " and ",
               b.meta_str());
  // The contracted sizes must agree whatever the ranks; checked here so the error names matmul.
  const int64_t ka = a.size(-1), kb = db == 1 ? b.size(0) : b.size(-2);
  MINIDL_CHECK(ka == kb, "matmul", "shapes cannot be multiplied (", shape_str(a.shape()), " and ", shape_str(b.shape()),
               "): ", ka, " vs ", kb, " in the contracted dim");
  if (da == 1 && db == 1) {
    return mm_impl(a.unsqueeze(0), b.unsqueeze(1)).reshape({});
  }
  if (da == 2 && db == 1) return mm_impl(a, b.unsqueeze(1)).squeeze(1);
  if (da == 1 && db == 2) return mm_impl(a.unsqueeze(0), b).squeeze(0);
  if (da == 2 && db == 2) return mm_impl(a, b);
  if (db <= 2) {
    // [..., n, k] @ [k, m]: fold the batch into rows, one GEMM.
    Tensor b2 = db == 1 ? b.unsqueeze(1) : b;
    Shape out_shape(a.shape().begin(), a.shape().end() - 1);
    Tensor r = mm_impl(a.reshape({-1, a.size(-1)}), b2);
    if (db == 2) out_shape.push_back(b.size(1));
    return r.reshape(out_shape);
  }
  // General: broadcast batch dims and run bmm.
  Tensor a3 = da == 1 ? a.unsqueeze(0) : a;
  Tensor b3 = b;
  Shape ba(a3.shape().begin(), a3.shape().end() - 2), bb(b3.shape().begin(), b3.shape().end() - 2);
  Shape batch = broadcast_shapes(ba, bb, "matmul");
  const int64_t n = a3.size(-2), k = a3.size(-1), m = b3.size(-1);
  MINIDL_CHECK(k == b3.size(-2), "matmul", "shapes cannot be multiplied (", shape_str(a.shape()), " and ", shape_str(b.shape()), ")");
  Shape ea = batch, eb = batch;
  ea.insert(ea.end(), {n, k});
  eb.insert(eb.end(), {k, m});
  const int64_t nb = numel_of(batch);
  Tensor r = bmm_impl(a3.expand(ea).reshape({nb, n, k}), b3.expand(eb).reshape({nb, k, m}));
  Shape out_shape = batch;
  if (da > 1) out_shape.push_back(n);
  out_shape.push_back(m);
  return r.reshape(out_shape);
}

Tensor addmm_impl(const Tensor& bias, const Tensor& a, const Tensor& b, double beta, double alpha) {
  check_matmul_args("addmm", a, b);
  check_defined(bias, "addmm", "self");
  MINIDL_CHECK(a.dim() == 2 && b.dim() == 2, "addmm", "expected 2-D matrices, got ", a.meta_str(), " and ", b.meta_str());
  MINIDL_CHECK(a.size(1) == b.size(0), "addmm", "mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x", a.size(1),
               " and ", b.size(0), "x", b.size(1), ")");
  MINIDL_CHECK(bias.dtype() == a.dtype(), "addmm", "bias dtype ", dtype_name(bias.dtype()), " does not match ", dtype_name(a.dtype()));
  Shape out_shape{a.size(0), b.size(1)};
  broadcast_shapes(bias.shape(), out_shape, "addmm");
  Tensor out = gemm("addmm", a, b, out_shape, bias, alpha, beta);
  const bool ga = a.requires_grad(), gb = b.requires_grad();
  autograd::record("AddmmBackward", {bias, a, b}, {out}, {gb ? a : Tensor(), ga ? b : Tensor()},
                   [ga, gb, beta, alpha, bs = bias.shape(), acm = column_major(a), bcm = column_major(b)](
                       const TensorList& g, const TensorList& s) {
                     Tensor gbias = sum_to(beta == 1.0 ? g[0] : mul(g[0], beta), bs);
                     Tensor g2 = alpha == 1.0 ? g[0] : mul(g[0], alpha);
                     return TensorList{gbias, ga ? mat1_grad(g2, s[1], acm) : Tensor(), gb ? mat2_grad(g2, s[0], bcm) : Tensor()};
                   });
  return out;
}

Tensor linear_impl(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_defined(x, "linear", "input");
  check_defined(weight, "linear", "weight");
  MINIDL_CHECK(weight.dim() == 2, "linear", "weight must be 2-D [out_features, in_features], got ", weight.meta_str());
  MINIDL_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), "linear", "input ", x.meta_str(),
               " does not match weight ", weight.meta_str(), " (expected last dim ", weight.size(1), ")");
  MINIDL_CHECK(x.dtype() == weight.dtype(), "linear", "input and weight must have the same dtype, got ", x.meta_str(),
               " and ", weight.meta_str());
  check_same_device("linear", x, weight);
  Shape out_shape(x.shape().begin(), x.shape().end() - 1);
  out_shape.push_back(weight.size(0));
  const bool row_bias = bias.defined() && bias.dim() == 1 && bias.size(0) == weight.size(0);
  if (bias.defined()) {
    // Any bias that broadcasts to the output without growing it, as PyTorch's (a 0-dim one among them).
    MINIDL_CHECK(row_bias || expandable_to(bias.shape(), out_shape), "linear", "bias ",
                 bias.meta_str(), " does not broadcast to the output's shape ", shape_str(out_shape), " (weight ",
                 weight.meta_str(), ")");
    MINIDL_CHECK(bias.dtype() == weight.dtype(), "linear", "bias and weight must have the same dtype, got ",
                 bias.meta_str(), " and ", weight.meta_str());
    check_same_device("linear", bias, weight);
  }
  Tensor x2 = x.dim() == 2 ? x : x.reshape({-1, x.size(-1)});
  Tensor out = row_bias ? addmm_impl(bias, x2, weight.t(), 1.0, 1.0) : mm_impl(x2, weight.t());
  if (x.dim() != 2) out = out.reshape(out_shape);
  return bias.defined() && !row_bias ? add(out, bias) : out;
}
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::linear_policies() { return {&kMm, &kBmm, &kMatmul, &kAddmm, &kLinear}; }

Tensor mm(const Tensor& a, const Tensor& b) {
  amp::AutocastInputs in(kMm, {a, b});
  return mm_impl(in[0], in[1]);
}
Tensor bmm(const Tensor& a, const Tensor& b) {
  amp::AutocastInputs in(kBmm, {a, b});
  return bmm_impl(in[0], in[1]);
}
Tensor matmul(const Tensor& a, const Tensor& b) {
  amp::AutocastInputs in(kMatmul, {a, b});
  return matmul_impl(in[0], in[1]);
}
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, double beta, double alpha) {
  amp::AutocastInputs in(kAddmm, {bias, a, b});
  return addmm_impl(in[0], in[1], in[2], beta, alpha);
}
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  amp::AutocastInputs in(kLinear, {x, weight, bias});
  return linear_impl(in[0], in[1], in[2]);
}

}  // namespace minidl
