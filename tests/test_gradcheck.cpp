// The op table: ONE table of cases (op, input shapes, input range clear of kinks, finite-difference
// eps, tolerance, second-order flag), run by one harness (tests/gradcheck.h) on the (device, dtype)
// targets of tests/targets.h:
// - in f64 on every available device, against central differences (first and second order), with
//   the .grad contract of backward(): fresh CPU memory is poisoned, a NaN .grad reset to none is
//   overwritten, a sentinel .grad is accumulated onto in place, no two leaves share a buffer;
// - on every other target (f32, f16, bf16 on the CPU; every CUDA dtype), output and gradients
//   against the f64 CPU result within a tolerance from the dtype's eps.
// A compiled device that is not available here (CUDA without a GPU) is reported as skipped, and is
// a failure under MINIDL_EXPECT_GPU=1.
//
// Adding an op = one line in kCases below. Fields, in order (designated initializers):
//   .name, .shapes, .fn, .lo/.hi (input range), .eps, .tol, .second_order, .differentiable
// Adding a backend = naming its targets in tests/targets.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "gradcheck.h"

using namespace minidl;
using testing::GradCase;
using testing::Target;
using TL = std::vector<Tensor>;

namespace {

// Squares its input: composed after linear ops (views, joins, reductions), it makes their
// backward functions part of the first derivative, so the second-order check differentiates them.
Tensor sq(const Tensor& t) { return mul(t, t); }

// A fixed non-differentiable condition for where(): a bool tensor from the sign of an input.
Tensor positive(const Tensor& t) { return gt(t, 0.0); }

// clang-format off
const std::vector<GradCase> kCases = {
  // ---- element-wise binary, tensor forms with broadcasting
  {.name = "add", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return sq(add(x[0], x[1])); }},
  {.name = "add alpha", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return add(x[0], x[1], -2.5); }},
  {.name = "add {3,1}x{1,4}", .shapes = {{3, 1}, {1, 4}}, .fn = [](const TL& x) { return sq(add(x[0], x[1])); }},
  {.name = "add {2,3}x{3}", .shapes = {{2, 3}, {3}}, .fn = [](const TL& x) { return sq(add(x[0], x[1])); }},
  {.name = "add {2,3}x{}", .shapes = {{2, 3}, {}}, .fn = [](const TL& x) { return sq(add(x[0], x[1])); }},
  {.name = "add {4}x{2,3,1}", .shapes = {{4}, {2, 3, 1}}, .fn = [](const TL& x) { return sq(add(x[0], x[1])); }},
  {.name = "sub", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return sq(sub(x[0], x[1])); }},
  {.name = "sub alpha {3,1}x{1,4}", .shapes = {{3, 1}, {1, 4}}, .fn = [](const TL& x) { return sq(sub(x[0], x[1], 0.5)); }},
  {.name = "sub {2,3}x{3}", .shapes = {{2, 3}, {3}}, .fn = [](const TL& x) { return sq(sub(x[0], x[1])); }},
  {.name = "mul", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return mul(x[0], x[1]); }},
  {.name = "mul {3,1}x{1,4}", .shapes = {{3, 1}, {1, 4}}, .fn = [](const TL& x) { return mul(x[0], x[1]); }},
  {.name = "mul {2,3}x{3}", .shapes = {{2, 3}, {3}}, .fn = [](const TL& x) { return mul(x[0], x[1]); }},
  {.name = "mul self", .shapes = {{5}}, .fn = [](const TL& x) { return mul(x[0], x[0]); }},
  {.name = "mul one input constant", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return mul(x[0], x[1]); },
   .differentiable = {true, false}},
  {.name = "div", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return div(x[0], x[1]); }, .lo = 0.5, .hi = 2.0},
  {.name = "div {3,1}x{1,4}", .shapes = {{3, 1}, {1, 4}}, .fn = [](const TL& x) { return div(x[0], x[1]); }, .lo = 0.5, .hi = 2.0},
  {.name = "div {2,3}x{3}", .shapes = {{2, 3}, {3}}, .fn = [](const TL& x) { return div(x[0], x[1]); }, .lo = 0.5, .hi = 2.0},
  {.name = "div numerator constant", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return div(x[0], x[1]); },
   .lo = 0.5, .hi = 2.0, .differentiable = {false, true}},
  {.name = "pow", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return pow(x[0], x[1]); }, .lo = 0.5, .hi = 2.0},
  {.name = "pow {3,1}x{1,4}", .shapes = {{3, 1}, {1, 4}}, .fn = [](const TL& x) { return pow(x[0], x[1]); }, .lo = 0.5, .hi = 2.0},
  {.name = "pow {2,3}x{3}", .shapes = {{2, 3}, {3}}, .fn = [](const TL& x) { return pow(x[0], x[1]); }, .lo = 0.5, .hi = 2.0},
  {.name = "maximum", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return sq(maximum(x[0], x[1])); }},
  {.name = "maximum {3,1}x{1,4}", .shapes = {{3, 1}, {1, 4}}, .fn = [](const TL& x) { return sq(maximum(x[0], x[1])); }},
  {.name = "minimum", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return sq(minimum(x[0], x[1])); }},
  {.name = "minimum {2,3}x{3}", .shapes = {{2, 3}, {3}}, .fn = [](const TL& x) { return sq(minimum(x[0], x[1])); }},
  // ---- scalar forms and negation
  {.name = "add scalar", .shapes = {{2, 3}}, .fn = [](const TL& x) { return sq(add(x[0], 1.5)); }},
  {.name = "sub scalar", .shapes = {{2, 3}}, .fn = [](const TL& x) { return sq(sub(x[0], 1.5)); }},
  {.name = "rsub scalar", .shapes = {{2, 3}}, .fn = [](const TL& x) { return sq(rsub(x[0], 1.5)); }},
  {.name = "mul scalar", .shapes = {{2, 3}}, .fn = [](const TL& x) { return sq(mul(x[0], -3.0)); }},
  {.name = "div scalar", .shapes = {{2, 3}}, .fn = [](const TL& x) { return sq(div(x[0], 4.0)); }},
  {.name = "pow scalar 3", .shapes = {{2, 3}}, .fn = [](const TL& x) { return pow(x[0], 3.0); }},
  {.name = "pow scalar 2", .shapes = {{2, 3}}, .fn = [](const TL& x) { return pow(x[0], 2.0); }},
  {.name = "pow scalar 0.5", .shapes = {{2, 3}}, .fn = [](const TL& x) { return pow(x[0], 0.5); }, .lo = 0.5, .hi = 2.0},
  {.name = "pow scalar -1.5", .shapes = {{2, 3}}, .fn = [](const TL& x) { return pow(x[0], -1.5); }, .lo = 0.5, .hi = 2.0},
  {.name = "pow scalar 0", .shapes = {{2, 3}}, .fn = [](const TL& x) { return mul(pow(x[0], 0.0), x[0]); }},
  {.name = "neg", .shapes = {{2, 3}}, .fn = [](const TL& x) { return sq(neg(x[0])); }},
  {.name = "operators", .shapes = {{2, 3}, {3}}, .fn = [](const TL& x) { return (2.0 - x[0]) * x[1] / 3.0 + (x[0] - x[1]) * 0.5 - -x[1]; }},
  // ---- selection
  {.name = "where", .shapes = {{2, 3}, {2, 3}, {2, 3}}, .fn = [](const TL& x) { return sq(where(positive(x[2]), x[0], x[1])); },
   .differentiable = {true, true, false}},
  {.name = "where broadcast", .shapes = {{3, 1}, {1, 4}, {3, 4}}, .fn = [](const TL& x) { return sq(where(positive(x[2]), x[0], x[1])); },
   .differentiable = {true, true, false}},
  {.name = "where cond broadcast", .shapes = {{2, 3}, {2, 3}, {3}}, .fn = [](const TL& x) { return sq(where(positive(x[2]), x[0], x[1])); },
   .differentiable = {true, true, false}},
  {.name = "clamp both", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(clamp(x[0], -0.5, 0.7)); }},
  {.name = "clamp min", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(clamp(x[0], -0.5, std::nullopt)); }},
  {.name = "clamp max", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(clamp(x[0], std::nullopt, 0.7)); }},
  // ---- element-wise unary
  {.name = "exp", .shapes = {{2, 3}}, .fn = [](const TL& x) { return exp(x[0]); }},
  {.name = "log", .shapes = {{2, 3}}, .fn = [](const TL& x) { return log(x[0]); }, .lo = 0.2, .hi = 2.0},
  {.name = "sqrt", .shapes = {{2, 3}}, .fn = [](const TL& x) { return sqrt(x[0]); }, .lo = 0.2, .hi = 2.0},
  {.name = "rsqrt", .shapes = {{2, 3}}, .fn = [](const TL& x) { return rsqrt(x[0]); }, .lo = 0.3, .hi = 2.0},
  {.name = "abs", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(abs(x[0])); }},
  {.name = "abs times x", .shapes = {{3, 4}}, .fn = [](const TL& x) { return mul(abs(x[0]), x[0]); }},
  {.name = "tanh", .shapes = {{2, 3}}, .fn = [](const TL& x) { return tanh(x[0]); }},
  {.name = "sigmoid", .shapes = {{2, 3}}, .fn = [](const TL& x) { return sigmoid(x[0]); }, .lo = -4.0, .hi = 4.0},
  {.name = "relu", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(relu(x[0])); }},
  {.name = "leaky_relu", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(leaky_relu(x[0])); }},
  {.name = "leaky_relu 0.2", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(leaky_relu(x[0], 0.2)); }},
  {.name = "gelu", .shapes = {{3, 4}}, .fn = [](const TL& x) { return gelu(x[0]); }, .lo = -3.0, .hi = 3.0},
  {.name = "gelu tanh", .shapes = {{3, 4}}, .fn = [](const TL& x) { return gelu(x[0], true); }, .lo = -3.0, .hi = 3.0},
  {.name = "softplus", .shapes = {{3, 4}}, .fn = [](const TL& x) { return softplus(x[0]); }, .lo = -3.0, .hi = 3.0},
  {.name = "softplus beta 2", .shapes = {{3, 4}}, .fn = [](const TL& x) { return softplus(x[0], 2.0); }, .lo = -3.0, .hi = 3.0},
  {.name = "softplus past threshold", .shapes = {{3, 4}}, .fn = [](const TL& x) { return softplus(x[0], 2.0, 1.0); }, .lo = -3.0, .hi = 3.0},
  // ---- element-wise math (ops/math.cpp); each range inside the op's domain, clear of integers
  // for the rounding ops (whose gradient is 0)
  {.name = "sin", .shapes = {{2, 3}}, .fn = [](const TL& x) { return sin(x[0]); }, .lo = -3.0, .hi = 3.0},
  {.name = "cos", .shapes = {{2, 3}}, .fn = [](const TL& x) { return cos(x[0]); }, .lo = -3.0, .hi = 3.0},
  {.name = "tan", .shapes = {{2, 3}}, .fn = [](const TL& x) { return tan(x[0]); }, .lo = -1.2, .hi = 1.2},
  {.name = "asin", .shapes = {{2, 3}}, .fn = [](const TL& x) { return asin(x[0]); }, .lo = -0.8, .hi = 0.8},
  {.name = "acos", .shapes = {{2, 3}}, .fn = [](const TL& x) { return acos(x[0]); }, .lo = -0.8, .hi = 0.8},
  {.name = "atan", .shapes = {{2, 3}}, .fn = [](const TL& x) { return atan(x[0]); }, .lo = -3.0, .hi = 3.0},
  {.name = "sinh", .shapes = {{2, 3}}, .fn = [](const TL& x) { return sinh(x[0]); }},
  {.name = "cosh", .shapes = {{2, 3}}, .fn = [](const TL& x) { return cosh(x[0]); }},
  {.name = "asinh", .shapes = {{2, 3}}, .fn = [](const TL& x) { return asinh(x[0]); }, .lo = -3.0, .hi = 3.0},
  {.name = "acosh", .shapes = {{2, 3}}, .fn = [](const TL& x) { return acosh(x[0]); }, .lo = 1.2, .hi = 3.0},
  {.name = "atanh", .shapes = {{2, 3}}, .fn = [](const TL& x) { return atanh(x[0]); }, .lo = -0.8, .hi = 0.8},
  {.name = "log1p", .shapes = {{2, 3}}, .fn = [](const TL& x) { return log1p(x[0]); }, .lo = -0.5, .hi = 2.0},
  {.name = "expm1", .shapes = {{2, 3}}, .fn = [](const TL& x) { return expm1(x[0]); }},
  {.name = "log2", .shapes = {{2, 3}}, .fn = [](const TL& x) { return log2(x[0]); }, .lo = 0.2, .hi = 2.0},
  {.name = "log10", .shapes = {{2, 3}}, .fn = [](const TL& x) { return log10(x[0]); }, .lo = 0.2, .hi = 2.0},
  {.name = "exp2", .shapes = {{2, 3}}, .fn = [](const TL& x) { return exp2(x[0]); }},
  {.name = "erf", .shapes = {{2, 3}}, .fn = [](const TL& x) { return erf(x[0]); }},
  {.name = "erfc", .shapes = {{2, 3}}, .fn = [](const TL& x) { return erfc(x[0]); }},
  {.name = "erfinv", .shapes = {{2, 3}}, .fn = [](const TL& x) { return erfinv(x[0]); }, .lo = -0.8, .hi = 0.8},
  {.name = "reciprocal", .shapes = {{2, 3}}, .fn = [](const TL& x) { return reciprocal(x[0]); }, .lo = 0.5, .hi = 2.0},
  {.name = "square", .shapes = {{2, 3}}, .fn = [](const TL& x) { return square(x[0]); }},
  {.name = "floor", .shapes = {{2, 3}}, .fn = [](const TL& x) { return mul(floor(x[0]), x[0]); }, .lo = 1.1, .hi = 1.4},
  {.name = "ceil", .shapes = {{2, 3}}, .fn = [](const TL& x) { return mul(ceil(x[0]), x[0]); }, .lo = 1.1, .hi = 1.4},
  {.name = "round", .shapes = {{2, 3}}, .fn = [](const TL& x) { return mul(round(x[0]), x[0]); }, .lo = 1.1, .hi = 1.4},
  {.name = "trunc", .shapes = {{2, 3}}, .fn = [](const TL& x) { return mul(trunc(x[0]), x[0]); }, .lo = -1.4, .hi = -1.1},
  {.name = "frac", .shapes = {{2, 3}}, .fn = [](const TL& x) { return sq(frac(x[0])); }, .lo = 1.1, .hi = 1.4},
  {.name = "atan2", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return atan2(x[0], x[1]); }, .lo = 0.3, .hi = 2.0},
  {.name = "atan2 {3,1}x{1,2} negative", .shapes = {{3, 1}, {1, 2}}, .fn = [](const TL& x) { return atan2(x[0], neg(x[1])); },
   .lo = 0.3, .hi = 2.0},
  // ---- diagonals, roll, vector products (ops/diagonal.cpp, ops/rearrange.cpp)
  {.name = "roll", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(roll(x[0], {1, -3}, {0, 1})); }},
  {.name = "roll flat", .shapes = {{2, 3}}, .fn = [](const TL& x) { return mul(roll(x[0], {4}), x[0]); }},
  {.name = "diagonal offset 1", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(diagonal(x[0], 1)); }},
  {.name = "diagonal 3-D dims 2,0", .shapes = {{3, 2, 4}}, .fn = [](const TL& x) { return sq(diagonal(x[0], -1, 2, 0)); }},
  {.name = "diag of a vector", .shapes = {{3}}, .fn = [](const TL& x) { return sq(diag(x[0], -1)); }},
  {.name = "trace", .shapes = {{3, 3}}, .fn = [](const TL& x) { return sq(trace(x[0])); }},
  {.name = "outer", .shapes = {{3}, {2}}, .fn = [](const TL& x) { return sq(outer(x[0], x[1])); }},
  {.name = "dot", .shapes = {{4}, {4}}, .fn = [](const TL& x) { return sq(dot(x[0], x[1])); }},
  // ---- more activations (ops/activation_more.cpp), ranges clear of the kinks
  {.name = "hardswish", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(hardswish(x[0])); }, .lo = -2.9, .hi = 2.9},
  {.name = "hardswish outside", .shapes = {{2, 3}, {2, 3}},
   .fn = [](const TL& x) { return add(hardswish(add(x[0], 6.0)), hardswish(sub(x[1], 6.0))); }, .lo = -2.0, .hi = 2.0},
  {.name = "hardsigmoid", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(hardsigmoid(x[0])); }, .lo = -2.9, .hi = 2.9},
  {.name = "mish", .shapes = {{3, 4}}, .fn = [](const TL& x) { return mish(x[0]); }, .lo = -4.0, .hi = 4.0},
  {.name = "logsigmoid", .shapes = {{3, 4}}, .fn = [](const TL& x) { return logsigmoid(x[0]); }, .lo = -4.0, .hi = 4.0},
  {.name = "selu", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(selu(x[0])); }, .lo = -3.0, .hi = 3.0},
  {.name = "celu alpha 0.7", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(celu(x[0], 0.7)); }, .lo = -3.0, .hi = 3.0},
  {.name = "softsign", .shapes = {{3, 4}}, .fn = [](const TL& x) { return softsign(x[0]); }, .lo = -3.0, .hi = 3.0},
  {.name = "tanhshrink", .shapes = {{3, 4}}, .fn = [](const TL& x) { return tanhshrink(x[0]); }},
  {.name = "softshrink", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(softshrink(x[0], 0.3)); }},
  {.name = "hardshrink", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(hardshrink(x[0], 0.3)); }},
  {.name = "threshold", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(threshold(x[0], 0.2, -1.5)); }},
  {.name = "glu dim 1", .shapes = {{2, 6}}, .fn = [](const TL& x) { return glu(x[0], 1); }},
  {.name = "glu dim 0", .shapes = {{4, 3}}, .fn = [](const TL& x) { return sq(glu(x[0], 0)); }},
  {.name = "silu", .shapes = {{3, 4}}, .fn = [](const TL& x) { return silu(x[0]); }, .lo = -3.0, .hi = 3.0},
  {.name = "elu", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(elu(x[0])); }, .lo = -3.0, .hi = 3.0},
  {.name = "elu alpha 0.5", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(elu(x[0], 0.5)); }, .lo = -3.0, .hi = 3.0},
  {.name = "hardtanh", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(hardtanh(x[0])); }, .lo = -2.0, .hi = 2.0},
  {.name = "hardtanh -0.5 0.75", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(hardtanh(x[0], -0.5, 0.75)); }, .lo = -2.0, .hi = 2.0},
  {.name = "relu6", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(relu6(x[0])); }, .lo = -3.0, .hi = 8.0},
  {.name = "prelu per channel", .shapes = {{2, 3, 2, 2}, {3}}, .fn = [](const TL& x) { return sq(prelu(x[0], x[1])); }, .lo = -2.0, .hi = 2.0},
  {.name = "prelu one slope", .shapes = {{2, 3}, {1}}, .fn = [](const TL& x) { return sq(prelu(x[0], x[1])); }, .lo = -2.0, .hi = 2.0},
  {.name = "pad constant", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(pad(x[0], {1, -1, 2, 0}, PadMode::Constant, 0.5)); }},
  {.name = "pad reflect", .shapes = {{1, 2, 3, 4}}, .fn = [](const TL& x) { return sq(pad(x[0], {2, 1, 1, 2}, PadMode::Reflect)); }},
  {.name = "pad replicate", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(pad(x[0], {3, 1}, PadMode::Replicate)); }},
  {.name = "pad circular", .shapes = {{1, 2, 3, 4}}, .fn = [](const TL& x) { return sq(pad(x[0], {4, 1, -1, 2}, PadMode::Circular)); }},
  {.name = "interpolate nearest", .shapes = {{1, 2, 3, 4}}, .fn = [](const TL& x) { return sq(interpolate(x[0], InterpolateOptions().size({5, 7}))); }},
  {.name = "interpolate nearest-exact down", .shapes = {{1, 1, 5, 6}}, .fn = [](const TL& x) { return sq(interpolate(x[0], InterpolateOptions().scale_factor({0.6}).mode(InterpolateMode::NearestExact))); }},
  {.name = "interpolate bilinear", .shapes = {{1, 2, 3, 4}}, .fn = [](const TL& x) { return sq(interpolate(x[0], InterpolateOptions().scale_factor({1.7}).mode(InterpolateMode::Bilinear))); }},
  {.name = "interpolate bilinear align_corners", .shapes = {{2, 1, 3, 3}}, .fn = [](const TL& x) { return sq(interpolate(x[0], InterpolateOptions().size({4, 2}).mode(InterpolateMode::Bilinear).align_corners(true))); }},
  {.name = "interpolate linear", .shapes = {{1, 2, 5}}, .fn = [](const TL& x) { return sq(interpolate(x[0], InterpolateOptions().size({8}).mode(InterpolateMode::Linear))); }},
  {.name = "interpolate area", .shapes = {{1, 2, 4, 6}}, .fn = [](const TL& x) { return sq(interpolate(x[0], InterpolateOptions().size({2, 4}).mode(InterpolateMode::Area))); }},
  {.name = "masked_fill", .shapes = {{2, 3}, {3}}, .fn = [](const TL& x) { return sq(masked_fill(x[0], positive(x[1]), 0.25)); },
   .differentiable = {true, false}},
  {.name = "activation of activation", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sigmoid(tanh(gelu(x[0]))); }},
  // ---- reductions
  {.name = "sum all", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(sum(x[0])); }},
  {.name = "sum dim 1", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(sum(x[0], {1})); }},
  {.name = "sum dims 0,2 keepdim", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(sum(x[0], {0, 2}, true)); }},
  {.name = "sum dim -1 keepdim", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(sum(x[0], {-1}, true)); }},
  {.name = "sum 0-dim", .shapes = {{}}, .fn = [](const TL& x) { return sq(sum(x[0])); }},
  {.name = "Tensor::sum/mean", .shapes = {{2, 3}}, .fn = [](const TL& x) { return mul(x[0].sum(), x[0].mean()); }},
  {.name = "mean all", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(mean(x[0])); }},
  {.name = "mean dim 0", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(mean(x[0], {0})); }},
  {.name = "mean dims 1,2 keepdim", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(mean(x[0], {1, 2}, true)); }},
  {.name = "var all", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return var(x[0]); }},
  {.name = "var dim 1", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return var(x[0], {1}); }},
  {.name = "var dims 0,2 keepdim", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return var(x[0], {0, 2}, 1, true); }},
  {.name = "std all", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return minidl::std(x[0]); }},
  {.name = "std dim 1", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return minidl::std(x[0], {1}); }},
  {.name = "std dims 0,2 keepdim", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return minidl::std(x[0], {0, 2}, 1, true); }},
  {.name = "std correction 0", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return minidl::std(x[0], {-1}, 0); }},
  {.name = "var correction 0", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return var(x[0], {-1}, 0); }},
  {.name = "max all", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(max(x[0])); }},
  {.name = "min all", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(min(x[0])); }},
  {.name = "max dim 1", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(max(x[0], 1).values); }},
  {.name = "max dim 0 keepdim", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(max(x[0], 0, true).values); }},
  {.name = "max dim -1 3-D", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(max(x[0], -1).values); }},
  // ---- amax/amin, sorting, cumulative sums, scatter_add (random inputs have no ties)
  {.name = "amax all", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(amax(x[0])); }},
  {.name = "amax dims 0,2 keepdim", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(amax(x[0], {0, 2}, true)); }},
  {.name = "amin dim 1", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(amin(x[0], {1})); }},
  {.name = "sort last dim", .shapes = {{3, 5}}, .fn = [](const TL& x) { return sq(sort(x[0]).values); }},
  {.name = "sort dim 0 descending", .shapes = {{4, 3, 2}}, .fn = [](const TL& x) { return sq(sort(x[0], 0, true).values); }},
  {.name = "topk 2 of dim 1", .shapes = {{3, 5}}, .fn = [](const TL& x) { return sq(topk(x[0], 2, 1).values); }},
  {.name = "topk smallest 3 of dim 0", .shapes = {{4, 2, 3}}, .fn = [](const TL& x) { return sq(topk(x[0], 3, 0, false).values); }},
  {.name = "cumsum dim 1", .shapes = {{3, 5}}, .fn = [](const TL& x) { return sq(cumsum(x[0], 1)); }},
  {.name = "cumsum dim 0 3-D", .shapes = {{4, 2, 3}}, .fn = [](const TL& x) { return sq(cumsum(x[0], 0)); }},
  {.name = "cumprod dim 1", .shapes = {{3, 5}}, .fn = [](const TL& x) { return sq(cumprod(x[0], 1)); }},
  {.name = "cumprod dim 0 3-D", .shapes = {{4, 2, 3}}, .fn = [](const TL& x) { return cumprod(x[0], 0); }},
  {.name = "flip dims 0,2", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(flip(x[0], {0, 2})); }},
  {.name = "repeat with a new leading dim", .shapes = {{2, 3}}, .fn = [](const TL& x) { return sq(repeat(x[0], {2, 1, 3})); }},
  {.name = "tril batched, diagonal -1", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(tril(x[0], -1)); }},
  {.name = "triu diagonal 1", .shapes = {{3, 3}}, .fn = [](const TL& x) { return sq(triu(x[0], 1)); }},
  {.name = "lerp tensor weight, broadcast", .shapes = {{2, 3}, {3}, {2, 3}}, .fn = [](const TL& x) { return sq(lerp(x[0], x[1], x[2])); }},
  {.name = "lerp scalar weight 0.7", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return sq(lerp(x[0], x[1], 0.7)); }},
  {.name = "addcmul and addcdiv", .shapes = {{2, 3}, {2, 3}, {3}}, .fn = [](const TL& x) {
     return addcdiv(addcmul(x[0], x[1], x[2], 0.5), x[1], add(x[2], 3.0), -1.5); }},
  {.name = "cumsum 0-dim", .shapes = {{}}, .fn = [](const TL& x) { return sq(cumsum(x[0], 0)); }},
  {.name = "scatter_add dim 0 repeated indices", .shapes = {{3, 4}, {2, 4}}, .fn = [](const TL& x) {
     return sq(scatter_add(x[0], 0, from_vector<int64_t>({2, 0, 2, 1, 2, 2, 0, 1}, {2, 4}).to(x[0].device()), x[1])); }},
  {.name = "scatter_add dim 1, src larger than index", .shapes = {{2, 3}, {2, 4}}, .fn = [](const TL& x) {
     return sq(scatter_add(x[0], 1, from_vector<int64_t>({1, 1, 0, 2}, {2, 2}).to(x[0].device()), x[1])); }},
  // ---- vector norm (p = 2, 1, inf, -inf, 0, other; dims, keepdim). Inputs in [0.2, 2) with random
  // signs where |x|^(p-1) must stay finite; the extreme of the inf norms is unique in random data.
  {.name = "norm 2 all", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(norm(x[0])); }},
  {.name = "norm 2 dim 1", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return norm(x[0], 2.0, {1}); }},
  {.name = "norm 2 dims 0,2 keepdim", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return norm(x[0], 2.0, {0, 2}, true); }},
  {.name = "norm 2 0-dim", .shapes = {{}}, .fn = [](const TL& x) { return norm(x[0]); }, .lo = 0.2},
  {.name = "norm 1 dim -1", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(norm(x[0], 1.0, {-1})); }},
  {.name = "norm inf dim 0", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(norm(x[0], INFINITY, {0})); }},
  {.name = "norm inf all", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(norm(x[0], INFINITY)); }},
  {.name = "norm -inf dim 1 keepdim", .shapes = {{3, 4}}, .fn = [](const TL& x) { return norm(x[0], -INFINITY, {1}, true); }},
  {.name = "norm 3 dim 1", .shapes = {{3, 4}}, .fn = [](const TL& x) { return norm(x[0], 3.0, {1}); }},
  {.name = "norm 1.5 all", .shapes = {{3, 4}}, .fn = [](const TL& x) { return norm(x[0], 1.5); }, .lo = 0.2},
  {.name = "norm 0.5 dim 0", .shapes = {{3, 4}}, .fn = [](const TL& x) { return norm(x[0], 0.5, {0}); }, .lo = 0.2},
  {.name = "norm of a product", .shapes = {{3, 4}, {4, 2}}, .fn = [](const TL& x) { return norm(mm(x[0], x[1]), 2.0, {0}); }},
  {.name = "min dim 0", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(min(x[0], 0).values); }},
  {.name = "min dim 1 keepdim", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(min(x[0], 1, true).values); }},
  {.name = "sum_to {3,4}->{1,4}", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(sum_to(x[0], {1, 4})); }},
  {.name = "sum_to {2,3,4}->{3,1}", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(sum_to(x[0], {3, 1})); }},
  {.name = "sum_to {2,3}->{}", .shapes = {{2, 3}}, .fn = [](const TL& x) { return sq(sum_to(x[0], {})); }},
  // ---- linear algebra
  {.name = "mm", .shapes = {{3, 4}, {4, 5}}, .fn = [](const TL& x) { return mm(x[0], x[1]); }},
  {.name = "mm transposed operands", .shapes = {{4, 3}, {5, 4}}, .fn = [](const TL& x) { return mm(x[0].t(), x[1].t()); }},
  {.name = "mm self", .shapes = {{3, 3}}, .fn = [](const TL& x) { return mm(x[0], x[0]); }},
  {.name = "bmm", .shapes = {{2, 3, 4}, {2, 4, 5}}, .fn = [](const TL& x) { return bmm(x[0], x[1]); }},
  {.name = "bmm transposed", .shapes = {{2, 4, 3}, {2, 4, 5}}, .fn = [](const TL& x) { return bmm(x[0].transpose(1, 2), x[1]); }},
  {.name = "matmul 1-D x 1-D", .shapes = {{4}, {4}}, .fn = [](const TL& x) { return matmul(x[0], x[1]); }},
  {.name = "matmul 2-D x 1-D", .shapes = {{3, 4}, {4}}, .fn = [](const TL& x) { return matmul(x[0], x[1]); }},
  {.name = "matmul 1-D x 2-D", .shapes = {{4}, {4, 5}}, .fn = [](const TL& x) { return matmul(x[0], x[1]); }},
  {.name = "matmul 2-D x 2-D", .shapes = {{3, 4}, {4, 5}}, .fn = [](const TL& x) { return matmul(x[0], x[1]); }},
  {.name = "matmul 3-D x 2-D", .shapes = {{2, 3, 4}, {4, 5}}, .fn = [](const TL& x) { return matmul(x[0], x[1]); }},
  {.name = "matmul 3-D x 1-D", .shapes = {{2, 3, 4}, {4}}, .fn = [](const TL& x) { return matmul(x[0], x[1]); }},
  {.name = "matmul 1-D x 3-D", .shapes = {{4}, {2, 4, 5}}, .fn = [](const TL& x) { return matmul(x[0], x[1]); }},
  {.name = "matmul 2-D x 3-D", .shapes = {{3, 4}, {2, 4, 5}}, .fn = [](const TL& x) { return matmul(x[0], x[1]); }},
  {.name = "matmul batched broadcast", .shapes = {{2, 1, 3, 4}, {3, 4, 2}}, .fn = [](const TL& x) { return matmul(x[0], x[1]); }},
  {.name = "linear", .shapes = {{3, 4}, {5, 4}, {5}}, .fn = [](const TL& x) { return linear(x[0], x[1], x[2]); }},
  {.name = "linear no bias", .shapes = {{3, 4}, {5, 4}}, .fn = [](const TL& x) { return linear(x[0], x[1]); }},
  {.name = "linear 3-D input", .shapes = {{2, 3, 4}, {5, 4}, {5}}, .fn = [](const TL& x) { return linear(x[0], x[1], x[2]); }},
  {.name = "linear 1-D input", .shapes = {{4}, {5, 4}, {5}}, .fn = [](const TL& x) { return linear(x[0], x[1], x[2]); }},
  {.name = "linear squared", .shapes = {{3, 4}, {5, 4}, {5}}, .fn = [](const TL& x) { return sq(linear(x[0], x[1], x[2])); }},
  {.name = "addmm", .shapes = {{3, 5}, {3, 4}, {4, 5}}, .fn = [](const TL& x) { return addmm(x[0], x[1], x[2]); }},
  {.name = "addmm beta alpha", .shapes = {{3, 5}, {3, 4}, {4, 5}}, .fn = [](const TL& x) { return addmm(x[0], x[1], x[2], 0.5, -2.0); }},
  {.name = "addmm row bias", .shapes = {{5}, {3, 4}, {4, 5}}, .fn = [](const TL& x) { return sq(addmm(x[0], x[1], x[2], 2.0, 0.5)); }},
  {.name = "addmm column bias", .shapes = {{3, 1}, {3, 4}, {4, 5}}, .fn = [](const TL& x) { return addmm(x[0], x[1], x[2], 1.5); }},
  {.name = "addmm transposed operands", .shapes = {{3, 5}, {4, 3}, {5, 4}}, .fn = [](const TL& x) { return sq(addmm(x[0], x[1].t(), x[2].t(), 0.5, -2.0)); }},
  {.name = "addmm beta 0", .shapes = {{3, 5}, {3, 4}, {4, 5}}, .fn = [](const TL& x) { return addmm(x[0], x[1], x[2], 0.0, 1.0); }},
  // ---- joining and splitting
  {.name = "cat dim 0", .shapes = {{2, 3}, {1, 3}, {4, 3}}, .fn = [](const TL& x) { return sq(cat({x[0], x[1], x[2]}, 0)); }},
  {.name = "cat dim -1", .shapes = {{2, 3}, {2, 1}}, .fn = [](const TL& x) { return sq(cat({x[1], x[0], x[1]}, -1)); }},
  {.name = "stack dim 0", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return sq(stack({x[0], x[1]}, 0)); }},
  {.name = "stack dim 2", .shapes = {{2, 3}, {2, 3}}, .fn = [](const TL& x) { return sq(stack({x[0], x[1], x[0]}, 2)); }},
  {.name = "split uneven", .shapes = {{2, 7}}, .fn = [](const TL& x) { auto p = split(x[0], 3, 1); return sq(cat({p[2], mul(p[0], 2.0), p[1]}, 1)); }},
  {.name = "chunk", .shapes = {{6, 2}}, .fn = [](const TL& x) { auto p = chunk(x[0], 3, 0); return sq(mul(p[0], add(p[1], p[2]))); }},
  // ---- casts (f64 -> f32 -> f64 rounds: loose eps and tolerance; the gradient is constant)
  {.name = "cast f64-f32-f64", .shapes = {{2, 3}}, .fn = [](const TL& x) { return cast(cast(x[0], DType::F32), DType::F64); },
   .eps = 1e-3, .tol = 1e-3, .second_order = false},
  {.name = "to(dtype) f64-f32-f64", .shapes = {{2, 3}}, .fn = [](const TL& x) { return x[0].to(DType::F32).to(DType::F64); },
   .eps = 1e-3, .tol = 1e-3, .second_order = false},
  {.name = "cast to same dtype", .shapes = {{2, 3}}, .fn = [](const TL& x) { return sq(cast(x[0], DType::F64)); }},
  // ---- views
  {.name = "reshape", .shapes = {{2, 6}}, .fn = [](const TL& x) { return sq(x[0].reshape({3, -1})); }},
  {.name = "reshape non-contiguous", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(x[0].t().reshape({2, 6})); }},
  {.name = "view", .shapes = {{2, 6}}, .fn = [](const TL& x) { return sq(x[0].view({4, 3})); }},
  {.name = "flatten", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(x[0].flatten()); }},
  {.name = "flatten 1..2", .shapes = {{2, 3, 4, 1}}, .fn = [](const TL& x) { return sq(x[0].flatten(1, 2)); }},
  {.name = "transpose", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(x[0].transpose(0, 2)); }},
  {.name = "permute", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return sq(x[0].permute({1, 2, 0})); }},
  {.name = "t", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(x[0].t()); }},
  {.name = "slice", .shapes = {{5, 4}}, .fn = [](const TL& x) { return sq(x[0].slice(0, 1, 4)); }},
  {.name = "slice step", .shapes = {{7, 4}}, .fn = [](const TL& x) { return sq(x[0].slice(0, 1, 7, 2)); }},
  {.name = "slice step negative start", .shapes = {{3, 8}}, .fn = [](const TL& x) { return sq(x[0].slice(1, -7, 8, 3)); }},
  {.name = "slice of slice", .shapes = {{9, 2}}, .fn = [](const TL& x) { return sq(x[0].slice(0, 1, 9, 2).slice(0, 1, 4, 2)); }},
  {.name = "narrow", .shapes = {{3, 6}}, .fn = [](const TL& x) { return sq(x[0].narrow(1, 2, 3)); }},
  {.name = "select", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(x[0].select(1, 2)); }},
  {.name = "select negative", .shapes = {{3, 4, 2}}, .fn = [](const TL& x) { return sq(x[0].select(0, -1)); }},
  {.name = "unsqueeze", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(add(x[0].unsqueeze(1), x[0].unsqueeze(0).slice(2, 0, 1))); }},
  {.name = "squeeze dim", .shapes = {{3, 1, 4}}, .fn = [](const TL& x) { return sq(x[0].squeeze(1)); }},
  {.name = "squeeze all", .shapes = {{1, 3, 1, 4}}, .fn = [](const TL& x) { return sq(x[0].squeeze()); }},
  {.name = "expand", .shapes = {{3, 1}}, .fn = [](const TL& x) { return sq(x[0].expand({2, 3, 4})); }},
  {.name = "expand -1", .shapes = {{1, 4}}, .fn = [](const TL& x) { return sq(x[0].expand({3, -1})); }},
  {.name = "contiguous", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(x[0].t().contiguous()); }},
  {.name = "clone", .shapes = {{3, 4}}, .fn = [](const TL& x) { return sq(x[0].clone()); }},
  {.name = "views then matmul", .shapes = {{4, 6}}, .fn = [](const TL& x) { return mm(x[0].slice(1, 0, 6, 2), x[0].narrow(0, 1, 3)); }},
  // ---- sequence-model layers (ops/sequence_ops.h)
  {.name = "layer_norm affine", .shapes = {{2, 3, 4}, {4}, {4}}, .fn = [](const TL& x) { return layer_norm(x[0], {4}, x[1], x[2]); }},
  {.name = "layer_norm over 2 dims, no affine", .shapes = {{2, 3, 4}}, .fn = [](const TL& x) { return layer_norm(x[0], {3, 4}); }},
  {.name = "group_norm affine", .shapes = {{2, 4, 3}, {4}, {4}}, .fn = [](const TL& x) { return group_norm(x[0], 2, x[1], x[2]); }},
  {.name = "group_norm 4-D, one group", .shapes = {{2, 3, 2, 2}}, .fn = [](const TL& x) { return group_norm(x[0], 1); }},
  {.name = "rms_norm weight", .shapes = {{3, 4}, {4}}, .fn = [](const TL& x) { return rms_norm(x[0], {4}, x[1], 1e-6); }},
  {.name = "embedding repeated rows", .shapes = {{5, 3}}, .fn = [](const TL& x) {
     return sq(embedding(from_vector<int64_t>({1, 4, 1, 0, 4, 4}, {2, 3}).to(x[0].device()), x[0])); }},
  {.name = "conv1d stride pad", .shapes = {{2, 2, 6}, {3, 2, 3}, {3}}, .fn = [](const TL& x) { return sq(conv1d(x[0], x[1], x[2], 2, 1)); }},
  {.name = "conv1d groups dilation", .shapes = {{1, 4, 7}, {4, 2, 2}}, .fn = [](const TL& x) { return sq(conv1d(x[0], x[1], Tensor(), 1, 0, 2, 2)); }},
  {.name = "sdpa", .shapes = {{2, 3, 4}, {2, 5, 4}, {2, 5, 2}}, .fn = [](const TL& x) { return scaled_dot_product_attention(x[0], x[1], x[2]); }},
  {.name = "sdpa causal, scale", .shapes = {{1, 2, 4, 3}, {1, 2, 4, 3}, {1, 2, 4, 3}}, .fn = [](const TL& x) {
     return scaled_dot_product_attention(x[0], x[1], x[2], AttentionOptions().causal(true).with_scale(0.7)); }},
  {.name = "sdpa float mask", .shapes = {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}, {3, 3}}, .fn = [](const TL& x) {
     return scaled_dot_product_attention(x[0], x[1], x[2], AttentionOptions().mask(x[3])); }},
  {.name = "sdpa bool mask", .shapes = {{3, 4}, {2, 4}, {2, 3}}, .fn = [](const TL& x) {
     Tensor keep = from_vector<bool>({true, false, true, true, false, true}, {3, 2}).to(x[0].device());
     return scaled_dot_product_attention(x[0], x[1], x[2], AttentionOptions().mask(keep)); }},
};
// clang-format on

