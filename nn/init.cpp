// torch.nn.init formulas on top of rand/randn.
#include "nn/init.h"

#include <cmath>

#include "framework/grad_mode.h"
#include "framework/error.h"
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

}  // namespace minidl::nn::init
