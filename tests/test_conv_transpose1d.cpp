// conv_transpose1d and nn::ConvTranspose1d against torch 1.13's values and gradients
// (tests/torch_refs/conv_transpose1d.py), f64 finite differences, the layer's initialisation and
// repr, autocast and errors.
#include <catch2/catch.hpp>

#include <cmath>

#include "minidl.h"
#include "conv_transpose1d_torch_values.h"
#include "gradcheck.h"
#include "sine_operands.h"

using namespace minidl;
using Catch::Contains;
using testing::sine_leaves;

namespace {
struct Case {
  std::string name;
  std::vector<Shape> shapes;
  std::function<Tensor(const std::vector<Tensor>&)> fn;
};
std::vector<Case> cases() {
  return {
      {"plain", {{2, 4, 5}, {4, 3, 3}, {3}}, [](auto& x) { return conv_transpose1d(x[0], x[1], x[2]); }},
      {"strided_groups", {{2, 4, 5}, {4, 3, 3}, {6}}, [](auto& x) { return conv_transpose1d(x[0], x[1], x[2], 2, 1, 1, 2, 2); }},
      {"unbatched", {{4, 5}, {4, 2, 2}}, [](auto& x) { return conv_transpose1d(x[0], x[1], Tensor(), 3); }},
  };
}
}  // namespace

TEST_CASE("conv_transpose1d matches torch: values, shapes and gradients", "[conv][torch]") {
  for (const Case& c : cases()) {
    std::vector<Tensor> in = sine_leaves(c.shapes);
    testing::check_printed_case(torch_conv_transpose1d_values(), c.name, c.fn(in), in);
  }
}

TEST_CASE("conv_transpose1d: f64 first- and second-order finite differences", "[conv][gradcheck]") {
  for (const Case& c : cases()) {
    INFO(c.name);
    std::vector<Tensor> in = sine_leaves(c.shapes, 4);
    CHECK(testing::check_gradients(c.fn, in, 1e-6, 1e-7) == "");
    CHECK(testing::check_second_order(c.fn, in, 1e-6, 1e-6) == "");
  }
}

TEST_CASE("nn::ConvTranspose1d: PyTorch's shapes and initialisation bounds, repr, autocast, errors", "[conv][nn]") {
  Generator gen(4);
  nn::ConvTranspose1d layer(nn::ConvTranspose1dOptions(4, 6, 3).stride(2).groups(2), &gen);
  CHECK(layer.weight.shape() == Shape{4, 3, 3});
  CHECK(layer.bias.shape() == Shape{6});
  CHECK(layer.describe() == "ConvTranspose1d(4 -> 6, k3, stride 2, groups 2, bias)");
  // kaiming_uniform_(a = sqrt(5)) over fan_in = 3 * 3: bound 1 / sqrt(fan_in), as the bias's.
  const double bound = 1.0 / std::sqrt(9.0);
  CHECK(amax(abs(layer.weight)).item() <= bound);
  CHECK(amax(abs(layer.bias)).item() <= bound);
  Tensor x = cast(testing::sine_operand(1, {2, 4, 7}), DType::F32);
  Tensor y = layer.forward(x);
  CHECK(y.shape() == Shape{2, 6, 15});  // (7 - 1) * 2 + 2 + 1
  CHECK(testing::max_abs_diff(y, conv_transpose1d(x, layer.weight, layer.bias, 2, 0, 0, 2)) == 0.0);
  {
    amp::autocast scope(DeviceType::CPU);
    CHECK(layer.forward(x).dtype() == DType::BF16);  // LowerPrecision, as PyTorch's lists
  }
  CHECK_THROWS_WITH(conv_transpose1d(x, ones({4, 3})), Contains("conv_transpose1d: expected a 3-D weight"));
  CHECK_THROWS_WITH(conv_transpose1d(ones({2, 2, 4, 7}), layer.weight), Contains("conv_transpose1d: expected 2-D (unbatched) or 3-D"));
  CHECK_THROWS_WITH(conv_transpose1d(x, layer.weight, Tensor(), 2, 0, 2), Contains("output padding must be smaller than either stride or dilation, but got output_padding 2, stride 2, dilation 1"));
  CHECK_THROWS_WITH(conv_transpose1d(cast(x, DType::F64), ones({5, 3, 3}, DType::F64)), Contains("expected input[2, 4, 7] to have 5 channels"));
  CHECK_THROWS_WITH(nn::ConvTranspose1d(nn::ConvTranspose1dOptions(4, 5, 3).groups(2)), Contains("divisible by groups 2"));
}
