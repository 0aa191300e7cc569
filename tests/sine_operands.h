// Deterministic inputs that a test and its tests/torch_refs/*.py script build alike: operand k's
// element j is sin(0.37 j + 0.1 k + 0.05), the output weights cos(0.21 j); and a value check at
// f64 precision for the numbers the scripts printed.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "minidl.h"

namespace minidl::testing {

inline Tensor sine_operand(int k, const Shape& shape) {
  std::vector<double> v(numel_of(shape));
  for (size_t j = 0; j < v.size(); ++j) v[j] = std::sin(0.37 * static_cast<double>(j) + 0.1 * k + 0.05);
  return from_vector(v, shape);
}

inline Tensor cosine_weights(const Shape& shape) {
  std::vector<double> v(numel_of(shape));
  for (size_t j = 0; j < v.size(); ++j) v[j] = std::cos(0.21 * static_cast<double>(j));
  return from_vector(v, shape);
}

// Leaves that require grad, input k = sine_operand(first + k, shapes[k]): a case's inputs as the
// scripts' case_entries makes them (first 0), or other operands for a gradient check.
inline std::vector<Tensor> sine_leaves(const std::vector<Shape>& shapes, int first = 0) {
  std::vector<Tensor> xs;
  for (size_t k = 0; k < shapes.size(); ++k) xs.push_back(sine_operand(first + static_cast<int>(k), shapes[k]).requires_grad_());
  return xs;
}

// got against torch's printed f64 values: 1e-12 relative (different summation orders), 1e-14 absolute.
inline void check_printed_values(const Tensor& got, const std::vector<double>& want) {
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i);
    CHECK(g[i] == Approx(want[i]).epsilon(1e-12).margin(1e-14));
  }
}

// y = f(inputs) against a script's printed "name.value" (and "name.shape", where it printed one),
// then the gradients of sum(y * cosine_weights) against "name.gradK" for every input K.
inline void check_printed_case(const std::map<std::string, std::vector<double>>& want, const std::string& name,
                               const Tensor& y, const std::vector<Tensor>& inputs) {
  INFO(name);
  if (want.count(name + ".shape")) {
    std::vector<double> shape;
    for (int64_t d : y.shape()) shape.push_back(static_cast<double>(d));
    CHECK(shape == want.at(name + ".shape"));
  }
  check_printed_values(y, want.at(name + ".value"));
  sum(mul(y, cosine_weights(y.shape()))).backward();
  for (size_t k = 0; k < inputs.size(); ++k) {
    INFO("gradient of input " << k);
    REQUIRE(inputs[k].grad().defined());
    check_printed_values(inputs[k].grad(), want.at(name + ".grad" + std::to_string(k)));
  }
  CHECK(want.count(name + ".grad" + std::to_string(inputs.size())) == 0);
}

}  // namespace minidl::testing