// A CPU allocator that fills every new block with 0xFF bytes (NaN in every floating dtype): a
// kernel that leaves part of its output unwritten, or an op that reads an uninitialized gradient
// buffer, turns into NaNs that the checks below cannot miss.
struct PoisonAllocator final : Allocator {
  Allocator* base;
  explicit PoisonAllocator(Allocator* b) : base(b) {}
  void* allocate(size_t nbytes) override {
    void* p = base->allocate(nbytes);
    if (p) std::memset(p, 0xFF, nbytes);
    return p;
  }
  void deallocate(void* p, size_t nbytes) override { base->deallocate(p, nbytes); }
};

// Installs the poisoning allocator for a scope (it delegates to the CPU allocator, so blocks may
// be freed by either).
struct PoisonScope {
  Allocator* prev;
  PoisonAllocator poison;
  PoisonScope() : prev(allocator_for(Device::cpu())), poison(prev) { set_allocator(DeviceType::CPU, &poison); }
  ~PoisonScope() { set_allocator(DeviceType::CPU, prev); }
};

bool all_finite(const Tensor& t) {
  for (double v : t.to_vector<double>())
    if (!std::isfinite(v)) return false;
  return true;
}

// The .grad contract of backward() for one case in f64 on `device`. Returns "" or a description of
// the failure.
std::string check_grad_buffers(const GradCase& c, Device device) {
  std::vector<Tensor> in = testing::make_inputs(c, 4321, {device.type, DType::F64});
  std::vector<Tensor> leaves;
  for (size_t i = 0; i < in.size(); ++i)
    if (c.differentiable.empty() || c.differentiable[i]) leaves.push_back(in[i]);
  const double nan = std::numeric_limits<double>::quiet_NaN();

  // Reference gradients from autograd::grad, which must leave .grad alone (poisoned with NaN here).
  for (Tensor& x : leaves) x.set_grad(full_like(x, nan));
  std::vector<Tensor> ref = autograd::grad({testing::project(c.fn(in))}, leaves, {}, false, false, true);
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (all_finite(leaves[i].grad())) return "autograd::grad wrote into .grad of input " + std::to_string(i);
    if (!ref[i].defined()) ref[i] = zeros_like(leaves[i]);
    if (!all_finite(ref[i])) return "non-finite gradient for input " + std::to_string(i);
  }

  // set_to_none semantics: a NaN .grad reset to none is replaced, not added to.
  for (Tensor& x : leaves) x.set_grad(Tensor());
  testing::project(c.fn(in)).backward();
  for (size_t i = 0; i < leaves.size(); ++i) {
    Tensor g = leaves[i].grad();
    if (!g.defined()) g = zeros_like(leaves[i]);  // unused input: PyTorch leaves .grad as None
    if (g.dtype() != leaves[i].dtype() || g.shape() != leaves[i].shape())
      return "backward: .grad of input " + std::to_string(i) + " is " + g.meta_str();
    if (testing::max_abs_diff(g, ref[i]) > 1e-12)
      return "backward: .grad of input " + std::to_string(i) + " differs from autograd::grad";
  }
  // No two leaves may share a gradient buffer (an in-place update of one would change the other).
  for (size_t i = 0; i < leaves.size(); ++i)
    for (size_t j = i + 1; j < leaves.size(); ++j)
      if (leaves[i].grad().defined() && leaves[j].grad().defined() &&
          leaves[i].grad().impl()->storage == leaves[j].grad().impl()->storage)
        return "inputs " + std::to_string(i) + " and " + std::to_string(j) + " share one .grad buffer";

  // Accumulation: a sentinel .grad is accumulated onto, in place (the same tensor object).
  std::vector<Tensor> held;
  for (Tensor& x : leaves) {
    x.set_grad(full_like(x, 1000.0));
    held.push_back(x.grad());
  }
  testing::project(c.fn(in)).backward();
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!leaves[i].grad().is_same(held[i])) return "backward replaced the existing .grad of input " + std::to_string(i);
    if (testing::max_abs_diff(leaves[i].grad(), add(ref[i], 1000.0)) > 1e-9)
      return "backward did not accumulate onto the existing .grad of input " + std::to_string(i);
  }

  // zero_() semantics: a zeroed .grad then holds exactly one gradient.
  for (Tensor& x : leaves) x.grad().zero_();
  testing::project(c.fn(in)).backward();
  for (size_t i = 0; i < leaves.size(); ++i)
    if (testing::max_abs_diff(leaves[i].grad(), ref[i]) > 1e-12)
      return "backward after zero_() differs for input " + std::to_string(i);
  return "";
}

}  // namespace

