// unfold and fold (ops/fold.cpp) and nn::Unfold / nn::Fold: values and gradients against torch 1.13's
// (tests/torch_refs/sliding_blocks.py), each the other's adjoint, f64 gradient checks to second order,
// inf staying in its own blocks, reprs and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "gradcheck.h"
#include "minidl.h"
#include "sine_operands.h"
#include "sliding_blocks_torch_values.h"

using namespace minidl;
using Catch::Contains;
using testing::check_printed_values;
using testing::cosine_weights;
using testing::sine_operand;

namespace {
struct Case {
  Shape shape;
  std::function<Tensor(const Tensor&)> fn;
};
const std::map<std::string, Case>& cases() {
  static const std::map<std::string, Case> c = {
      {"unfold k2", {{2, 3, 4, 5}, [](const Tensor& x) { return unfold(x, {2, 2}); }}},
      {"unfold k(2,3) d(2,1) p1 s(2,1)", {{2, 3, 5, 6}, [](const Tensor& x) { return unfold(x, {2, 3}, {2, 1}, {1, 1}, {2, 1}); }}},
      {"unfold unbatched k3 p1 s2", {{2, 5, 5}, [](const Tensor& x) { return unfold(x, {3, 3}, {1, 1}, {1, 1}, {2, 2}); }}},
      {"fold k2 to 4x5", {{2, 12, 12}, [](const Tensor& x) { return fold(x, {4, 5}, {2, 2}); }}},
      {"fold k(2,3) d(2,1) p1 s(2,1) to 5x6",
       {{2, 18, 18}, [](const Tensor& x) { return fold(x, {5, 6}, {2, 3}, {2, 1}, {1, 1}, {2, 1}); }}},
      {"fold unbatched k3 p1 s2 to 5x5", {{18, 9}, [](const Tensor& x) { return fold(x, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {2, 2}); }}},
  };
  return c;
}
}  // namespace

TEST_CASE("unfold and fold match torch.nn.functional: values and gradients", "[fold]") {
  const auto& want = torch_sliding_blocks_values();
  for (const auto& [name, c] : cases()) {
    INFO(name);
    Tensor x = sine_operand(0, c.shape).requires_grad_();
    testing::check_printed_case(want, name, c.fn(x), {x});
  }
}

TEST_CASE("unfold and fold: f64 gradient checks to second order; each is the other's adjoint", "[fold][gradcheck]") {
  for (const auto& [name, c] : cases()) {
    INFO(name);
    const testing::TensorFn fn = [f = c.fn](const std::vector<Tensor>& v) { return f(v[0]); };
    const std::vector<Tensor> xs = {sine_operand(0, c.shape).requires_grad_()};
    CHECK(testing::check_gradients(fn, xs, 1e-6, 1e-6) == "");
    CHECK(testing::check_second_order(fn, xs, 1e-6, 1e-5) == "");
  }
  // <unfold(x), y> = <x, fold(y)> for the same window.
  const Tensor x = sine_operand(1, {2, 3, 5, 6}), y = sine_operand(2, {2, 18, 18});
  const double lhs = sum(mul(unfold(x, {2, 3}, {2, 1}, {1, 1}, {2, 1}), y)).item();
  const double rhs = sum(mul(x, fold(y, {5, 6}, {2, 3}, {2, 1}, {1, 1}, {2, 1}))).item();
  CHECK(lhs == Approx(rhs).epsilon(1e-12));
}

TEST_CASE("an inf stays in the blocks that hold it; layers print as torch's; errors", "[fold][nn]") {
  Tensor x = zeros({1, 1, 3, 3});
  {
    NoGradGuard guard;
    x.narrow(2, 0, 1).narrow(3, 0, 1).fill_(std::numeric_limits<double>::infinity());
  }
  const std::vector<double> cols = unfold(x, {2, 2}).to_vector<double>();  // [1, 4, 4]: block 0 alone holds (0, 0)
  int infs = 0, nans = 0;
  for (double v : cols) {
    infs += std::isinf(v);
    nans += std::isnan(v);
  }
  CHECK(infs == 1);
  CHECK(nans == 0);
  const auto& repr = torch_sliding_blocks_reprs();
  CHECK(nn::Unfold({2, 3}).describe() == repr.at("unfold"));
  CHECK(nn::Fold({4, 5}, {2, 2}).describe() == repr.at("fold"));
  CHECK(nn::Unfold({2, 2}).forward(sine_operand(0, {2, 3, 4, 5})).shape() == Shape{2, 12, 12});
  CHECK(nn::Fold({4, 5}, {2, 2}).clone_structure()->describe() == repr.at("fold"));
  CHECK_THROWS_WITH(unfold(zeros({2, 3}), {2, 2}), Contains("unfold") && Contains("Only 3D or 4D input Tensors are supported (got 2D)"));
  CHECK_THROWS_WITH(unfold(zeros({1, 2, 3, 3}), {4, 4}), Contains("calculated shape of the array of sliding blocks as (0, 0)"));
  CHECK_THROWS_WITH(unfold(zeros({1, 2, 3, 3}), {2, 2}, {1, 1}, {0, 0}, {0, 0}), Contains("stride should be greater than zero"));
  CHECK_THROWS_WITH(fold(zeros({1, 7, 4}), {3, 3}, {2, 2}), Contains("divisible by the product of kernel_size, but got input.size(1)=7"));
  CHECK_THROWS_WITH(fold(zeros({1, 8, 5}), {3, 3}, {2, 2}), Contains("sliding blocks 2 * 2 = 4, but got input.size(2)=5"));
  CHECK_THROWS_WITH(fold(zeros({1, 2, 3, 4}), {3, 3}, {2, 2}), Contains("Expected 2D or 3D (batch mode) tensor"));
}
