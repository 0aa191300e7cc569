// gaussian_nll_loss, bilinear, Softmin, Softmax2d (ops, functional forms and nn modules) and
// nn::utils::parameters_to_vector / vector_to_parameters: values and gradients against torch 1.13's
// (tests/torch_refs/nn_extras.py), f64 gradient checks to second order, reprs and errors.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gradcheck.h"
#include "minidl.h"
#include "nn_extras_torch_values.h"
#include "sine_operands.h"

using namespace minidl;
using Catch::Contains;
using testing::check_printed_values;
using testing::cosine_weights;
using testing::sine_operand;

namespace {
struct Case {
  std::vector<Shape> shapes;
  testing::TensorFn fn;
};
const std::map<std::string, Case>& cases() {
  namespace F = nn::functional;
  static const std::map<std::string, Case> c = {
      {"gaussian_nll_loss",
       {{{4, 3}, {4, 3}, {4, 3}}, [](const auto& x) { return F::gaussian_nll_loss(x[0], x[1], add(abs(x[2]), 0.05)); }}},
      {"gaussian_nll_loss full sum homoscedastic",
       {{{4, 3}, {4, 3}, {4}},
        [](const auto& x) { return F::gaussian_nll_loss(x[0], x[1], add(abs(x[2]), 0.05), true, 1e-6, Reduction::Sum); }}},
      {"gaussian_nll_loss last dim 1 none eps",
       {{{4, 3}, {4, 3}, {4, 1}},
        [](const auto& x) { return F::gaussian_nll_loss(x[0], x[1], abs(x[2]), false, 0.1, Reduction::None); }}},
      {"bilinear", {{{2, 3, 4}, {2, 3, 5}, {6, 4, 5}, {6}}, [](const auto& x) { return F::bilinear(x[0], x[1], x[2], x[3]); }}},
      {"bilinear no bias", {{{4}, {5}, {2, 4, 5}}, [](const auto& x) { return F::bilinear(x[0], x[1], x[2]); }}},
      {"softmin", {{{3, 4}}, [](const auto& x) { return F::softmin(x[0], 1); }}},
      {"softmax2d", {{{2, 3, 2, 2}}, [](const auto& x) { return nn::Softmax2d().forward(x[0]); }}},
  };
  return c;
}
}  // namespace

TEST_CASE("gaussian_nll_loss, bilinear, softmin and Softmax2d match torch: values and gradients", "[nn][loss]") {
  const auto& want = torch_nn_extras_values();
  for (const auto& [name, c] : cases()) {
    INFO(name);
    const std::vector<Tensor> xs = testing::sine_leaves(c.shapes);
    testing::check_printed_case(want, name, c.fn(xs), xs);
  }
}

TEST_CASE("gaussian_nll_loss, bilinear, softmin and Softmax2d: f64 gradient checks, first and second order", "[nn][gradcheck]") {
  for (const auto& [name, c] : cases()) {
    INFO(name);
    // Away from the clamp's edge (no variance within 1e-6 of eps), where the loss is smooth.
    CHECK(testing::check_gradients(c.fn, testing::sine_leaves(c.shapes), 1e-6, 1e-6) == "");
    CHECK(testing::check_second_order(c.fn, testing::sine_leaves(c.shapes), 1e-6, 1e-5) == "");
  }
}

TEST_CASE("Bilinear, Softmin, Softmax2d and GaussianNLLLoss modules: reprs, initial range, errors", "[nn]") {
  const auto& repr = torch_nn_extras_reprs();
  nn::Bilinear bl(3, 4, 5);
  CHECK(bl.describe() == repr.at("bilinear"));
  CHECK(nn::Bilinear(3, 4, 5, false).describe() == repr.at("bilinear no bias"));
  CHECK(bl.state_dict().keys() == std::vector<std::string>{"weight", "bias"});
  CHECK(bl.weight.shape() == Shape{5, 3, 4});
  for (const Tensor& p : bl.parameters()) CHECK(max(abs(p)).item() <= 1.0 / std::sqrt(3.0));
  CHECK(bl(ones({7, 3}), ones({7, 4})).shape() == Shape{7, 5});
  CHECK(bl.clone_structure()->describe() == repr.at("bilinear"));
  CHECK(nn::Softmin(1).describe() == repr.at("softmin"));
  CHECK(nn::Softmax2d().describe() == repr.at("softmax2d"));
  CHECK(nn::GaussianNLLLoss(true).describe() == repr.at("gaussian"));
  const Tensor x = sine_operand(0, {4, 3}), t = sine_operand(1, {4, 3}), v = add(abs(sine_operand(2, {4, 3})), 0.05);
  CHECK(nn::GaussianNLLLoss()(x, t, v).item() == gaussian_nll_loss(x, t, v).item());
  CHECK_THROWS_WITH(gaussian_nll_loss(x, t, ones({3})), Contains("gaussian_nll_loss") && Contains("var is of incorrect size"));
  CHECK_THROWS_WITH(gaussian_nll_loss(x, t, neg(v)), Contains("var has negative entry/entries"));
  CHECK_THROWS_WITH(bilinear(ones({2, 3}), ones({2, 4}), ones({5, 3, 5})), Contains("input2 size does not match weight size: got 4 but expected 5"));
  CHECK_THROWS_WITH(bilinear(ones({2, 3}), ones({3, 4}), ones({5, 3, 4})), Contains("input batch dimensions must agree"));
  CHECK_THROWS_WITH(nn::Softmax2d().forward(ones({2, 3})), Contains("Softmax2d: expected input to be 3D or 4D, got 2D instead"));
}

TEST_CASE("parameters_to_vector and vector_to_parameters round-trip in list order", "[nn][utils]") {
  nn::Linear a(3, 2), b(2, 1);
  std::vector<Tensor> params = a.parameters();
  for (const Tensor& p : b.parameters()) params.push_back(p);
  const Tensor vec = nn::utils::parameters_to_vector(params);
  CHECK(vec.shape() == Shape{6 + 2 + 2 + 1});
  CHECK(vec.narrow(0, 0, 6).to_vector<double>() == a.weight.reshape({-1}).to_vector<double>());
  CHECK(vec.narrow(0, 10, 1).to_vector<double>() == b.bias.to_vector<double>());
  nn::utils::vector_to_parameters(arange(11.0), params);
  CHECK(a.weight.to_vector<double>() == std::vector<double>{0, 1, 2, 3, 4, 5});
  CHECK(b.bias.to_vector<double>() == std::vector<double>{10});
  CHECK(a.weight.requires_grad());
  CHECK_THROWS_WITH(nn::utils::vector_to_parameters(arange(10.0), params), Contains("vec has 10 elements but the parameters have 11"));
  CHECK_THROWS_WITH(nn::utils::vector_to_parameters(ones({11, 1}), params), Contains("expected vec to be a 1-D tensor"));
}
