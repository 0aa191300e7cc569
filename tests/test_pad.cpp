// pad (torch.nn.functional.pad) against PyTorch 1.13's values, gradients and refusals; the f64
// finite-difference checks of every mode are rows of test_gradcheck.cpp.
#include <catch2/catch.hpp>

#include "gradcheck.h"
#include "nn/functional.h"

using namespace minidl;
using Catch::Contains;

namespace {
std::vector<double> values(const Tensor& t) { return t.to(DType::F64).contiguous().to_vector<double>(); }
Tensor x23() { return arange(6.0, DType::F64).reshape({1, 2, 3}); }
}  // namespace

TEST_CASE("pad matches F.pad in every mode, negative pads crop first", "[pad][parity]") {
  // x = torch.arange(6.).reshape(1, 2, 3); F.pad(x, p, mode=m).tolist()
  struct Case {
    PadMode mode;
    std::vector<int64_t> pads;
    std::vector<double> expected;
  };
  const std::vector<Case> cases = {
      {PadMode::Constant, {1, 2}, {0, 0, 1, 2, 0, 0, 0, 3, 4, 5, 0, 0}},
      {PadMode::Constant, {-1, 1}, {1, 2, 0, 4, 5, 0}},
      {PadMode::Constant, {1, -1}, {0, 0, 1, 0, 3, 4}},
      {PadMode::Reflect, {1, 2}, {1, 0, 1, 2, 1, 0, 4, 3, 4, 5, 4, 3}},
      {PadMode::Reflect, {2, 2}, {2, 1, 0, 1, 2, 1, 0, 5, 4, 3, 4, 5, 4, 3}},
      {PadMode::Reflect, {-1, 1}, {1, 2, 1, 4, 5, 4}},
      {PadMode::Reflect, {1, -1}, {1, 0, 1, 4, 3, 4}},
      {PadMode::Replicate, {1, 2}, {0, 0, 1, 2, 2, 2, 3, 3, 4, 5, 5, 5}},
      {PadMode::Replicate, {3, 0}, {0, 0, 0, 0, 1, 2, 3, 3, 3, 3, 4, 5}},
      {PadMode::Replicate, {-1, 1}, {1, 2, 2, 4, 5, 5}},
      {PadMode::Circular, {1, 2}, {2, 0, 1, 2, 0, 1, 5, 3, 4, 5, 3, 4}},
      {PadMode::Circular, {3, 0}, {0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}},
      {PadMode::Circular, {-1, 1}, {1, 2, 1, 4, 5, 4}},
      {PadMode::Circular, {1, -1}, {1, 0, 1, 4, 3, 4}},
  };
  for (const Case& c : cases) {
    INFO("mode " << static_cast<int>(c.mode) << " pads " << c.pads[0] << ", " << c.pads[1]);
    Tensor y = pad(x23(), c.pads, c.mode);
    CHECK(y.shape() == Shape{1, 2, static_cast<int64_t>(c.expected.size() / 2)});
    CHECK(values(y) == c.expected);
  }
  // Two dims: x4 = torch.arange(12.).reshape(1, 1, 3, 4); F.pad(x4, (1, 2, 2, 1), mode=m)
  Tensor x4 = arange(12.0, DType::F32).reshape({1, 1, 3, 4});
  CHECK(values(pad(x4, {1, 2, 2, 1}, PadMode::Reflect)) ==
        std::vector<double>{9, 8, 9, 10, 11, 10, 9, 5, 4, 5, 6, 7, 6, 5, 1, 0, 1, 2, 3, 2, 1,
                            5, 4, 5, 6, 7, 6, 5, 9, 8, 9, 10, 11, 10, 9, 5, 4, 5, 6, 7, 6, 5});
  CHECK(values(pad(x4, {1, 2, 2, 1}, PadMode::Replicate)) ==
        std::vector<double>{0, 0, 1, 2, 3, 3, 3, 0, 0, 1, 2, 3, 3, 3, 0, 0, 1, 2, 3, 3, 3,
                            4, 4, 5, 6, 7, 7, 7, 8, 8, 9, 10, 11, 11, 11, 8, 8, 9, 10, 11, 11, 11});
  CHECK(values(pad(x4, {1, 2, 2, 1}, PadMode::Circular)) ==
        std::vector<double>{7, 4, 5, 6, 7, 4, 5, 11, 8, 9, 10, 11, 8, 9, 3, 0, 1, 2, 3, 0, 1,
                            7, 4, 5, 6, 7, 4, 5, 11, 8, 9, 10, 11, 8, 9, 3, 0, 1, 2, 3, 0, 1});
  // Constant: any rank, the value converted as fill_ (2.7 -> 2 in i64), dtype kept.
  CHECK(values(pad(arange(4.0, DType::F32).reshape({2, 2}), {1, 1, 1, 1}, PadMode::Constant, 7)) ==
        std::vector<double>{7, 7, 7, 7, 7, 0, 1, 7, 7, 2, 3, 7, 7, 7, 7, 7});
  Tensor ints = pad(ones({2, 3}, DType::I64), {1, 1}, PadMode::Constant, 2.7);
  CHECK(ints.dtype() == DType::I64);
  CHECK(ints.to_vector<int64_t>() == std::vector<int64_t>{2, 1, 1, 1, 2, 2, 1, 1, 1, 2});
  CHECK(pad(ones({2, 3}), {-3, 0}).shape() == Shape{2, 0});
  CHECK(pad(ones({1, 0, 3}), {1, 1}).shape() == Shape{1, 0, 5});
  // Rank rules of the non-constant modes: reflect of (1, 1) on [2, 3] pads the last dim; 3 dims on 5-D.
  CHECK(pad(ones({2, 3}), {1, 1}, PadMode::Reflect).shape() == Shape{2, 5});
  CHECK(pad(ones({1, 1, 2, 3, 4}), {1, 1, 1, 1, 1, 1}, PadMode::Replicate).shape() == Shape{1, 1, 4, 5, 6});
  // NaN travels with its element: F.pad([[[1, nan]]], (1, 1), mode='reflect') -> [nan, 1, nan, 1]
  Tensor with_nan = pad(from_vector<double>({1, std::nan("")}, {1, 1, 2}), {1, 1}, PadMode::Reflect);
  const std::vector<double> v = values(with_nan);
  CHECK((std::isnan(v[0]) && v[1] == 1 && std::isnan(v[2]) && v[3] == 1));
  // The result is a new tensor even when nothing pads.
  Tensor x = x23();
  Tensor same = pad(x, {0, 0});
  CHECK(values(same) == values(x));
  CHECK(same.impl()->storage != x.impl()->storage);
  // The functional form takes PyTorch's mode names.
  CHECK(values(nn::functional::pad(x, {1, 2}, "circular")) == values(pad(x, {1, 2}, PadMode::Circular)));
}

