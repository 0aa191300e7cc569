// The dropouts beyond dropout and dropout2d (torch.nn.functional's): dropout1d (one draw per
// channel of [N, C, L]), and alpha_dropout / feature_alpha_dropout, which keep a SELU network's
// mean and variance: dropped values become SELU's negative saturation -alpha' (alpha' =
// 1.7580993408473766, SELU's scale times its alpha), and everything is then moved by an affine
// map a x + b chosen so that zero mean and unit variance stay so, as PyTorch's _dropout_impl:
//   a = 1 / sqrt((alpha'^2 p + 1)(1 - p)),  out = keep ? a x + alpha' a p : -alpha' a + alpha' a p.
// Compositions of a random mask with mul and add, so differentiable to any order (the gradient is
// the mask times a). Autocast: none. Masks come from the generator's Philox stream, as dropout's.
#include <cmath>

#include "ops/common.h"

namespace minidl {

using namespace ops_detail;

namespace {
constexpr double kAlphaPrime = 1.7580993408473766;

void check_probability(const char* op, double p) {
  MINIDL_CHECK(p >= 0.0 && p <= 1.0, op, "dropout probability has to be between 0 and 1, but got ", p);
}

// x * mask * a + b for a keep mask of 0s and 1s broadcast over x.
Tensor alpha_dropout_with(const char* op, const Tensor& x, double p, bool training, Generator* gen, bool per_feature) {
  check_defined(x, op, "input");
  check_probability(op, p);
  if (!training || p == 0.0 || x.numel() == 0) return x;
  check_floating(op, x);
  if (per_feature)
    MINIDL_CHECK(x.dim() >= 2, op, "Feature dropout requires at least 2 dimensions in the input, got ", x.meta_str());
  if (p == 1.0) return mul(x, 0.0);  // as PyTorch: all zero (not the saturation), still connected
  const Tensor keep = random_keep_mask(per_feature ? feature_mask_shape(x) : x.shape(), x, p, 1.0, gen);
  const double a = 1.0 / std::sqrt((kAlphaPrime * kAlphaPrime * p + 1.0) * (1.0 - p));
  // b = (keep - 1) alpha' a + alpha' a p, as PyTorch's noise.add(-1).mul_(alpha * a).add_(alpha * a * p).
  const Tensor b = add(mul(sub(keep, 1.0), kAlphaPrime * a), kAlphaPrime * a * p);
  return add(mul(x, mul(keep, a)), b);
}
}  // namespace

Tensor dropout1d(const Tensor& x, double p, bool training, Generator* gen) {
  const char* op = "dropout1d";
  check_defined(x, op, "input");
  check_probability(op, p);
  MINIDL_CHECK(x.dim() == 2 || x.dim() == 3, op, "Expected 2D or 3D input, but received a ", x.dim(),
               "D input. Note that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, "
               "a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).");
  if (!training || p == 0.0) return x;
  check_floating(op, x);
  const bool batched = x.dim() == 3;
  const Tensor xb = batched ? x : x.unsqueeze(0);
  const Tensor out = p == 1.0 ? mul(xb, 0.0) : mul(xb, random_keep_mask(feature_mask_shape(xb), xb, p, 1.0 / (1.0 - p), gen));
  return batched ? out : out.squeeze(0);
}

Tensor alpha_dropout(const Tensor& x, double p, bool training, Generator* gen) {
  return alpha_dropout_with("alpha_dropout", x, p, training, gen, false);
}

Tensor feature_alpha_dropout(const Tensor& x, double p, bool training, Generator* gen) {
  return alpha_dropout_with("feature_alpha_dropout", x, p, training, gen, true);
}

}  // namespace minidl
