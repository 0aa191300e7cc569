// nonzero, masked_select, bincount and unique (ops/selection.cpp) against torch 1.13 (the literals
// are what it printed for the same inputs): order, shapes of 0-dim and empty inputs, NaN,
// broadcasting, dtypes, gradients through masked_select, errors, and CUDA against the CPU.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "cuda_checks.h"
#include "gradcheck.h"

using namespace minidl;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
std::vector<int64_t> ints(const Tensor& t) { return t.to_vector<int64_t>(); }
}  // namespace

TEST_CASE("nonzero gives row-major coordinates as torch's; NaN is nonzero; 0-dim and empty inputs", "[selection]") {
  const Tensor x = from_vector<double>({0, 1, 2, 3, 0, kNaN}, {2, 3});
  const Tensor nz = nonzero(x);
  CHECK(nz.dtype() == DType::I64);
  CHECK(nz.shape() == Shape{4, 2});
  CHECK(ints(nz) == std::vector<int64_t>{0, 1, 0, 2, 1, 0, 1, 2});
  CHECK(nonzero(scalar_tensor(5.0)).shape() == Shape{1, 0});
  CHECK(nonzero(scalar_tensor(0.0)).shape() == Shape{0, 0});
  CHECK(nonzero(zeros({2, 0})).shape() == Shape{0, 2});
  CHECK(ints(nonzero(from_vector<bool>({false, true, true}))) == std::vector<int64_t>{1, 2});
  // A larger 3-D case against a plain scan.
  const Tensor r = gt(randn({3, 5, 7}), 0.3);
  const std::vector<double> v = r.to_vector<double>();
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 105; ++i)
    if (v[i] != 0) want.insert(want.end(), {i / 35, (i / 7) % 5, i % 7});
  CHECK(ints(nonzero(r)) == want);
}

TEST_CASE("masked_select broadcasts, keeps order and passes gradients back", "[selection]") {
  const Tensor x = from_vector<double>({0, 1, 2, 3, 0, kNaN}, {2, 3});
  CHECK(masked_select(x, gt(x, 1.0)).to_vector<double>() == std::vector<double>{2, 3});
  CHECK(masked_select(arange(3, DType::F32), from_vector<bool>({true, false}, {2, 1})).to_vector<double>() ==
        std::vector<double>{0, 1, 2});
  CHECK_THROWS_WITH(masked_select(x, ones({2, 3})), Catch::Contains("masked_select") && Catch::Contains("expected BoolTensor for mask"));
  CHECK_THROWS_WITH(masked_select(x, ones({4}, DType::Bool)), Catch::Contains("masked_select"));
  Tensor w = from_vector<double>({1, 2, 3, 4}).requires_grad_();
  sum(mul(masked_select(w, from_vector<bool>({true, false, true, false})), from_vector<double>({10, 20}))).backward();
  CHECK(w.grad().to_vector<double>() == std::vector<double>{10, 0, 20, 0});
  const std::vector<Tensor> in = {from_vector<double>({0.3, -1.2, 2.0, 0.7, -0.1, 1.5}, {2, 3}).requires_grad_()};
  auto fn = [](const std::vector<Tensor>& t) {
    Tensor s = masked_select(t[0], from_vector<bool>({true, false, true}));
    return mul(s, s);
  };
  CHECK(testing::check_gradients(fn, in, 1e-6, 1e-6) == "");
  CHECK(testing::check_second_order(fn, in, 1e-6, 1e-5) == "");
}