TEST_CASE("gradient check table: every differentiable op, first and second order, in f64 on every device", "[gradcheck]") {
  PoisonScope poison;
  for (const Target& t : testing::gradcheck_targets())
    for (const GradCase& c : kCases) {
      INFO("case: " << c.name << " on " << t.name());
      CHECK(testing::run_on(t, c.name, [&] { return testing::run_case(c, t.dev()); }) == "");
    }
}

TEST_CASE("gradient check table: backward() overwrites a reset .grad and accumulates onto a kept one", "[gradcheck]") {
  PoisonScope poison;
  for (const Target& t : testing::gradcheck_targets())
    for (const GradCase& c : kCases) {
      INFO("case: " << c.name << " on " << t.name());
      CHECK(testing::run_on(t, c.name, [&] { return check_grad_buffers(c, t.dev()); }) == "");
    }
}

// Every other target's kernels (and their fused backward kernels) against the f64 CPU ones: the
// same case on the same values (rounded to the target dtype) must give outputs and gradients
// within the dtype-derived tolerance.
TEST_CASE("gradient check table: every (device, dtype) target agrees with the f64 CPU result", "[gradcheck]") {
  PoisonScope poison;
  for (const Target& t : testing::reference_targets())
    for (const GradCase& c : kCases) {
      INFO("case: " << c.name << " on " << t.name());
      CHECK(testing::run_on(t, c.name, [&] { return testing::check_against_reference(c, t); }) == "");
    }
}

