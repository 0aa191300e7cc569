// torch.nn.functional.lp_pool1d / lp_pool2d: the p-norm of each window, as PyTorch computes it:
// avg_pool of x^p (no padding), sign(s) relu(|s|) times the window's size, to the power 1/p. For
// p = 1 that is the window's sum; large p approaches max pooling. A composite of pow, avg_pool,
// sign, relu and mul (differentiable to any order where the window's sum is positive; a zero sum
// gives PyTorch's inf/NaN gradient of pow at 0); autocast: none (as PyTorch's Python form).
#include <cmath>

#include "ops/common.h"

namespace minidl {

using namespace ops_detail;

namespace {
Tensor finish_lp_pool(const Tensor& averaged, double norm_type, double window) {
  return pow(mul(mul(sign(averaged), relu(abs(averaged))), window), 1.0 / norm_type);
}

void check_norm_type(const char* name, const Tensor& x, double norm_type) {
  check_defined(x, name, "input");
  check_floating(name, x);
  MINIDL_CHECK(norm_type != 0.0 && std::isfinite(norm_type), name, "norm_type must be finite and non-zero, got ", norm_type);
}
}  // namespace

Tensor lp_pool2d(const Tensor& x, double norm_type, Size2 kernel_size, Size2 stride, bool ceil_mode) {
  check_norm_type("lp_pool2d", x, norm_type);
  const Tensor averaged = avg_pool2d(pow(x, norm_type), kernel_size, stride, {0, 0}, ceil_mode);
  return finish_lp_pool(averaged, norm_type, static_cast<double>(kernel_size[0] * kernel_size[1]));
}

Tensor lp_pool1d(const Tensor& x, double norm_type, int64_t kernel_size, int64_t stride, bool ceil_mode) {
  check_norm_type("lp_pool1d", x, norm_type);
  const Tensor averaged = avg_pool1d(pow(x, norm_type), kernel_size, stride, 0, ceil_mode);
  return finish_lp_pool(averaged, norm_type, static_cast<double>(kernel_size));
}

}  // namespace minidl