TEST_CASE("bincount counts and sums weights as torch's", "[selection]") {
  const Tensor x = from_vector<int64_t>({1, 3, 3});
  CHECK(ints(bincount(x)) == std::vector<int64_t>{0, 1, 0, 2});
  CHECK(ints(bincount(x, Tensor(), 6)) == std::vector<int64_t>{0, 1, 0, 2, 0, 0});
  const Tensor wf = bincount(x, from_vector<double>({0.5, 1.0, 2.0}).to(DType::F32));
  CHECK(wf.dtype() == DType::F32);
  CHECK(wf.to_vector<double>() == std::vector<double>{0, 0.5, 0, 3});
  CHECK(bincount(x, from_vector<int64_t>({1, 2, 3})).dtype() == DType::F64);
  // f16 weights sum in f64 (PyTorch's kernels keep only f32), so counts past 2048 stay exact.
  const Tensor many = zeros({3000}, DType::I64);
  const Tensor w16 = bincount(many, ones({3000}, DType::F16));
  CHECK(w16.dtype() == DType::F64);
  CHECK(w16.to_vector<double>() == std::vector<double>{3000});
  CHECK(bincount(from_vector<uint8_t>({1, 3, 3})).dtype() == DType::I64);
  CHECK(bincount(from_vector<int64_t>({})).shape() == Shape{0});
  CHECK_THROWS_WITH(bincount(from_vector<int64_t>({-1})), Catch::Contains("bincount only supports 1-d non-negative integral inputs"));
  CHECK_THROWS_WITH(bincount(from_vector<int64_t>({1}, {1, 1})), Catch::Contains("bincount only supports 1-d non-negative integral inputs"));
  CHECK_THROWS_WITH(bincount(from_vector<double>({1})), Catch::Contains("bincount only supports 1-d non-negative integral inputs"));
}

TEST_CASE("unique gives the sorted values, the inverse and the counts as torch's", "[selection]") {
  auto [values, inverse, counts] = unique(from_vector<int64_t>({3, 1, 2, 3, 1, 5}));
  CHECK(ints(values) == std::vector<int64_t>{1, 2, 3, 5});
  CHECK(ints(inverse) == std::vector<int64_t>{2, 0, 1, 2, 0, 3});
  CHECK(ints(counts) == std::vector<int64_t>{2, 1, 2, 1});
  auto two_d = unique(from_vector<int64_t>({1, 2, 2, 1}, {2, 2}));
  CHECK(two_d.values.shape() == Shape{2});
  CHECK(two_d.inverse.shape() == Shape{2, 2});
  CHECK(ints(two_d.inverse) == std::vector<int64_t>{0, 1, 1, 0});
  // NaNs sort last and each is its own value (torch 1.13's CPU kernel places them differently).
  const std::vector<double> nan_values = unique(from_vector<double>({2.0, kNaN, 1.0, kNaN})).values.to_vector<double>();
  REQUIRE(nan_values.size() == 4);
  CHECK(nan_values[0] == 1.0);
  CHECK(nan_values[1] == 2.0);
  CHECK((std::isnan(nan_values[2]) && std::isnan(nan_values[3])));
  CHECK(unique(zeros({0})).values.shape() == Shape{0});
}

TEST_CASE("cuda: nonzero, masked_select, bincount and unique agree with the CPU", "[cuda][selection]") {
  using namespace minidl::cuda_test;
  MINIDL_REQUIRE_GPU();
  const Tensor x = randn({4, 33});
  const Tensor mask = gt(x, 0.2);
  check_equal(nonzero(x.to(kCuda)).to(Device::cpu()), nonzero(x), "nonzero");
  check_equal(masked_select(x.to(kCuda), mask.to(kCuda)).to(Device::cpu()), masked_select(x, mask), "masked_select");
  const Tensor ix = randint(0, 9, {50});
  check_equal(bincount(ix.to(kCuda)).to(Device::cpu()), bincount(ix), "bincount");
  const UniqueResult h = unique(ix), d = unique(ix.to(kCuda));
  check_equal(d.values.to(Device::cpu()), h.values, "unique values");
  check_equal(d.inverse.to(Device::cpu()), h.inverse, "unique inverse");
  check_equal(d.counts.to(Device::cpu()), h.counts, "unique counts");
}
