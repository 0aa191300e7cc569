// trunc_normal_, eye_, dirac_, orthogonal_ and sparse_ (nn/init.h): trunc_normal_ against PyTorch's
// formula on the same uniform draws and against the truncated normal's moments, dirac_ weights
// passing a convolution's input through, orthogonal_ giving orthonormal rows or columns, sparse_'s
// zeros per column and spread, and the errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "gradcheck.h"
#include "minidl.h"

using namespace minidl;
using Catch::Contains;

TEST_CASE("trunc_normal_ is PyTorch's inverse-CDF transform of the same uniform draws", "[nn][init]") {
  const double mean = 0.5, std = 2.0, a = -1.0, b = 3.0;
  Tensor w = empty({1000});
  Generator g1(11), g2(11);
  nn::init::trunc_normal_(w, mean, std, a, b, &g1);
  // PyTorch's steps: uniform_(2l - 1, 2u - 1), erfinv_, mul_(std sqrt 2), add_(mean), clamp_(a, b).
  auto cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
  const double lo = cdf((a - mean) / std), hi = cdf((b - mean) / std);
  const Tensor u = rand({1000}, TensorOptions(DType::F32), &g2);
  const Tensor want = clamp(add(mul(erfinv(add(mul(u, 2 * hi - 2 * lo), 2 * lo - 1)), std * std::sqrt(2.0)), mean), a, b);
  CHECK(testing::max_abs_diff(w, want) == 0);
  CHECK(min(w).item() >= a);
  CHECK(max(w).item() <= b);
}

TEST_CASE("trunc_normal_ has the truncated normal's mean and variance", "[nn][init]") {
  const double mean = 0.3, std = 1.5, a = -1.0, b = 2.0;
  Tensor w = empty({200000}, DType::F64);
  Generator g(12);
  nn::init::trunc_normal_(w, mean, std, a, b, &g);
  auto pdf = [](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * M_PI); };
  auto cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
  const double al = (a - mean) / std, be = (b - mean) / std, z = cdf(be) - cdf(al);
  const double m = mean + std * (pdf(al) - pdf(be)) / z;
  const double v = std * std * (1 + (al * pdf(al) - be * pdf(be)) / z - std::pow((pdf(al) - pdf(be)) / z, 2));
  // Five standard errors of the sample mean and variance (n = 200000): never reached by chance at
  // this fixed seed, while a wrong transform (no truncation, wrong scale) misses by far more.
  const double n = static_cast<double>(w.numel());
  CHECK(std::fabs(minidl::mean(w).item() - m) < 5 * std::sqrt(v / n));
  const double var = minidl::var(w, {0}, 0).item();
  CHECK(std::fabs(var - v) < 5 * v * std::sqrt(2.0 / n));
}

TEST_CASE("eye_ and dirac_ build identities; a dirac_ weight passes a convolution's input through", "[nn][init]") {
  Tensor e = empty({3, 5});
  nn::init::eye_(e);
  CHECK(testing::max_abs_diff(e, eye(3, 5)) == 0);
  // groups 2: each half of the channels maps to itself.
  Tensor w = empty({4, 2, 3, 3});
  nn::init::dirac_(w, 2);
  const Tensor x = randn({2, 4, 5, 6});
  CHECK(testing::max_abs_diff(conv2d(x, w, Tensor(), {1, 1}, {1, 1}, {1, 1}, 2), x) == 0);
  CHECK(sum(w).item() == 4.0);
  // More outputs than inputs: the extra output channel stays zero; 1-D kernels of even size put the
  // one at size / 2, as PyTorch.
  Tensor w1 = empty({3, 2, 4});
  nn::init::dirac_(w1);
  std::vector<double> want(24, 0.0);
  want[0 * 8 + 0 * 4 + 2] = 1.0;
  want[1 * 8 + 1 * 4 + 2] = 1.0;
  CHECK(w1.to_vector<double>() == want);
  Tensor w3 = empty({2, 2, 3, 3, 3});
  nn::init::dirac_(w3);
  std::vector<double> want3(108, 0.0);
  want3[0 * 54 + 0 * 27 + 13] = 1.0;
  want3[1 * 54 + 1 * 27 + 13] = 1.0;
  CHECK(w3.to_vector<double>() == want3);
}

