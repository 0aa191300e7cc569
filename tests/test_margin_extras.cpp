// multilabel_margin_loss, triplet_margin_with_distance_loss and pdist (with nn::MultiLabelMarginLoss
// and nn::TripletMarginWithDistanceLoss): values and gradients against torch 1.13's
// (tests/torch_refs/margin_extras.py), f64 gradient checks, errors.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "gradcheck.h"
#include "margin_extras_torch_values.h"
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
Tensor targets(std::vector<int64_t> v, const Shape& shape) { return from_vector<int64_t>(v, shape); }
Tensor cosine_distance(const Tensor& a, const Tensor& b) { return rsub(cosine_similarity(a, b), 1.0); }
const std::map<std::string, Case>& cases() {
  static const std::map<std::string, Case> c = {
      {"multilabel_margin_loss",
       {{{3, 4}}, [](const auto& x) { return multilabel_margin_loss(x[0], targets({3, 0, -1, 1, 1, 2, 3, 0, -1, 0, 0, 0}, {3, 4})); }}},
      {"multilabel_margin_loss 1d none",
       {{{5}}, [](const auto& x) { return multilabel_margin_loss(x[0], targets({4, 1, -1, 0, 0}, {5}), Reduction::None); }}},
      {"multilabel_margin_loss repeated sum",
       {{{1, 4}}, [](const auto& x) { return multilabel_margin_loss(x[0], targets({2, 2, -1, 0}, {1, 4}), Reduction::Sum); }}},
      {"triplet_with_distance", {{{4, 3}, {4, 3}, {4, 3}}, [](const auto& x) { return triplet_margin_with_distance_loss(x[0], x[1], x[2]); }}},
      {"triplet_with_distance cosine swap",
       {{{4, 3}, {4, 3}, {4, 3}},
        [](const auto& x) { return triplet_margin_with_distance_loss(x[0], x[1], x[2], cosine_distance, 0.5, true, Reduction::None); }}},
      {"pdist", {{{4, 3}}, [](const auto& x) { return pdist(x[0]); }}},
      {"pdist p1", {{{5, 2}}, [](const auto& x) { return pdist(x[0], 1.0); }}},
      {"pdist p3", {{{4, 3}}, [](const auto& x) { return pdist(x[0], 3.0); }}},
  };
  return c;
}
}  // namespace

TEST_CASE("multilabel_margin_loss, triplet_margin_with_distance_loss and pdist match torch", "[loss][distance]") {
  for (const auto& [name, c] : cases()) {
    const std::vector<Tensor> xs = testing::sine_leaves(c.shapes);
    testing::check_printed_case(torch_margin_extras_values(), name, c.fn(xs), xs);
  }
}

TEST_CASE("multilabel_margin_loss, triplet_margin_with_distance_loss and pdist: f64 gradient checks", "[loss][distance][gradcheck]") {
  for (const auto& [name, c] : cases()) {
    INFO(name);
    const std::vector<Tensor> xs = testing::sine_leaves(c.shapes, 7);
    CHECK(testing::check_gradients(c.fn, xs, 1e-6, 1e-6) == "");
  }
}

TEST_CASE("the modules call the ops; bad input is refused with torch's words", "[loss][distance][errors]") {
  Tensor x = sine_operand(1, {3, 4}), y = targets({3, 0, -1, 1, 1, 2, 3, 0, -1, 0, 0, 0}, {3, 4});
  CHECK(testing::max_abs_diff(nn::MultiLabelMarginLoss()(x, y), multilabel_margin_loss(x, y)) == 0.0);
  Tensor a = sine_operand(2, {4, 3}), p = sine_operand(3, {4, 3}), n = sine_operand(4, {4, 3});
  nn::TripletMarginWithDistanceLoss triplet(cosine_distance, 0.5, true);
  CHECK(testing::max_abs_diff(triplet(a, p, n), triplet_margin_with_distance_loss(a, p, n, cosine_distance, 0.5, true)) == 0.0);
  CHECK_THROWS_WITH(multilabel_margin_loss(x, targets({0, 1}, {1, 2})), Contains("multilabel_margin_loss") && Contains("inconsistent size [1, 2]"));
  CHECK_THROWS_WITH(multilabel_margin_loss(x, targets(std::vector<int64_t>(12, 4), {3, 4})), Contains("out of range"));
  CHECK_THROWS_WITH(multilabel_margin_loss(x, zeros({3, 4})), Contains("expected scalar type Long but found f32"));
  CHECK_THROWS_WITH(triplet_margin_with_distance_loss(a, p, n, nullptr, 0.0), Contains("expected margin to be greater than 0, got 0"));
  CHECK_THROWS_WITH(triplet_margin_with_distance_loss(a, p, n.unsqueeze(0)), Contains("same number of dimensions"));
  CHECK_THROWS_WITH(pdist(ones({2, 3, 4})), Contains("pdist only supports 2D tensors, got: 3D"));
  CHECK_THROWS_WITH(pdist(ones({3, 2}), -1.0), Contains("pdist only supports non-negative p values"));
  // Equal rows: distance 0, gradient 0 there (torch's pdist gives 0 too).
  Tensor same = from_vector<double>({0, 0, 0, 0, 1, 1}, {3, 2}).requires_grad_();
  sum(pdist(same)).backward();
  CHECK(same.grad().to_vector<double>()[0] == Approx(-std::sqrt(0.5)));
}
