// torch.nn.init formulas on top of rand/randn.
#include "nn/init.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "framework/grad_mode.h"
#include "framework/error.h"
#include "framework/warning.h"
#include "ops/ops.h"

namespace minidl::nn::init {

double calculate_gain(Nonlinearity nonlinearity, std::optional<double> param) {
  switch (nonlinearity) {
    case Nonlinearity::Linear:
    case Nonlinearity::Conv1D:
    case Nonlinearity::Conv2D:
    case Nonlinearity::Conv3D:
    case Nonlinearity::Sigmoid: return 1.0;
    case Nonlinearity::Tanh: return 5.0 / 3.0;
    case Nonlinearity::ReLU: return std::sqrt(2.0);
    case Nonlinearity::LeakyReLU: {
      const double slope = param.value_or(0.01);
      return std::sqrt(2.0 / (1.0 + slope * slope));
    }
    case Nonlinearity::SELU: return 3.0 / 4.0;
  }
  MINIDL_FAIL("calculate_gain", "unsupported nonlinearity");
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  MINIDL_CHECK(tensor.dim() >= 2, "calculate_fan_in_and_fan_out",
               "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions (got ",
               shape_str(tensor.shape()), ")");
  int64_t receptive = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive *= tensor.size(d);
  return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

namespace {
// The dtype random numbers are drawn in before conversion: f64 for f64 tensors, else f32.
DType draw_dtype(const Tensor& t) { return t.dtype() == DType::F64 ? DType::F64 : DType::F32; }

int64_t fan(const Tensor& t, FanMode mode) {
  auto [in, out] = calculate_fan_in_and_fan_out(t);
  return mode == FanMode::FanIn ? in : out;
}
}  // namespace

const Tensor& uniform_(const Tensor& tensor, double a, double b, Generator* gen) {
  MINIDL_CHECK(tensor.is_floating_point(), "uniform_", "expected a floating point tensor, got ", tensor.meta_str());
  MINIDL_CHECK(a <= b, "uniform_", "expects a <= b, got a=", a, ", b=", b);
  NoGradGuard ng;
  Tensor r = rand(tensor.shape(), TensorOptions(draw_dtype(tensor)).device(tensor.device()), gen);
  tensor.detach().copy_(add(mul(r, b - a), a));
  return tensor;
}

const Tensor& normal_(const Tensor& tensor, double mean, double std, Generator* gen) {
  MINIDL_CHECK(tensor.is_floating_point(), "normal_", "expected a floating point tensor, got ", tensor.meta_str());
  MINIDL_CHECK(std >= 0, "normal_", "expects std >= 0.0, got ", std);
  NoGradGuard ng;
  Tensor r = randn(tensor.shape(), TensorOptions(draw_dtype(tensor)).device(tensor.device()), gen);
  tensor.detach().copy_(add(mul(r, std), mean));
  return tensor;
}

const Tensor& constant_(const Tensor& tensor, double value) {
  NoGradGuard ng;
  tensor.detach().fill_(value);
  return tensor;
}
const Tensor& zeros_(const Tensor& tensor) { return constant_(tensor, 0.0); }
const Tensor& ones_(const Tensor& tensor) { return constant_(tensor, 1.0); }

const Tensor& kaiming_uniform_(const Tensor& tensor, double a, FanMode mode, Nonlinearity nonlinearity, Generator* gen) {
  if (tensor.numel() == 0) return tensor;  // PyTorch warns and does nothing
  const double gain = calculate_gain(nonlinearity, a);
  const double std = gain / std::sqrt(static_cast<double>(fan(tensor, mode)));
  const double bound = std::sqrt(3.0) * std;
  return uniform_(tensor, -bound, bound, gen);
}

const Tensor& kaiming_normal_(const Tensor& tensor, double a, FanMode mode, Nonlinearity nonlinearity, Generator* gen) {
  if (tensor.numel() == 0) return tensor;
  const double gain = calculate_gain(nonlinearity, a);
  const double std = gain / std::sqrt(static_cast<double>(fan(tensor, mode)));
  return normal_(tensor, 0.0, std, gen);
}

const Tensor& xavier_uniform_(const Tensor& tensor, double gain, Generator* gen) {
  auto [in, out] = calculate_fan_in_and_fan_out(tensor);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(in + out));
  const double a = std::sqrt(3.0) * std;
  return uniform_(tensor, -a, a, gen);
}

const Tensor& xavier_normal_(const Tensor& tensor, double gain, Generator* gen) {
  auto [in, out] = calculate_fan_in_and_fan_out(tensor);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(in + out));
  return normal_(tensor, 0.0, std, gen);
}

