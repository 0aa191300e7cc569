// Parameter initialisation (torch.nn.init): PyTorch's formulas, in place, without recording a
// graph. Every random initialiser draws from `gen` (the default generator when null), so a seeded
// generator gives the same weights on every run.
#pragma once
#include <optional>
#include <utility>

#include "ops/tensor.h"

namespace minidl {
class Generator;  // framework/generator.h
}  // namespace minidl

namespace minidl::nn::init {

enum class FanMode { FanIn, FanOut };
enum class Nonlinearity { Linear, Conv1D, Conv2D, Conv3D, Sigmoid, Tanh, ReLU, LeakyReLU, SELU };

// PyTorch's recommended gain: 1 for linear/conv/sigmoid, 5/3 for tanh, sqrt(2) for relu,
// sqrt(2 / (1 + slope^2)) for leaky_relu (slope defaults to 0.01), 3/4 for selu.
double calculate_gain(Nonlinearity nonlinearity, std::optional<double> param = std::nullopt);
// {fan_in, fan_out} of a weight of shape [out, in, *kernel]: in * receptive, out * receptive.
// Requires at least 2 dimensions.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

const Tensor& uniform_(const Tensor& tensor, double a = 0.0, double b = 1.0, Generator* gen = nullptr);
const Tensor& normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
const Tensor& constant_(const Tensor& tensor, double value);
const Tensor& zeros_(const Tensor& tensor);
const Tensor& ones_(const Tensor& tensor);

// U(-b, b) with b = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a).
const Tensor& kaiming_uniform_(const Tensor& tensor, double a = 0.0, FanMode mode = FanMode::FanIn,
                               Nonlinearity nonlinearity = Nonlinearity::LeakyReLU, Generator* gen = nullptr);
// N(0, std^2) with std = gain / sqrt(fan).
const Tensor& kaiming_normal_(const Tensor& tensor, double a = 0.0, FanMode mode = FanMode::FanIn,
                              Nonlinearity nonlinearity = Nonlinearity::LeakyReLU, Generator* gen = nullptr);
// U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)).
const Tensor& xavier_uniform_(const Tensor& tensor, double gain = 1.0, Generator* gen = nullptr);
// N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
const Tensor& xavier_normal_(const Tensor& tensor, double gain = 1.0, Generator* gen = nullptr);

}  // namespace minidl::nn::init