TEST_CASE("case names are unique", "[gradcheck]") {
  std::set<std::string> names;
  for (const GradCase& c : kCases) {
    INFO(c.name);
    CHECK(names.insert(c.name).second);
  }
}

// The harness itself must be able to fail: a wrong backward is reported with the case, the input
// and the element.
TEST_CASE("the harness reports a wrong gradient", "[gradcheck]") {
  GradCase bad{.name = "bad", .shapes = {{3}}, .fn = [](const TL& x) {
                 // Forward x^2, but a backward that returns x (the derivative is 2x).
                 Tensor out = mul(x[0].detach(), x[0].detach());
                 autograd::record("BadBackward", {x[0]}, {out}, {x[0]},
                                  [](const TL& g, const TL& s) { return TL{mul(g[0], s[0])}; });
                 return out;
               }};
  std::string err = testing::run_case(bad);
  CHECK_THAT(err, Catch::Contains("bad") && Catch::Contains("first order") && Catch::Contains("input 0"));

  GradCase bad2{.name = "bad second", .shapes = {{3}}, .fn = [](const TL& x) {
                  // Forward x^3 with a first derivative right in value but not differentiable:
                  // 3 x^2 computed from detached tensors, so d2 comes out 0 instead of 6x.
                  Tensor out = mul(mul(x[0].detach(), x[0].detach()), x[0].detach());
                  autograd::record("Bad2Backward", {x[0]}, {out}, {x[0]}, [](const TL& g, const TL& s) {
                    return TL{mul(g[0], mul(mul(s[0].detach(), s[0].detach()), 3.0))};
                  });
                  return out;
                }};
  // With create_graph the gradient then depends on the inputs only through g (constant), so the
  // harness sees no second-order graph; check it through a composite that does have one.
  GradCase bad3{.name = "bad second composite", .shapes = {{3}}, .fn = [&](const TL& x) { return mul(bad2.fn(x), x[0]); }};
  CHECK(testing::check_gradients(bad2.fn, testing::make_inputs(bad2), 1e-6, 1e-5) == "");
  CHECK_THAT(testing::run_case(bad3), Catch::Contains("second order"));
}