const Tensor& trunc_normal_(const Tensor& tensor, double mean, double std, double a, double b, Generator* gen) {
  MINIDL_CHECK(tensor.is_floating_point(), "trunc_normal_", "expected a floating point tensor, got ", tensor.meta_str());
  MINIDL_CHECK(std > 0 && a < b, "trunc_normal_", "expects std > 0 and a < b, got std=", std, ", a=", a, ", b=", b);
  if (mean < a - 2 * std || mean > b + 2 * std)
    warn("trunc_normal_: mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
         "be incorrect.");
  auto cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
  const double lo = cdf((a - mean) / std), hi = cdf((b - mean) / std);
  NoGradGuard ng;
  // Drawn and transformed in f64 (f32 for f32 tensors, as PyTorch's in-place ops on the tensor).
  const DType dtype = tensor.dtype() == DType::F64 ? DType::F64 : DType::F32;
  Tensor u = rand(tensor.shape(), TensorOptions(dtype).device(tensor.device()), gen);
  Tensor v = erfinv(add(mul(u, 2 * hi - 2 * lo), 2 * lo - 1));
  tensor.detach().copy_(clamp(add(mul(v, std * std::sqrt(2.0)), mean), a, b));
  return tensor;
}

const Tensor& eye_(const Tensor& tensor) {
  MINIDL_CHECK(tensor.dim() == 2, "eye_", "Only tensors with 2 dimensions are supported, got ", tensor.meta_str());
  NoGradGuard ng;
  tensor.detach().copy_(eye(tensor.size(0), tensor.size(1), TensorOptions(tensor.dtype()).device(tensor.device())));
  return tensor;
}

const Tensor& sparse_(const Tensor& tensor, double sparsity, double std, Generator* gen) {
  MINIDL_CHECK(tensor.dim() == 2, "sparse_", "Only tensors with 2 dimensions are supported, got ", tensor.meta_str());
  MINIDL_CHECK(sparsity >= 0 && sparsity <= 1, "sparse_", "sparsity must be in [0, 1], got ", sparsity);
  normal_(tensor, 0.0, std, gen);
  NoGradGuard ng;
  const int64_t rows = tensor.size(0), zeros_per_column = static_cast<int64_t>(std::ceil(sparsity * static_cast<double>(rows)));
  // Each column's rank of a uniform draw is a random permutation of its rows: the lowest ranks go.
  const Tensor draws = rand(tensor.shape(), TensorOptions(DType::F64).device(tensor.device()), gen);
  const Tensor ranks = argsort(argsort(draws, 0), 0);
  const Tensor kept = ge(ranks, static_cast<double>(zeros_per_column));
  tensor.detach().copy_(where(kept, tensor.detach(), zeros({}, TensorOptions(tensor.dtype()).device(tensor.device()))));
  return tensor;
}

const Tensor& dirac_(const Tensor& tensor, int64_t groups) {
  MINIDL_CHECK(tensor.dim() >= 3 && tensor.dim() <= 5, "dirac_", "Only tensors with 3, 4, or 5 dimensions are supported, "
               "got ", tensor.meta_str());
  MINIDL_CHECK(groups > 0 && tensor.size(0) % groups == 0, "dirac_", "dim 0 must be divisible by groups, got ",
               tensor.size(0), " and groups ", groups);
  NoGradGuard ng;
  const TensorOptions opts = TensorOptions(tensor.dtype()).device(tensor.device());
  const int64_t out = tensor.size(0), in = tensor.size(1), per_group = out / groups;
  // The [out, in] pattern (an identity per group), then placed at the kernel's centre of a flattened
  // kernel: the centre of each spatial dim is size / 2, so its flat index is the row-major sum.
  std::vector<Tensor> blocks(static_cast<size_t>(groups), eye(per_group, in, opts));
  const Tensor pattern = cat(blocks, 0).unsqueeze(-1);
  int64_t kernel = 1, centre = 0;
  for (int64_t d = 2; d < tensor.dim(); ++d) {
    kernel *= tensor.size(d);
    centre = centre * tensor.size(d) + tensor.size(d) / 2;
  }
  const Tensor flat = cat({zeros({out, in, centre}, opts), pattern, zeros({out, in, kernel - centre - 1}, opts)}, 2);
  tensor.detach().copy_(flat.reshape(tensor.shape()));
  return tensor;
}

const Tensor& orthogonal_(const Tensor& tensor, double gain, Generator* gen) {
  MINIDL_CHECK(tensor.dim() >= 2, "orthogonal_", "Only tensors with 2 or more dimensions are supported, got ",
               tensor.meta_str());
  if (tensor.numel() == 0) return tensor;
  const int64_t rows = tensor.size(0), cols = tensor.numel() / rows;
  NoGradGuard ng;
  // Orthonormal columns of a tall [n, k] normal matrix (the transpose when rows < cols).
  const int64_t n = std::max(rows, cols), k = std::min(rows, cols);
  const Tensor a = randn({n, k}, TensorOptions(DType::F64), gen);
  Tensor m = zeros({n, k}, DType::F64);
  for (int64_t j = 0; j < k; ++j) {
    Tensor v = a.select(1, j);
    // Classical Gram-Schmidt against the columns so far, twice ("twice is enough" for orthogonality
    // to rounding level): two matrix-vector products a pass instead of one dot product per column.
    if (j > 0) {
      const Tensor q = m.narrow(1, 0, j);
      for (int pass = 0; pass < 2; ++pass) v = sub(v, matmul(q, matmul(q.t(), v)));
    }
    m.select(1, j).copy_(div(v, norm(v)));
  }
  if (rows < cols) m = m.t();
  tensor.detach().copy_(mul(m, gain).reshape(tensor.shape()).to(tensor.device()));
  return tensor;
}

}  // namespace minidl::nn::init
