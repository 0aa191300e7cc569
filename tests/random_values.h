// Seeded uniform random inputs for the reference tests: the same seed gives the same values on
// every run.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "minidl.h"

namespace minidl::testing {

// n values uniform in [lo, hi).
inline std::vector<double> random_values(size_t n, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

// An f64 tensor of shape s with values uniform in [lo, hi).
inline Tensor random_tensor(const Shape& s, uint64_t seed, double lo = -1, double hi = 1) {
  return from_vector(random_values(numel_of(s), lo, hi, seed), s);
}

}  // namespace minidl::testing
