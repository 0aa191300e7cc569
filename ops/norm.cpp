// Normalization over features: layer_norm, group_norm and rms_norm (torch.nn.functional names and
// semantics). Each is a composite of differentiable ops (mean, sub, mul, rsqrt), so its backward,
// also to second order, is exact and needs no kernels of its own; the statistics run in f32 (f64
// for f64 inputs) and the result is returned in the input's dtype.
// Autocast policy (PyTorch's lists): layer_norm and group_norm are FP32 on CUDA, None on CPU;
// rms_norm is on no list and does not consult autocast.
#include "ops/common.h"
#include "ops/sequence_ops.h"

namespace minidl {

using namespace ops_detail;

// Autocast policies of this family (the policy table is built from these rows).
namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kLayerNorm{"layer_norm", P::None, P::FP32};
const amp::OpPolicy kGroupNorm{"group_norm", P::None, P::FP32};
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::norm_policies() { return {&kLayerNorm, &kGroupNorm}; }

namespace {

DType stats_dtype(const Tensor& x) { return x.dtype() == DType::F64 ? DType::F64 : DType::F32; }

// The last normalized_shape.size() dims of x, checked against normalized_shape.
std::vector<int64_t> trailing_dims(const char* op, const Tensor& x, const Shape& normalized_shape) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  MINIDL_CHECK(k >= 1, op, "normalized_shape must have at least one dimension");
  bool match = x.dim() >= k;
  for (int64_t i = 0; match && i < k; ++i) match = x.size(x.dim() - k + i) == normalized_shape[i];
  MINIDL_CHECK(match, op, "given normalized_shape=", shape_str(normalized_shape), ", expected input with shape [*, ",
               shape_str(normalized_shape), "], but got input of size ", shape_str(x.shape()));
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < k; ++i) dims.push_back(x.dim() - k + i);
  return dims;
}

void check_affine(const char* op, const char* name, const Tensor& t, const Tensor& x, const Shape& expected) {
  if (!t.defined()) return;
  check_same_device(op, x, t);
  check_floating(op, t);
  MINIDL_CHECK(t.shape() == expected, op, name, " should have shape ", shape_str(expected), ", got ", t.meta_str());
}

void check_input(const char* op, const Tensor& x, double eps) {
  check_defined(x, op, "input");
  check_floating(op, x);
  MINIDL_CHECK(eps >= 0, op, "eps must be non-negative, got ", eps);
}

// y * weight + bias in the statistics dtype (either may be undefined; shaped to broadcast against y).
Tensor affine(Tensor y, const Tensor& weight, const Tensor& bias, const Shape& shape) {
  const DType cd = y.dtype();
  if (weight.defined()) y = mul(y, cast(weight, cd).reshape(shape));
  if (bias.defined()) y = add(y, cast(bias, cd).reshape(shape));
  return y;
}

// (x - mean) / sqrt(var + eps) over dims, in x's dtype (biased variance).
Tensor standardize(const Tensor& x, const std::vector<int64_t>& dims, double eps) {
  Tensor centered = sub(x, mean(x, dims, true));
  Tensor var = mean(mul(centered, centered), dims, true);
  return mul(centered, rsqrt(add(var, eps)));
}

}  // namespace

Tensor layer_norm(const Tensor& x_arg, const Shape& normalized_shape, const Tensor& weight_arg, const Tensor& bias_arg,
                  double eps) {
  amp::AutocastInputs in(kLayerNorm, {x_arg, weight_arg, bias_arg});
  const Tensor &x = in[0], &weight = in[1], &bias = in[2];
  const char* op = "layer_norm";
  check_input(op, x, eps);
  const std::vector<int64_t> dims = trailing_dims(op, x, normalized_shape);
  check_affine(op, "weight", weight, x, normalized_shape);
  check_affine(op, "bias", bias, x, normalized_shape);
  Tensor y = standardize(cast(x, stats_dtype(x)), dims, eps);
  return cast(affine(y, weight, bias, normalized_shape), x.dtype());
}

Tensor group_norm(const Tensor& x_arg, int64_t num_groups, const Tensor& weight_arg, const Tensor& bias_arg, double eps) {
  amp::AutocastInputs in(kGroupNorm, {x_arg, weight_arg, bias_arg});
  const Tensor &x = in[0], &weight = in[1], &bias = in[2];
  const char* op = "group_norm";
  check_input(op, x, eps);
  MINIDL_CHECK(x.dim() >= 2, op, "expected input with at least 2 dims [N, C, *], got ", x.meta_str());
  const int64_t N = x.size(0), C = x.size(1);
  MINIDL_CHECK(num_groups > 0 && C % num_groups == 0, op, "expected number of channels in input to be divisible by ",
               "num_groups, but got input of shape ", shape_str(x.shape()), " and num_groups=", num_groups);
  check_affine(op, "weight", weight, x, {C});
  check_affine(op, "bias", bias, x, {C});
  // PyTorch's F.group_norm check (train and eval): the sizes [N * C / G, G, *spatial] without G
  // must not multiply to 1 (then every group holds one value).
  int64_t group_size = C / num_groups;  // values per (n, group)
  Shape verified{N * (C / num_groups), num_groups};
  for (int64_t d = 2; d < x.dim(); ++d) {
    verified.push_back(x.size(d));
    group_size *= x.size(d);
  }
  MINIDL_CHECK(N * group_size != 1, op, "expected more than 1 value per channel when training, got input size ",
               shape_str(verified));
  Tensor grouped = cast(x, stats_dtype(x)).reshape({N, num_groups, group_size});
  Tensor y = standardize(grouped, {2}, eps).reshape(x.shape());
  Shape channel(x.dim(), 1);
  channel[1] = C;
  return cast(affine(y, weight, bias, channel), x.dtype());
}

Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, std::optional<double> eps_arg) {
  const char* op = "rms_norm";
  check_defined(x, op, "input");
  const DType cd = stats_dtype(x);
  const double eps = eps_arg ? *eps_arg : traits(cd).eps;
  check_input(op, x, eps);
  const std::vector<int64_t> dims = trailing_dims(op, x, normalized_shape);
  check_affine(op, "weight", weight, x, normalized_shape);
  Tensor xc = cast(x, cd);
  Tensor y = cast(mul(xc, rsqrt(add(mean(mul(xc, xc), dims, true), eps))), x.dtype());
  // As PyTorch: the weight multiplies the result already in the input's dtype, with ordinary
  // promotion (a bf16 input with an f32 weight gives f32).
  return weight.defined() ? mul(y, weight) : y;
}

}  // namespace minidl
