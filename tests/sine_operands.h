// Deterministic inputs that a test and its tests/torch_refs/*.py script build alike: operand k's
// element j is sin(0.37 j + 0.1 k + 0.05), the output weights cos(0.21 j); and a value check at
// f64 precision for the numbers the scripts printed.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
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

// got against torch's printed f64 values: 1e-12 relative (different summation orders), 1e-14 absolute.
inline void check_printed_values(const Tensor& got, const std::vector<double>& want) {
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i);
    CHECK(g[i] == Approx(want[i]).epsilon(1e-12).margin(1e-14));
  }
}

}  // namespace minidl::testing