TEST_CASE("pad's gradients match PyTorch's", "[pad][parity]") {
  // x = torch.arange(6.).reshape(1,2,3).requires_grad_(); y = F.pad(x, (2, 1), mode=m)
  // (y * torch.arange(12.).reshape(1, 2, 6)).sum().backward(); x.grad
  const std::vector<std::pair<PadMode, std::vector<double>>> cases = {
      {PadMode::Reflect, {2, 9, 4, 8, 27, 16}},
      {PadMode::Replicate, {3, 3, 9, 21, 9, 21}},
      {PadMode::Circular, {7, 3, 5, 19, 15, 17}},
  };
  for (const auto& [mode, expected] : cases) {
    Tensor x = x23().requires_grad_();
    mul(pad(x, {2, 1}, mode), arange(12.0, DType::F64).reshape({1, 2, 6})).sum().backward();
    CHECK(values(x.grad()) == expected);
  }
}

TEST_CASE("pad refuses what F.pad refuses, naming the problem", "[pad][errors]") {
  CHECK_THROWS_WITH(pad(ones({2, 3}), {1}), Contains("pad") && Contains("divisible by 2"));
  CHECK_THROWS_WITH(pad(ones({2, 2}), {1, 1, 1, 1, 1, 0}), Contains("padding length too large"));
  CHECK_THROWS_WITH(pad(ones({2, 3}), {-2, -2}), Contains("negative size"));
  CHECK_THROWS_WITH(pad(ones({1, 2, 3}), {3, 0}, PadMode::Reflect), Contains("smaller than dim 2 of size 3"));
  CHECK_THROWS_WITH(pad(ones({1, 2, 3}), {4, 1}, PadMode::Circular), Contains("more than once"));
  CHECK_THROWS_WITH(pad(ones({1, 2, 0}), {1, 1}, PadMode::Replicate), Contains("non-empty"));
  CHECK_THROWS_WITH(pad(ones({3}), {1, 1}, PadMode::Reflect), Contains("needs a 2-D (unbatched) or 3-D input"));
  CHECK_THROWS_WITH(pad(ones({1, 1, 2, 3}), {1, 1}, PadMode::Replicate), Contains("needs a 2-D"));
  CHECK_THROWS_WITH(pad(ones({2, 3}), {1, 1, 1, 1}, PadMode::Reflect), Contains("needs a 3-D"));
  CHECK_THROWS_WITH(pad(ones({1, 2, 3}), {1, 1}, PadMode::Reflect, 2.0), Contains("doesn't take a value"));
  CHECK_THROWS_WITH(nn::functional::pad(ones({1, 2, 3}), {1, 1}, "bogus"), Contains("unrecognised padding mode 'bogus'"));
  CHECK_THROWS_WITH(pad(Tensor(), {1, 1}), Contains("pad"));
}