TEST_CASE("poisoned gradient buffers: a .grad set to NaN and reset to none is overwritten", "[gradcheck]") {
  Tensor w = from_vector<double>({1, 2, 3}).requires_grad_();
  w.set_grad(full_like(w, std::nan("")));
  w.set_grad(Tensor());  // zero_grad(set_to_none=true)
  mul(w, w).sum().backward();
  CHECK(w.grad().to_vector<double>() == std::vector<double>{2, 4, 6});

  // zero_grad(set_to_none=false): the same buffer is zeroed and then accumulated into.
  Tensor keep = w.grad();
  w.grad().fill_(std::nan(""));
  w.grad().zero_();
  mul(w, 3.0).sum().backward();
  CHECK(w.grad().is_same(keep));
  CHECK(w.grad().to_vector<double>() == std::vector<double>{3, 3, 3});

  // Without zeroing, backward accumulates: NaN in, NaN out (nothing silently overwrites it).
  w.grad().fill_(std::nan(""));
  mul(w, 3.0).sum().backward();
  for (double v : w.grad().to_vector<double>()) CHECK(std::isnan(v));
}

TEST_CASE("gradients of two leaves never alias, even when the op passes one gradient to both", "[gradcheck]") {
  Tensor a = from_vector<float>({1, 2}).requires_grad_();
  Tensor b = from_vector<float>({3, 4}).requires_grad_();
  Tensor g = from_vector<float>({1, 1});
  add(a, b).backward(g);
  REQUIRE(a.grad().defined());
  REQUIRE(b.grad().defined());
  {
    NoGradGuard ng;
    a.grad().mul_(5.0);
  }
  CHECK(a.grad().to_vector<float>() == std::vector<float>{5, 5});
  CHECK(b.grad().to_vector<float>() == std::vector<float>{1, 1});
  CHECK(g.to_vector<float>() == std::vector<float>{1, 1});  // the caller's gradient is untouched
}

