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

// N(mean, std^2) truncated to [a, b], by PyTorch's inverse-CDF method: U(2 Phi(a') - 1, 2 Phi(b') - 1),
// erfinv, times std sqrt(2), plus mean, clamped to [a, b] (a' and b' the standardized bounds).
const Tensor& trunc_normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0, double a = -2.0, double b = 2.0,
                            Generator* gen = nullptr);
// A 2-D tensor as the identity (ones on the main diagonal of a non-square matrix too).
const Tensor& eye_(const Tensor& tensor);
// A 3-, 4- or 5-D convolution weight [out, in, *kernel] that passes its input through: 1 at the
// kernel's centre from input channel d to output channel d of each of `groups` groups, else 0.
const Tensor& dirac_(const Tensor& tensor, int64_t groups = 1);
// A (semi-)orthogonal matrix of the tensor's [size(0), numel / size(0)] view, times gain: the Q of
// the QR decomposition of a standard normal matrix, with R's diagonal made positive (PyTorch's
// convention). Computed in f64 by Gram-Schmidt with reorthogonalisation (not LAPACK's Householder
// QR), so a seeded generator gives other values than PyTorch's, from the same distribution.
const Tensor& orthogonal_(const Tensor& tensor, double gain = 1.0, Generator* gen = nullptr);

// torch.nn.init.sparse_: a 2-D tensor drawn from N(0, std^2), then in every column ceil(sparsity *
// rows) entries at random rows set to zero (the rows of each column a random permutation's first).
const Tensor& sparse_(const Tensor& tensor, double sparsity, double std = 0.01, Generator* gen = nullptr);

}  // namespace minidl::nn::init
