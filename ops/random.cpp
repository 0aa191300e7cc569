// Random factories (rand, randn, randint) and dropout. Each call claims a range of Philox blocks
// from the generator (the default one unless given), and the device kernel fills the tensor from
// those counters: results depend only on the seed and the sequence of calls, never on threads.
// Autocast policy: None (dropout runs in its input's dtype).
#include "ops/common.h"

#include <string>
#include <utility>

#include "framework/warning.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;
using kernels::RandomDist;

namespace {
// Fills `out` (contiguous) and returns it. A device without a random kernel gets the same numbers
// generated on the CPU and copied over (the counter layout is device-independent).
Tensor random_fill(RandomDist dist, const Tensor& out, Generator* gen, double a, double b) {
  Generator& g = gen ? *gen : default_generator();
  const uint64_t offset = g.reserve(kernels::random_blocks(out.numel()));
  if (!out.device().is_cpu() && !K().random.has(out.device().type, out.dtype())) {
    Tensor host = empty(out.shape(), out.dtype());
    K().random.get(Device::cpu(), out.dtype())(dist, host, g.initial_seed(), offset, a, b);
    NoGradGuard ng;
    out.copy_(host);
    return out;
  }
  K().random.get(out.device(), out.dtype())(dist, out, g.initial_seed(), offset, a, b);
  return out;
}

Tensor floating_factory(const char* name, RandomDist dist, const Shape& shape, const TensorOptions& opts, Generator* gen) {
  MINIDL_CHECK(is_floating(opts.dtype_), name, "expected a floating dtype, got ", dtype_name(opts.dtype_),
               " (use randint for integers)");
  Tensor out = random_fill(dist, empty(shape, TensorOptions(opts.dtype_).device(opts.device_)), gen, 0.0, 1.0);
  if (opts.requires_grad_) out.requires_grad_();
  return out;
}

// PyTorch's check_from_to_in_range: low and high - 1 must lie in the dtype's range (an error, not
// wrapped or infinite values); a floating dtype beyond its exactly representable integers
// (2^(mantissa bits + 1)) only warns, as PyTorch does, since such draws are no longer uniform.
void check_randint_range(int64_t low, int64_t high, DType dtype) {
  const DTypeTraits& t = traits(dtype);
  double bottom, top;
  if (dtype == DType::Bool) bottom = 0.0, top = 1.0;
  else if (dtype == DType::U8) bottom = 0.0, top = t.max;
  else if (t.is_floating) bottom = -t.max, top = t.max;
  else bottom = -t.max - 1.0, top = t.max;
  for (auto [value, what] : {std::pair{low, "low"}, std::pair{high - 1, "high - 1"}})
    MINIDL_CHECK(static_cast<double>(value) >= bottom && static_cast<double>(value) <= top, "randint", what, " = ",
                 value, " is out of bounds for ", dtype_name(dtype));
  if (t.is_floating) {
    const double exact = std::ldexp(1.0, t.mantissa_bits + 1);
    if (static_cast<double>(low) < -exact || static_cast<double>(high - 1) > exact)
      warn("randint: [" + std::to_string(low) + ", " + std::to_string(high) + ") reaches beyond [-2^" +
           std::to_string(t.mantissa_bits + 1) + ", 2^" + std::to_string(t.mantissa_bits + 1) + "], where " +
           dtype_name(dtype) + " holds every integer; its draws there are not uniform");
  }
}
}  // namespace

Tensor rand(const Shape& shape, TensorOptions opts, Generator* gen) {
  return floating_factory("rand", RandomDist::Uniform, shape, opts, gen);
}

Tensor randn(const Shape& shape, TensorOptions opts, Generator* gen) {
  return floating_factory("randn", RandomDist::Normal, shape, opts, gen);
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions opts, Generator* gen) {
  MINIDL_CHECK(low < high, "randint", "expected low < high, got low=", low, ", high=", high);
  check_randint_range(low, high, opts.dtype_);
  Tensor out = empty(shape, TensorOptions(opts.dtype_).device(opts.device_));
  random_fill(RandomDist::Integer, out, gen, static_cast<double>(low), static_cast<double>(high));
  if (opts.requires_grad_) out.requires_grad_();
  return out;
}

// Inverted dropout, as torch.nn.functional.dropout: kept elements are scaled by 1/(1-p) so the
// expectation is unchanged; the backward multiplies by the same saved (scaled) mask.
namespace ops_detail {
Tensor random_keep_mask(const Shape& shape, const Tensor& x, double p, double keep_value, Generator* gen) {
  return random_fill(RandomDist::KeepMask, new_empty(shape, x.dtype(), x.device()), gen, p, keep_value);
}

Shape feature_mask_shape(const Tensor& x) {
  Shape ms(static_cast<size_t>(x.dim()), 1);
  ms[0] = x.size(0);
  ms[1] = x.size(1);
  return ms;
}
}  // namespace ops_detail

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  check_defined(x, "dropout", "input");
  MINIDL_CHECK(p >= 0.0 && p <= 1.0, "dropout", "probability has to be between 0 and 1, but got ", p);
  if (!training || p == 0.0) return x;
  check_floating("dropout", x);
  if (p == 1.0) return mul(x, 0.0);  // all dropped; still connected, with a zero gradient
  Tensor mask = random_keep_mask(x.shape(), x, p, 1.0 / (1.0 - p), gen);
  Tensor out = new_empty(x.shape(), x.dtype(), x.device());
  K().binary.get(x.device(), x.dtype())(kernels::BinaryOp::Mul, out, x.detach(), mask, 0.0, 1.0);
  autograd::record("DropoutBackward", {x}, {out}, {mask},
                   [](const TensorList& g, const TensorList& s) { return TensorList{mul(g[0], s[0])}; });
  return out;
}

}  // namespace minidl