TEST_CASE("orthogonal_ gives orthonormal columns (tall) or rows (wide), times the gain", "[nn][init]") {
  Generator g(13);
  Tensor tall = empty({6, 4});
  nn::init::orthogonal_(tall, 1.0, &g);
  // f32 values of an f64 orthonormal basis: products within a few f32 ulps of the identity.
  CHECK(testing::max_abs_diff(matmul(tall.t(), tall), eye(4)) < 8 * traits(DType::F32).eps);
  Tensor wide = empty({3, 2, 2, 2}, DType::F64);  // viewed as [3, 8]
  nn::init::orthogonal_(wide, 2.0, &g);
  const Tensor rows = wide.reshape({3, 8});
  CHECK(testing::max_abs_diff(matmul(rows, rows.t()), mul(eye(3, std::nullopt, DType::F64), 4.0)) < 1e-12);
  // Seeded: the same generator state gives the same matrix.
  Generator g1(14), g2(14);
  Tensor a = empty({5, 5}), b = empty({5, 5});
  nn::init::orthogonal_(a, 1.0, &g1);
  nn::init::orthogonal_(b, 1.0, &g2);
  CHECK(testing::max_abs_diff(a, b) == 0);
}

TEST_CASE("the new initialisers refuse what PyTorch's refuse", "[nn][init]") {
  CHECK_THROWS_WITH(nn::init::eye_(empty({2, 2, 2})), Contains("eye_") && Contains("Only tensors with 2 dimensions"));
  CHECK_THROWS_WITH(nn::init::dirac_(empty({2, 2})), Contains("dirac_") && Contains("3, 4, or 5 dimensions"));
  CHECK_THROWS_WITH(nn::init::dirac_(empty({3, 2, 3}), 2), Contains("dim 0 must be divisible by groups"));
  CHECK_THROWS_WITH(nn::init::orthogonal_(empty({4})), Contains("orthogonal_") && Contains("2 or more dimensions"));
  CHECK_THROWS_WITH(nn::init::trunc_normal_(empty({4}), 0.0, 1.0, 2.0, -2.0), Contains("trunc_normal_") && Contains("a < b"));
  CHECK_THROWS_WITH(nn::init::trunc_normal_(empty({4}, DType::I64)), Contains("floating point"));
}

TEST_CASE("sparse_: ceil(sparsity * rows) zeros in every column, the rest N(0, std^2)", "[nn][init]") {
  Generator gen(9);
  Tensor w = empty({200, 50});
  nn::init::sparse_(w, 0.1, 0.5, &gen);
  const std::vector<float> v = w.to_vector<float>();
  double sum_sq = 0;
  int64_t kept = 0;
  for (int64_t c = 0; c < 50; ++c) {
    int64_t zeros_here = 0;
    for (int64_t r = 0; r < 200; ++r) {
      const float x = v[static_cast<size_t>(r * 50 + c)];
      if (x == 0.0f) ++zeros_here;
      else sum_sq += static_cast<double>(x) * x, ++kept;
    }
    CHECK(zeros_here == 20);
  }
  // The sample standard deviation of 9000 normal draws: within 5% of 0.5 (its own spread is ~0.75%).
  CHECK(std::sqrt(sum_sq / static_cast<double>(kept)) == Approx(0.5).epsilon(0.05));
  // The zeros fall on different rows in different columns, and a generator's seed repeats them.
  Generator again(9);
  Tensor w2 = empty({200, 50});
  nn::init::sparse_(w2, 0.1, 0.5, &again);
  CHECK(testing::max_abs_diff(w, w2) == 0.0);
  CHECK(testing::max_abs_diff(eq(w.select(1, 0), 0.0).to(DType::F32), eq(w.select(1, 1), 0.0).to(DType::F32)) > 0.0);
  CHECK_THROWS_WITH(nn::init::sparse_(empty({3, 4, 5}), 0.1), Contains("sparse_: Only tensors with 2 dimensions are supported"));
  CHECK_THROWS_WITH(nn::init::sparse_(empty({3, 4}), 1.5), Contains("sparsity must be in [0, 1]"));
}
