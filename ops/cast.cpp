// Casts between dtypes. Differentiable between floating dtypes: the gradient is cast back to the
// source dtype, which is how fp32 parameters receive fp32 gradients from low-precision compute.
#include <cmath>

#include "framework/half.h"
#include "ops/common.h"

namespace minidl {

using namespace ops_detail;

namespace ops_detail {

DType result_type(const Tensor& a, const Tensor& b) {
  const bool a0 = a.dim() == 0, b0 = b.dim() == 0;
  if (a0 != b0) {
    const Tensor& dimmed = a0 ? b : a;
    const Tensor& zero = a0 ? a : b;
    if (type_category(zero.dtype()) <= type_category(dimmed.dtype())) return dimmed.dtype();
    return zero.dtype();
  }
  return promote_types(a.dtype(), b.dtype());
}

DType result_type(const Tensor& a, double scalar) {
  if (is_floating(a.dtype())) return a.dtype();
  // A scalar counts as an integer when it is one and fits in i64 (converting NaN, inf or 1e30 to
  // int64_t would be undefined behaviour); anything else is a float scalar and lifts to f32.
  const bool integral = std::isfinite(scalar) && std::trunc(scalar) == scalar && std::abs(scalar) < 9.2e18;
  if (!integral) return DType::F32;
  return a.dtype() == DType::Bool ? DType::I64 : a.dtype();
}
}  // namespace ops_detail

Tensor cast(const Tensor& x, DType dtype) {
  check_defined(x, "cast", "input");
  if (x.dtype() == dtype) return x;
  Tensor out = new_empty_like(x.shape(), dtype, x.device(), {&x});
  K().copy.get(x.device(), dtype)(out, x);
  if (is_floating(dtype) && x.is_floating_point()) {
    const DType src = x.dtype();
    autograd::record("CastBackward", {x}, {out}, {}, [src](const autograd::TensorList& g, const autograd::TensorList&) {
      return autograd::TensorList{cast(g[0], src)};
    });
  }
  return out;
}

// Host copies of a tensor's values, in the requested element type.
template <class T>
std::vector<T> Tensor::to_vector() const {
  Tensor c = cast(*this, dtype_of<T>::value).to(Device::cpu()).contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}

double Tensor::item() const {
  MINIDL_CHECK(numel() == 1, "item", "a Tensor with ", numel(), " elements cannot be converted to a scalar");
  return to_vector<double>()[0];
}

int64_t Tensor::item_int() const {
  MINIDL_CHECK(numel() == 1, "item", "a Tensor with ", numel(), " elements cannot be converted to a scalar");
  return to_vector<int64_t>()[0];
}

#define MINIDL_INSTANTIATE(T) template std::vector<T> Tensor::to_vector<T>() const;
MINIDL_FOR_EACH_ELEMENT_TYPE(MINIDL_INSTANTIATE)
#undef MINIDL_INSTANTIATE

}  // namespace minidl
