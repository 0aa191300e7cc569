// Element-wise ops of three tensors, as PyTorch's: lerp (start + weight * (end - start), in
// PyTorch's two-sided form that is exact at weight 1), addcmul and addcdiv (x + value * t1 * t2 or
// / t2, evaluated in PyTorch's order). Compositions of the binary ops, so they broadcast, run on
// every backend and differentiate to any order; lerp's gradients come out as PyTorch's formulas
// (1 - w, w, end - start). Autocast policy: none (on no list).
#include <cmath>

#include "ops/common.h"

namespace minidl {

using namespace ops_detail;

namespace {
void check_lerp_operands(const Tensor& start, const Tensor& end) {
  check_defined(start, "lerp", "self");
  check_defined(end, "lerp", "end");
  check_floating("lerp", start);
  MINIDL_CHECK(end.dtype() == start.dtype(), "lerp", "expected end of self's dtype ", dtype_name(start.dtype()), ", got ",
               end.meta_str());
}
}  // namespace

Tensor lerp(const Tensor& start, const Tensor& end, double weight) {
  check_lerp_operands(start, end);
  // PyTorch computes in the tensors' math type: f32 for f32, f16 and bf16, so the weight (and
  // 1 - weight) are f32 values there.
  const double w = start.dtype() == DType::F64 ? weight : static_cast<double>(static_cast<float>(weight));
  const Tensor diff = sub(end, start);
  return std::abs(w) < 0.5 ? add(start, mul(diff, w)) : sub(end, mul(diff, 1.0 - w));
}

Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  check_lerp_operands(start, end);
  check_defined(weight, "lerp", "weight");
  MINIDL_CHECK(weight.dtype() == start.dtype(), "lerp", "expected weight of self's dtype ", dtype_name(start.dtype()),
               ", got ", weight.meta_str());
  const Tensor diff = sub(end, start);
  return where(lt(abs(weight), 0.5), add(start, mul(weight, diff)), sub(end, mul(diff, rsub(weight, 1.0))));
}

Tensor addcmul(const Tensor& x, const Tensor& t1, const Tensor& t2, double value) {
  check_defined(x, "addcmul", "self");
  return add(x, mul(mul(t1, value), t2));
}

Tensor addcdiv(const Tensor& x, const Tensor& t1, const Tensor& t2, double value) {
  check_defined(x, "addcdiv", "self");
  check_defined(t1, "addcdiv", "tensor1");
  check_defined(t2, "addcdiv", "tensor2");
  MINIDL_CHECK(t1.is_floating_point() || t2.is_floating_point(), "addcdiv",
               "integer division with addcdiv is not supported (as PyTorch); use x + value * t1 / t2 on floating tensors");
  return add(x, div(mul(t1, value), t2));
}

}  // namespace minidl
