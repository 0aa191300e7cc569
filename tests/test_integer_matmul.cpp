// mm / bmm / matmul on integer tensors on CPU, as PyTorch: exact products in the integer type
// (checked against plain loops, with values whose products no double holds exactly), and the
// refusals PyTorch makes too (bool, mixed dtypes).
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>

#include "minidl.h"

using namespace minidl;

namespace {
template <class T>
std::vector<T> random_ints(size_t n, int64_t lo, int64_t hi, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(d(gen));
  return v;
}

// c[m x n] = a[m x k] b[k x n] in T's own arithmetic (unsigned wraps like the kernel's).
template <class T>
std::vector<T> ref_mm(const std::vector<T>& a, const std::vector<T>& b, int64_t m, int64_t k, int64_t n) {
  std::vector<T> c(static_cast<size_t>(m * n), T(0));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t p = 0; p < k; ++p) acc = static_cast<T>(acc + static_cast<T>(a[i * k + p] * b[p * n + j]));
      c[i * n + j] = acc;
    }
  return c;
}
}  // namespace

TEST_CASE("mm on i64 is exact, past what a double holds", "[ops][linear][integer]") {
  const int64_t m = 37, k = 29, n = 41;  // odd sizes: the kernel's edge tiles
  // |a*b| up to 2^60 / 32: sums of 29 such products exceed 2^53, so a floating path would round.
  auto a = random_ints<int64_t>(m * k, -(int64_t(1) << 27), int64_t(1) << 27, 1);
  auto b = random_ints<int64_t>(k * n, -(int64_t(1) << 27), int64_t(1) << 27, 2);
  Tensor c = mm(from_vector(a, {m, k}), from_vector(b, {k, n}));
  CHECK(c.dtype() == DType::I64);
  CHECK(c.to_vector<int64_t>() == ref_mm(a, b, m, k, n));
  // A transposed operand (a view with non-unit inner stride) gives the same product.
  Tensor bt = from_vector(b, {k, n}).t().contiguous().t();
  CHECK(mm(from_vector(a, {m, k}), bt).to_vector<int64_t>() == ref_mm(a, b, m, k, n));
}

TEST_CASE("mm, bmm and matmul on i32 and u8 follow PyTorch", "[ops][linear][integer]") {
  auto a = random_ints<int32_t>(6 * 5, -1000, 1000, 3), b = random_ints<int32_t>(5 * 4, -1000, 1000, 4);
  CHECK(mm(from_vector(a, {6, 5}), from_vector(b, {5, 4})).to_vector<int32_t>() == ref_mm(a, b, 6, 5, 4));
  // u8 wraps modulo 256, as PyTorch's uint8 mm.
  auto ua = random_ints<uint8_t>(3 * 7, 0, 255, 5), ub = random_ints<uint8_t>(7 * 2, 0, 255, 6);
  Tensor uc = mm(from_vector(ua, {3, 7}), from_vector(ub, {7, 2}));
  CHECK(uc.dtype() == DType::U8);
  CHECK(uc.to_vector<uint8_t>() == ref_mm(ua, ub, 3, 7, 2));
  // matmul: vector-vector, batched with broadcasting.
  Tensor v = from_vector<int64_t>({1, 2, 3}), w = from_vector<int64_t>({4, -5, 6});
  CHECK(matmul(v, w).item_int() == 12);
  auto x = random_ints<int64_t>(2 * 3 * 4, -50, 50, 7), y = random_ints<int64_t>(4 * 5, -50, 50, 8);
  Tensor batched = matmul(from_vector(x, {2, 3, 4}), from_vector(y, {4, 5}));
  CHECK(batched.shape() == Shape{2, 3, 5});
  std::vector<int64_t> first(x.begin(), x.begin() + 12);
  std::vector<int64_t> got = batched.select(0, 0).contiguous().to_vector<int64_t>();
  CHECK(got == ref_mm(first, y, 3, 4, 5));
  Tensor bb = bmm(from_vector(x, {2, 3, 4}), from_vector(y, {4, 5}).unsqueeze(0).expand({2, 4, 5}).contiguous());
  CHECK(bb.to_vector<int64_t>() == batched.to_vector<int64_t>());
}

TEST_CASE("integer products still refuse what PyTorch refuses", "[ops][linear][integer][errors]") {
  Tensor i = from_vector<int64_t>({1, 2, 3, 4}, {2, 2});
  CHECK_THROWS_WITH(mm(i, ones({2, 2})), Catch::Contains("mm") && Catch::Contains("same dtype"));
  Tensor bools = from_vector<bool>({true, false, true, true}, {2, 2});
  CHECK_THROWS_WITH(mm(bools, bools), Catch::Contains("mm") && Catch::Contains("floating point tensor or an integer one"));
  // Under autocast an integer product is not cast (only floating tensors are eligible).
  amp::autocast scope(DeviceType::CPU);
  CHECK(mm(i, i).dtype() == DType::I64);
  CHECK(mm(i, i).to_vector<int64_t>() == std::vector<int64_t>{7, 10, 15, 22});
}
