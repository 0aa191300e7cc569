// affine_grid and grid_sample (ops/grid_sample.cpp): values and gradients against torch 1.13's for
// every mode, padding and align_corners (tests/torch_refs/grid_sample.py), a spatial-transformer
// step through both, f64 gradient checks to second order, the identity transform, autocast (f32,
// as PyTorch's lists), errors, and a [cuda] case.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cuda_checks.h"
#include "gradcheck.h"
#include "grid_sample_torch_values.h"
#include "minidl.h"
#include "sine_operands.h"

using namespace minidl;
using Catch::Contains;
using testing::sine_operand;

namespace {
struct Case {
  std::vector<Shape> shapes;
  testing::TensorFn fn;
};
testing::TensorFn sample(GridSampleMode mode, GridPadding padding, bool align, double scale) {
  return [=](const std::vector<Tensor>& x) { return grid_sample(x[0], mul(x[1], scale), mode, padding, align); };
}
const std::map<std::string, Case>& cases() {
  using M = GridSampleMode;
  using Pad = GridPadding;
  static const std::map<std::string, Case> c = {
      {"affine_grid", {{{2, 2, 3}}, [](const auto& x) { return affine_grid(x[0], {2, 1, 3, 4}, false); }}},
      {"affine_grid align", {{{2, 2, 3}}, [](const auto& x) { return affine_grid(x[0], {2, 1, 3, 4}, true); }}},
      {"bilinear zeros", {{{1, 2, 4, 5}, {1, 3, 3, 2}}, sample(M::Bilinear, Pad::Zeros, false, 1.2)}},
      {"bilinear zeros align", {{{2, 1, 3, 4}, {2, 2, 3, 2}}, sample(M::Bilinear, Pad::Zeros, true, 1.2)}},
      {"bilinear border align", {{{1, 2, 4, 5}, {1, 3, 3, 2}}, sample(M::Bilinear, Pad::Border, true, 1.5)}},
      {"bilinear reflection", {{{1, 2, 4, 5}, {1, 3, 3, 2}}, sample(M::Bilinear, Pad::Reflection, false, 2.5)}},
      {"bilinear reflection align", {{{1, 1, 4, 5}, {1, 4, 3, 2}}, sample(M::Bilinear, Pad::Reflection, true, 2.5)}},
      {"nearest zeros", {{{1, 2, 4, 5}, {1, 3, 3, 2}}, sample(M::Nearest, Pad::Zeros, false, 1.2)}},
      {"nearest border", {{{1, 2, 4, 5}, {1, 3, 3, 2}}, sample(M::Nearest, Pad::Border, false, 1.7)}},
      {"spatial transformer",
       {{{2, 1, 5, 5}, {2, 2, 3}},
        [](const auto& x) { return grid_sample(x[0], affine_grid(mul(x[1], 0.8), {2, 1, 4, 4})); }}},
  };
  return c;
}
}  // namespace

TEST_CASE("affine_grid and grid_sample match torch: values and gradients", "[nn][grid_sample]") {
  const auto& want = torch_grid_sample_values();
  for (const auto& [name, c] : cases()) {
    const std::vector<Tensor> xs = testing::sine_leaves(c.shapes);
    testing::check_printed_case(want, name, c.fn(xs), xs);
  }
}

TEST_CASE("affine_grid and grid_sample: f64 gradient checks, first and second order", "[nn][grid_sample][gradcheck]") {
  for (const auto& [name, c] : cases()) {
    INFO(name);
    // Other operands than the printed case's, clear of the pixel boundaries where the weights kink.
    const std::vector<Tensor> xs = testing::sine_leaves(c.shapes, 5);
    CHECK(testing::check_gradients(c.fn, xs, 1e-6, 1e-6) == "");
    CHECK(testing::check_second_order(c.fn, xs, 1e-6, 1e-5) == "");
  }
}

TEST_CASE("the identity transform with align_corners reproduces the image; autocast runs grid_sample in f32",
          "[nn][grid_sample][amp]") {
  Tensor x = sine_operand(1, {2, 3, 5, 6});
  const Tensor identity = from_vector<double>({1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0}, {2, 2, 3});
  CHECK(testing::max_abs_diff(grid_sample(x, affine_grid(identity, {2, 3, 5, 6}, true), GridSampleMode::Bilinear,
                                          GridPadding::Zeros, true),
                              x) < 1e-14);
  CHECK(testing::max_abs_diff(grid_sample(x, affine_grid(identity, {2, 3, 5, 6}, false)), x) < 1e-14);
  Tensor xb = x.to(DType::BF16), grid = affine_grid(cast(identity, DType::F32), {2, 3, 5, 6}).to(DType::BF16);
  amp::autocast ac(DeviceType::CPU, DType::BF16);
  CHECK(grid_sample(xb, grid).dtype() == DType::F32);
}

TEST_CASE("grid_sample and affine_grid refuse bad input with torch's words", "[nn][grid_sample][errors]") {
  Tensor x = ones({2, 1, 3, 3});
  CHECK_THROWS_WITH(grid_sample(x, zeros({1, 2, 2, 2})), Contains("grid_sample") && Contains("same batch size"));
  CHECK_THROWS_WITH(grid_sample(x, zeros({2, 2, 2, 3})), Contains("expected grid to have size 2 in last dimension"));
  CHECK_THROWS_WITH(grid_sample(ones({2, 3, 3}), zeros({2, 2, 2, 2})), Contains("4-D input and grid"));
  CHECK_THROWS_WITH(grid_sample(x, zeros({2, 2, 2, 2}, DType::F64)), Contains("same dtype"));
  CHECK_THROWS_WITH(affine_grid(zeros({2, 3, 3}), {2, 1, 4, 4}),
                    Contains("affine_grid") && Contains("Expected a batch of 2D affine matrices of shape Nx2x3 for size [2, 1, 4, 4]. Got [2, 3, 3]."));
  CHECK_THROWS_WITH(affine_grid(zeros({2, 2, 3}), {2, 1, 4}), Contains("4D sizes"));
}

TEST_CASE("cuda: affine_grid and grid_sample agree with the CPU, values and gradients", "[cuda][grid_sample]") {
  using namespace minidl::cuda_test;
  MINIDL_REQUIRE_GPU();
  for (const auto& [name, c] : cases()) {
    INFO(name);
    std::vector<Tensor> cpu, dev;
    for (size_t k = 0; k < c.shapes.size(); ++k) {
      const Tensor v = cast(sine_operand(2 + static_cast<int>(k), c.shapes[k]), DType::F32);
      cpu.push_back(v.clone().requires_grad_());
      dev.push_back(v.to(kCuda).requires_grad_());
    }
    const Tensor yc = c.fn(cpu), yd = c.fn(dev);
    sum(mul(yc, yc)).backward();
    sum(mul(yd, yd)).backward();
    check_close(yd.to(Device::cpu()), yc, 1e-5, 1e-6, "output");
    for (size_t k = 0; k < cpu.size(); ++k)
      check_close(dev[k].grad().to(Device::cpu()), cpu[k].grad(), 1e-4, 1e-5, "gradient " + std::to_string(k));
  }
}
