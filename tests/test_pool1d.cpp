// 1-D pooling (ops/pool1d.cpp, nn/pool1d.h): values, gradients and indices against what torch 1.13
// computed for the same inputs (tests/torch_refs/pool1d.py), f64 gradient checks to second order,
// the layers' reprs and the errors.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "gradcheck.h"
#include "minidl.h"
#include "pool1d_torch_values.h"
#include "sine_operands.h"

using namespace minidl;
using Catch::Contains;
using testing::check_printed_values;
using testing::cosine_weights;
using testing::sine_operand;

namespace {
struct Case {
  Shape shape;
  std::function<MaxPoolResult(const Tensor&)> fn;  // indices undefined for the average pools
};
const std::map<std::string, Case>& cases() {
  static const std::map<std::string, Case> c = {
      {"max_pool1d k3 s2 p1", {{2, 3, 7}, [](const Tensor& x) { return max_pool1d_with_indices(x, 3, 2, 1); }}},
      {"max_pool1d k2 d2 ceil", {{2, 3, 7}, [](const Tensor& x) { return max_pool1d_with_indices(x, 2, 2, 0, 2, true); }}},
      {"max_pool1d unbatched k2", {{3, 7}, [](const Tensor& x) { return max_pool1d_with_indices(x, 2); }}},
      {"avg_pool1d k3 s2 p1 ceil no pad count",
       {{2, 3, 7}, [](const Tensor& x) { return MaxPoolResult{avg_pool1d(x, 3, 2, 1, true, false), Tensor()}; }}},
      {"avg_pool1d k2", {{2, 3, 7}, [](const Tensor& x) { return MaxPoolResult{avg_pool1d(x, 2), Tensor()}; }}},
      {"adaptive_avg_pool1d 3", {{2, 3, 7}, [](const Tensor& x) { return MaxPoolResult{adaptive_avg_pool1d(x, 3), Tensor()}; }}},
      {"adaptive_max_pool1d 4", {{2, 3, 7}, [](const Tensor& x) { return adaptive_max_pool1d_with_indices(x, 4); }}},
  };
  return c;
}
}  // namespace

TEST_CASE("1-D pools match torch.nn.functional: values, gradients and indices", "[pool]") {
  const auto& want = torch_pool1d_values();
  for (const auto& [name, c] : cases()) {
    INFO(name);
    Tensor x = sine_operand(0, c.shape).requires_grad_();
    const MaxPoolResult r = c.fn(x);
    CHECK(r.indices.defined() == (want.count(name + ".indices") == 1));
    if (r.indices.defined()) {
      CHECK(r.indices.dtype() == DType::I64);
      CHECK(r.indices.to_vector<double>() == want.at(name + ".indices"));
    }
    testing::check_printed_case(want, name, r.values, {x});
  }
}

TEST_CASE("1-D pools: f64 gradient checks, first and second order", "[pool][gradcheck]") {
  for (const auto& [name, c] : cases()) {
    INFO(name);
    const testing::TensorFn fn = [f = c.fn](const std::vector<Tensor>& v) { return f(v[0]).values; };
    // Distinct values (no ties inside a window), so the max is differentiable at the operand.
    const std::vector<Tensor> xs = {sine_operand(0, c.shape).requires_grad_()};
    CHECK(testing::check_gradients(fn, xs, 1e-6, 1e-6) == "");
    CHECK(testing::check_second_order(fn, xs, 1e-6, 1e-5) == "");
  }
}

TEST_CASE("1-D pool layers print as torch's and refuse bad arguments with torch's words", "[pool][nn]") {
  const auto& repr = torch_pool1d_reprs();
  CHECK(nn::MaxPool1d(3, 2, 1, 2, true).describe() == repr.at("max"));
  CHECK(nn::MaxPool1d(3).describe() == repr.at("max default"));
  CHECK(nn::AvgPool1d(3, 1, 1, true, false).describe() == repr.at("avg"));
  CHECK(nn::AdaptiveAvgPool1d(4).describe() == repr.at("adaptive avg"));
  CHECK(nn::AdaptiveMaxPool1d(2).describe() == repr.at("adaptive max"));
  const Tensor x = sine_operand(0, {2, 3, 7});
  CHECK(nn::MaxPool1d(3, 2, 1).forward(x).to_vector<double>() == max_pool1d(x, 3, 2, 1).to_vector<double>());
  CHECK(nn::AdaptiveMaxPool1d(2).forward(x).shape() == Shape{2, 3, 2});
  nn::ModulePtr copy = nn::AvgPool1d(3, 1, 1, true, false).clone_structure();
  CHECK(copy->describe() == repr.at("avg"));
  CHECK_THROWS_WITH(max_pool1d(zeros({1, 2, 3, 4}), 2), Contains("max_pool1d") && Contains("Expected 2 to 3 dimensions, but got 4"));
  CHECK_THROWS_WITH(avg_pool1d(zeros({2, 3, 4}), 2, 2, 2), Contains("avg_pool1d") && Contains("padding should be at most half of kernel size, but got padding=2 and kernel_size=2"));
  CHECK_THROWS_WITH(max_pool1d(zeros({2, 3, 4}), 0), Contains("kernel_size must be greater than zero, but got 0"));
  CHECK_THROWS_WITH(adaptive_avg_pool1d(zeros({2, 3, 4}), 0), Contains("adaptive_avg_pool2d") && Contains("output size must be positive"));
  CHECK_THROWS_WITH(max_pool1d(zeros({2, 3, 2}), 3), Contains("Output size is too small"));
  CHECK_THROWS_WITH(adaptive_max_pool1d(zeros({2, 3}, DType::I64), 2), Contains("floating point"));
}