TEST_CASE("pad under CPU autocast: reflect and replicate run in f32, as PyTorch's fp32 list says", "[pad][amp]") {
  // torch 1.13, autocast('cpu', bfloat16), F.pad(x, (1, 1, 1, 1), mode): reflect and replicate give
  // f32 for a bf16 input; constant and circular keep bf16, and leave an f32 input f32.
  Tensor x = ones({1, 2, 3, 4});
  Tensor xb = x.to(DType::BF16);
  amp::autocast scope(DeviceType::CPU);
  const std::vector<int64_t> four = {1, 1, 1, 1};
  CHECK(pad(xb, four, PadMode::Reflect).dtype() == DType::F32);
  CHECK(pad(xb, four, PadMode::Replicate).dtype() == DType::F32);
  CHECK(pad(xb.select(0, 0), {1, 1}, PadMode::Replicate).dtype() == DType::F32);
  CHECK(pad(xb, four, PadMode::Constant).dtype() == DType::BF16);
  CHECK(pad(x.select(0, 0).to(DType::BF16), four, PadMode::Circular).dtype() == DType::BF16);
  CHECK(pad(x, four, PadMode::Reflect).dtype() == DType::F32);
  CHECK(pad(x, four, PadMode::Constant).dtype() == DType::F32);
  // reflection_pad3d is on no list: a bf16 input stays bf16.
  CHECK(pad(ones({1, 1, 3, 3, 3}).to(DType::BF16), {1, 1, 1, 1, 1, 1}, PadMode::Reflect).dtype() == DType::BF16);
  // The f32 result's gradient reaches the bf16 input in bf16.
  Tensor leaf = xb.clone().requires_grad_(true);
  Tensor y = pad(leaf, four, PadMode::Reflect);
  CHECK(y.grad_fn()->amp.policy == "fp32");
  y.sum().backward();
  REQUIRE(leaf.grad().dtype() == DType::BF16);
  CHECK(leaf.grad().to(DType::F32).sum().item() == Approx(static_cast<double>(y.numel())));
}