TEST_CASE("create_graph backward leaves a differentiable .grad and accumulates out of place", "[gradcheck]") {
  Tensor x = from_vector<double>({2.0}).requires_grad_();
  pow(x, 3.0).sum().backward(Tensor(), false, true);
  Tensor g1 = x.grad();
  CHECK(g1.item() == Approx(12.0));
  CHECK(g1.requires_grad());
  pow(x, 2.0).sum().backward(Tensor(), false, true);
  CHECK(x.grad().item() == Approx(16.0));
  CHECK(g1.item() == Approx(12.0));  // not modified in place: it may be saved by a graph
  auto gg = autograd::grad({x.grad()}, {x});
  CHECK(gg[0].item() == Approx(6 * 2.0 + 2.0));
}

TEST_CASE("ties: max/min over all elements split the gradient evenly, along a dim pick one index", "[gradcheck]") {
  // PyTorch: max() without a dim distributes evenly among the maxima; max(dim) routes to the index
  // it returns (the first); maximum() of a tie gives half to each side.
  Tensor x = from_vector<double>({1, 3, 3, -2, 3, 0}, {2, 3}).requires_grad_();
  max(x).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 1.0 / 3, 1.0 / 3, 0, 1.0 / 3, 0});
  x.set_grad(Tensor());
  min(x).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0, 0, 1, 0, 0});
  x.set_grad(Tensor());
  max(x, 1).values.sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 1, 0, 0, 1, 0});
  x.set_grad(Tensor());
  max(x.reshape({-1}), 0).values.backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 1, 0, 0, 0, 0});
  Tensor a = from_vector<double>({2, 5}).requires_grad_(), b = from_vector<double>({2, 1}).requires_grad_();
  maximum(a, b).sum().backward();
  CHECK(a.grad().to_vector<double>() == std::vector<double>{0.5, 1});
  CHECK(b.grad().to_vector<double>() == std::vector<double>{0.5, 0});
  // A NaN maximum sends the gradient to the NaNs.
  Tensor n = from_vector<double>({1, std::nan(""), 5, std::nan("")}).requires_grad_();
  max(n).backward();
  CHECK(n.grad().to_vector<double>() == std::vector<double>{0, 0.5, 0, 0.5});
  // Low precision: same rule, gradient in the input dtype.
  Tensor h = from_vector<float>({4, 4, 1}).to(DType::F16).requires_grad_();
  max(h).backward();
  CHECK(h.grad().dtype() == DType::F16);
  CHECK(h.grad().to_vector<float>() == std::vector<float>{0.5f, 0.5f, 0});
}
