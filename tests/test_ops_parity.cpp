// Edge cases of the tensor ops checked against PyTorch's documented behaviour (torch.clamp,
// bool arithmetic, integer abs/sign, view of non-contiguous tensors, cat/chunk of empty tensors,
// 0-dim dims, NaN and empty inputs in reductions and softmax). Expected values are exact.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "minidl.h"

using namespace minidl;
using Catch::Contains;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
Tensor f64(const std::vector<double>& v) { return from_vector(v); }
Tensor i64(const std::vector<int64_t>& v) { return from_vector(v); }
Tensor bools(const std::vector<bool>& v) { return from_vector(v); }
}  // namespace

TEST_CASE("clamp with min above max sets every element to max and keeps NaN", "[parity][clamp]") {
  for (DType dt : {DType::F32, DType::F64}) {
    Tensor x = f64({-1, 0.5, 3, kNaN}).to(dt).requires_grad_();
    Tensor y = clamp(x, 2.0, 1.0);
    std::vector<double> v = y.to(DType::F64).to_vector<double>();
    CHECK(v[0] == 1.0);
    CHECK(v[1] == 1.0);
    CHECK(v[2] == 1.0);
    CHECK(std::isnan(v[3]));
    // The gradient mask is min <= x <= max, empty here, as PyTorch.
    sum(mul(y, f64({1, 1, 1, 0}).to(dt))).backward();
    CHECK(x.grad().to(DType::F64).to_vector<double>() == std::vector<double>{0, 0, 0, 0});
  }
  CHECK(clamp(f64({5, -5}), 0.0, 0.0).to_vector<double>() == std::vector<double>{0, 0});
}

TEST_CASE("add and maximum of two bool tensors are a logical or, mul and minimum a logical and, true division works", "[parity][bool]") {
  Tensor a = bools({true, true, false, false}), b = bools({true, false, true, false});
  const std::vector<bool> any{true, true, true, false}, both{true, false, false, false};
  for (const Tensor& r : {add(a, b), maximum(a, b)}) {
    CHECK(r.dtype() == DType::Bool);
    CHECK(r.to_vector<bool>() == any);
  }
  for (const Tensor& r : {mul(a, b), minimum(a, b)}) {
    CHECK(r.dtype() == DType::Bool);
    CHECK(r.to_vector<bool>() == both);
  }
  CHECK(add(bools({true}), bools({true, false})).to_vector<bool>() == std::vector<bool>{true, true});  // broadcast
  CHECK_THROWS_WITH(pow(a, b), Contains("pow") && Contains("bool"));
  CHECK_THROWS_WITH(add(a, b, 2.0), Contains("add") && Contains("bool"));
  // True division gives floats: 1/1, 1/0, 0/1, 0/0.
  Tensor qt = div(a, b);
  CHECK(qt.dtype() == DType::F32);
  std::vector<float> q = qt.to_vector<float>();
  CHECK(q[0] == 1.0f);
  CHECK(q[1] == std::numeric_limits<float>::infinity());
  CHECK(q[2] == 0.0f);
  CHECK(std::isnan(q[3]));
  // A number lifts bool to i64 (integral) or f32.
  CHECK(add(a, 1).dtype() == DType::I64);
  CHECK(add(a, 1).to_vector<int64_t>() == std::vector<int64_t>{2, 2, 1, 1});
  CHECK(mul(a, 0.5).to_vector<float>() == std::vector<float>{0.5f, 0.5f, 0, 0});
}

TEST_CASE("subtraction and negation of bool tensors are errors, as PyTorch", "[parity][bool]") {
  Tensor a = bools({true, false});
  CHECK_THROWS_WITH(sub(a, a), Contains("sub") && Contains("bool"));
  CHECK_THROWS_WITH(sub(a, i64({1, 1})), Contains("sub") && Contains("bool"));
  CHECK_THROWS_WITH(sub(ones({2}), a), Contains("sub") && Contains("bool"));
  CHECK_THROWS_WITH(sub(a, 1.0), Contains("sub") && Contains("bool"));
  CHECK_THROWS_WITH(rsub(a, 1.0), Contains("rsub") && Contains("bool"));
  CHECK_THROWS_WITH(1.0 - a, Contains("rsub") && Contains("bool"));
  CHECK_THROWS_WITH(neg(a), Contains("neg") && Contains("bool"));
  CHECK_THROWS_WITH(-a, Contains("neg") && Contains("bool"));
  // The same with an integer tensor works and stays i64.
  CHECK(sub(i64({3, 1}), i64({1, 1})).to_vector<int64_t>() == std::vector<int64_t>{2, 0});
}

TEST_CASE("a number minus a tensor is +0 where they are equal, as PyTorch", "[parity][binary]") {
  // torch 1.13: 1 - tensor([1.]) is tensor([0.]), and 1 / (1 - x) is +inf.
  const Tensor x = from_vector<float>({1.0f, 0.0f, -2.5f});
  const std::vector<float> d = rsub(x, 1.0).to_vector<float>();
  CHECK(d == std::vector<float>{0.0f, 1.0f, 3.5f});
  CHECK_FALSE(std::signbit(d[0]));
  CHECK(div(ones({3}), 1.0 - x).to_vector<float>()[0] == INFINITY);
  CHECK_FALSE(std::signbit((0.0 - zeros({1})).to_vector<float>()[0]));
  // Integers keep their dtype with an integral number and become f32 with a fraction, without
  // wrapping first: 2.5 - uint8(3) = -0.5, as PyTorch.
  const Tensor u = from_vector<int64_t>({3, 0}).to(DType::U8);
  CHECK(rsub(u, 1.0).dtype() == DType::U8);
  CHECK(rsub(u, 1.0).to_vector<uint8_t>() == std::vector<uint8_t>{254, 1});
  CHECK(rsub(u, 2.5).to_vector<float>() == std::vector<float>{-0.5f, 2.5f});
  CHECK(rsub(i64({3, -4}), 1.0).to_vector<int64_t>() == std::vector<int64_t>{-2, 5});
}

TEST_CASE("abs and sign keep integer dtypes and abs of the most negative i64 wraps", "[parity][unary]") {
  const int64_t lo = std::numeric_limits<int64_t>::min();
  Tensor a = abs(i64({-3, 0, 5, lo}));
  CHECK(a.dtype() == DType::I64);
  CHECK(a.to_vector<int64_t>() == std::vector<int64_t>{3, 0, 5, lo});
  CHECK(abs(from_vector<int32_t>({-7, 7})).to_vector<int32_t>() == std::vector<int32_t>{7, 7});
  CHECK(abs(from_vector<uint8_t>({200})).to_vector<uint8_t>() == std::vector<uint8_t>{200});
  Tensor s = sign(i64({-9, 0, 4}));
  CHECK(s.dtype() == DType::I64);
  CHECK(s.to_vector<int64_t>() == std::vector<int64_t>{-1, 0, 1});
  CHECK(sign(from_vector<uint8_t>({0, 3})).to_vector<uint8_t>() == std::vector<uint8_t>{0, 1});
  CHECK(sign(bools({true, false})).dtype() == DType::Bool);
  CHECK(sign(bools({true, false})).to_vector<bool>() == std::vector<bool>{true, false});
  CHECK_THROWS_WITH(abs(bools({true})), Contains("abs") && Contains("bool"));
  // Floating inputs are unchanged.
  CHECK(abs(f64({-2.5, 0})).to_vector<double>() == std::vector<double>{2.5, 0});
  CHECK(sign(f64({-2.5, 0, 3})).to_vector<double>() == std::vector<double>{-1, 0, 1});
  // neg of u8 wraps modulo 256, as PyTorch.
  CHECK(neg(from_vector<uint8_t>({3, 0})).to_vector<uint8_t>() == std::vector<uint8_t>{253, 0});
}

TEST_CASE("view of a non-contiguous tensor works where its strides allow it", "[parity][view]") {
  Tensor x = arange(0, 24, 1, DType::F32).reshape({2, 3, 4});
  Tensor y = x.transpose(0, 1);  // [3, 2, 4], strides [4, 12, 1]
  REQUIRE_FALSE(y.is_contiguous());
  Tensor v = y.view({3, 2, 2, 2});  // splits the contiguous last dim
  CHECK(v.strides() == Shape{4, 12, 2, 1});
  CHECK(v.to_vector<float>() == y.contiguous().to_vector<float>());
  {
    NoGradGuard ng;
    v.select(0, 2).fill_(-1.0);  // writes through to x
  }
  CHECK(x.to_vector<float>()[8] == -1.0f);
  CHECK(y.view({3, 1, 2, 4}).to_vector<float>() == y.contiguous().to_vector<float>());
  CHECK_THROWS_WITH(y.view({3, 8}), Contains("view") && Contains("reshape"));
  CHECK_THROWS_WITH(y.view({6, 4}), Contains("view") && Contains("reshape"));
  CHECK(y.reshape({6, 4}).to_vector<float>() == y.contiguous().to_vector<float>());
  // Expanded dims keep their zero stride; merging one with another dim needs a copy.
  Tensor e = arange(0, 3, 1, DType::F32).reshape({1, 3}).expand({4, 3});
  Tensor ev = e.view({4, 3, 1});
  CHECK(ev.stride(0) == 0);
  CHECK(ev.to_vector<float>() == e.contiguous().to_vector<float>());
  CHECK_THROWS_WITH(e.view({12}), Contains("view"));
  // Sliced with a step: the last dim keeps its stride.
  Tensor s = arange(0, 12, 1, DType::F32).reshape({3, 4}).slice(1, 0, 4, 2);  // [3, 2], strides [4, 2]
  CHECK(s.view({3, 2, 1}).to_vector<float>() == std::vector<float>{0, 2, 4, 6, 8, 10});
  CHECK(s.view({6}).to_vector<float>() == std::vector<float>{0, 2, 4, 6, 8, 10});
  CHECK(s.view({6}).stride(0) == 2);
}

TEST_CASE("view, squeeze, expand and flatten edge cases", "[parity][view]") {
  Tensor x = zeros({2, 3});
  CHECK(x.squeeze(0).shape() == Shape{2, 3});  // not size 1: unchanged
  CHECK(x.expand({4, -1, -1}).shape() == Shape{4, 2, 3});
  CHECK_THROWS_WITH(x.expand({-1, 2, 3}), Contains("expand"));
  CHECK(scalar_tensor(2.0).flatten().shape() == Shape{1});
  CHECK(zeros({2, 1, 3}).unsqueeze(-1).shape() == Shape{2, 1, 3, 1});
  CHECK(zeros({2, 0}).view({0, 5}).shape() == Shape{0, 5});
  CHECK(zeros({2, 3}).permute({-1, 0}).shape() == Shape{3, 2});
}

TEST_CASE("0-dim tensors accept dims 0 and -1 only in squeeze and transpose", "[parity][view]") {
  Tensor s = scalar_tensor(3.0);
  CHECK(s.squeeze(0).dim() == 0);
  CHECK(s.squeeze(-1).dim() == 0);
  CHECK_THROWS_WITH(s.squeeze(1), Contains("squeeze") && Contains("dim 1"));
  CHECK(s.transpose(0, -1).dim() == 0);
  CHECK_THROWS_WITH(s.transpose(0, 1), Contains("transpose") && Contains("dim 1"));
  CHECK(s.unsqueeze(-1).shape() == Shape{1});
}

TEST_CASE("cat promotes over every tensor, skipped empty 1-D ones included", "[parity][join]") {
  Tensor c = cat({ones({2, 2}, DType::I64), zeros({0})});
  CHECK(c.dtype() == DType::F32);
  CHECK(c.shape() == Shape{2, 2});
  CHECK(c.to_vector<float>() == std::vector<float>{1, 1, 1, 1});
  Tensor e = cat({zeros({0}, DType::I64), zeros({0}, DType::F64)});
  CHECK(e.dtype() == DType::F64);
  CHECK(e.shape() == Shape{0});
  CHECK(cat({i64({1}), zeros({0}, DType::I64), i64({2, 3})}).to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3});
  CHECK(cat({zeros({2, 3}), ones({2, 1})}, -1).shape() == Shape{2, 4});
  CHECK(stack({zeros({2}), ones({2})}, -1).to_vector<float>() == std::vector<float>{0, 1, 0, 1});
}

TEST_CASE("chunk of an empty dim gives the requested number of empty pieces", "[parity][join]") {
  std::vector<Tensor> parts = chunk(zeros({0, 2}), 3);
  REQUIRE(parts.size() == 3);
  for (const Tensor& p : parts) CHECK(p.shape() == Shape{0, 2});
  CHECK_FALSE(parts[0].is_same(parts[1]));
  CHECK(chunk(zeros({3}), 5).size() == 3);  // fewer chunks than asked, as torch.chunk
  CHECK(chunk(zeros({13}), 6).size() == 5);
  CHECK(split(zeros({0}), 2).size() == 1);
}

TEST_CASE("integer true division by zero gives inf and NaN, comparisons give bool", "[parity][binary]") {
  std::vector<float> q = div(i64({1, -1, 0}), i64({0, 0, 0})).to_vector<float>();
  CHECK(q[0] == std::numeric_limits<float>::infinity());
  CHECK(q[1] == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(q[2]));
  CHECK(eq(bools({true, false}), bools({true, true})).to_vector<bool>() == std::vector<bool>{true, false});
  CHECK(lt(i64({1, 2}), from_vector<float>({1.5f, 1.5f})).to_vector<bool>() == std::vector<bool>{true, false});
  CHECK(add(i64({1}), ones({1})).dtype() == DType::F32);
  CHECK(add(scalar_tensor(1.0, DType::F64), ones({1})).dtype() == DType::F32);
  CHECK(add(ones({1}, DType::F16), ones({1}, DType::BF16)).dtype() == DType::F32);
  CHECK(where(bools({true, false}), bools({true, true}), i64({5, 6})).to_vector<int64_t>() == std::vector<int64_t>{1, 6});
}

TEST_CASE("pow edge cases: 0^0 is 1, negative base with a fractional exponent is NaN", "[parity][binary]") {
  CHECK(pow(f64({0, 2}), f64({0, 0})).to_vector<double>() == std::vector<double>{1, 1});
  CHECK(pow(f64({0}), 0.0).item() == 1.0);
  CHECK(pow(i64({0}), i64({0})).to_vector<int64_t>() == std::vector<int64_t>{1});
  CHECK(std::isnan(pow(f64({-8}), 1.0 / 3.0).item()));
  CHECK(pow(f64({0}), -1.0).item() == kInf);
  CHECK_THROWS_WITH(pow(i64({2}), -2.0), Contains("pow") && Contains("negative"));
}

TEST_CASE("var is unbiased by default and NaN for one element, mean rejects integers", "[parity][reduce]") {
  Tensor x = f64({1, 2, 3, 4});
  CHECK(var(x).item() == 5.0 / 3.0);  // the squares sum to exactly 5
  CHECK(var(x, {}, 0).item() == 1.25);
  CHECK(std::isnan(var(f64({7})).item()));
  CHECK(var(f64({7}), {}, 0).item() == 0.0);
  CHECK(var(f64({1, 2, 3, 4}).reshape({2, 2}), {-1}, 1, true).to_vector<double>() == std::vector<double>{0.5, 0.5});
  CHECK(var(f64({1, 2, 3, 4}).reshape({2, 2}), {-1}, 1, true).shape() == Shape{2, 1});
  CHECK(std::isnan(mean(zeros({0})).item()));
  CHECK_THROWS_WITH(mean(i64({1, 2})), Contains("mean") && Contains("could not infer output dtype"));
  CHECK_THROWS_WITH(var(i64({1, 2})), Contains("var"));
  CHECK(sum(bools({true, true})).dtype() == DType::I64);
  CHECK(sum(i64({1, 2}), {-1}, true).shape() == Shape{1});
}

TEST_CASE("max and min along a dim: NaN wins at its first index, ties pick the first", "[parity][reduce]") {
  Tensor x = f64({1, kNaN, 3, kNaN, 5, 5, 2, 0}).reshape({2, 4});
  ValuesIndices mx = max(x, 1);
  CHECK(std::isnan(mx.values.to_vector<double>()[0]));
  CHECK(mx.values.to_vector<double>()[1] == 5);
  CHECK(mx.indices.to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  ValuesIndices mn = min(x, -1, true);
  CHECK(mn.indices.shape() == Shape{2, 1});
  CHECK(mn.indices.to_vector<int64_t>() == std::vector<int64_t>{1, 3});
  CHECK(std::isnan(max(x).item()));
  CHECK(argmax(x, -1, true).shape() == Shape{2, 1});
  CHECK(argmax(x, -1, true).to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  CHECK(argmax(x).item<int64_t>() == 1);
  // Integers, and an empty tensor whose reduced dim is not the empty one.
  ValuesIndices mi = max(from_vector<int32_t>({4, 9, 9, -1}, {2, 2}), 0);
  CHECK(mi.values.to_vector<int32_t>() == std::vector<int32_t>{9, 9});
  CHECK(mi.indices.to_vector<int64_t>() == std::vector<int64_t>{1, 0});
  ValuesIndices me = max(zeros({0, 3}), 1);
  CHECK(me.values.shape() == Shape{0});
  CHECK(me.indices.shape() == Shape{0});
  CHECK_THROWS_WITH(argmax(zeros({0})), Contains("argmax"));
}

TEST_CASE("softmax of -inf and deeply negative logits is exact whatever the buffer alignment", "[parity][softmax]") {
  // Eigen's packet exp clamps its input, so a vectorized exp(-inf) is not 0; the kernel redoes such
  // inputs. Rows of several lengths and offsets put the -inf entries in packets and in tails.
  for (int64_t n : {2, 5, 8, 13}) {
    for (DType dt : {DType::F64, DType::F32}) {
      std::vector<double> v(static_cast<size_t>(3 * n));
      for (size_t k = 0; k < v.size(); ++k) v[k] = k % 3 == 0 ? -kInf : (k % 3 == 1 ? 0.25 * double(k % 7) : -800.0 - k);
      Tensor x = f64(v).reshape({3, n}).to(dt);
      std::vector<double> p = softmax(x, 1).to(DType::F64).to_vector<double>();
      std::vector<double> gp = x.to_vector<double>();
      for (int64_t r = 0; r < 3; ++r) {
        double m = -kInf, sum = 0;
        for (int64_t j = 0; j < n; ++j) m = std::max(m, gp[r * n + j]);
        for (int64_t j = 0; j < n; ++j) sum += std::exp(gp[r * n + j] - m);
        for (int64_t j = 0; j < n; ++j) {
          INFO("n " << n << " dtype " << dtype_name(dt) << " row " << r << " col " << j);
          const double want = std::exp(gp[r * n + j] - m) / sum;
          if (want == 0) CHECK(p[r * n + j] == 0.0);
          else CHECK(p[r * n + j] == Approx(want).epsilon(dt == DType::F64 ? 1e-14 : 1e-6));
        }
      }
    }
  }
}

TEST_CASE("softmax and log_softmax: size-1 dims, -inf entries, empty inputs", "[parity][softmax]") {
  Tensor one = f64({0.3, -7}).reshape({2, 1});
  CHECK(softmax(one, 1).to_vector<double>() == std::vector<double>{1, 1});
  CHECK(log_softmax(one, -1).to_vector<double>() == std::vector<double>{0, 0});
  Tensor r = f64({-kInf, 0, -kInf, -kInf}).reshape({2, 2});
  std::vector<double> p = softmax(r, -1).to_vector<double>();
  CHECK(p[0] == 0.0);
  CHECK(p[1] == 1.0);
  CHECK(std::isnan(p[2]));  // an all -inf row is NaN, as PyTorch
  CHECK(std::isnan(p[3]));
  std::vector<double> lp = log_softmax(r, 1).to_vector<double>();
  CHECK(lp[0] == -kInf);
  CHECK(lp[1] == 0.0);
  CHECK(std::isnan(lp[2]));
  CHECK(softmax(zeros({0, 3}), 1).shape() == Shape{0, 3});
  CHECK(softmax(zeros({2, 0}), 1).shape() == Shape{2, 0});
  CHECK(log_softmax(zeros({2, 0}), 0).shape() == Shape{2, 0});
  CHECK(softmax(scalar_tensor(5.0), 0).item() == 1.0);
  CHECK_THROWS_WITH(softmax(zeros({2}), 1), Contains("softmax") && Contains("dim 1"));
}

TEST_CASE("index_select and gather with empty indices give empty results", "[parity][index]") {
  Tensor x = arange(0, 6, 1, DType::F32).reshape({2, 3});
  CHECK(index_select(x, -1, zeros({0}, DType::I64)).shape() == Shape{2, 0});
  CHECK(gather(x, 1, zeros({2, 0}, DType::I64)).shape() == Shape{2, 0});
  CHECK(index_select(x, 0, i64({1, 1})).to_vector<float>() == std::vector<float>{3, 4, 5, 3, 4, 5});
  CHECK_THROWS_WITH(gather(x, 1, i64({-1, 0}).reshape({2, 1})), Contains("gather") && Contains("-1"));
}

TEST_CASE("signed integer add, sub, mul and neg wrap on overflow, as PyTorch", "[parity][binary]") {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  CHECK(add(i64({kMax}), i64({1})).to_vector<int64_t>() == std::vector<int64_t>{kMin});
  CHECK(sub(i64({kMin}), i64({1})).to_vector<int64_t>() == std::vector<int64_t>{kMax});
  CHECK(mul(i64({kMin}), i64({-1})).to_vector<int64_t>() == std::vector<int64_t>{kMin});
  CHECK(mul(i64({int64_t{1} << 62}), i64({4})).to_vector<int64_t>() == std::vector<int64_t>{0});
  CHECK(neg(i64({kMin})).to_vector<int64_t>() == std::vector<int64_t>{kMin});
  Tensor i32 = cast(i64({std::numeric_limits<int32_t>::max()}), DType::I32);
  CHECK(add(i32, cast(i64({1}), DType::I32)).to_vector<int32_t>() == std::vector<int32_t>{std::numeric_limits<int32_t>::min()});
}

TEST_CASE("clamp of integer tensors stays integer, a fractional bound promotes to f32", "[parity][clamp]") {
  Tensor x = i64({-5, 0, 3, 9});
  Tensor y = clamp(x, 0.0, 4.0);
  CHECK(y.dtype() == DType::I64);
  CHECK(y.to_vector<int64_t>() == std::vector<int64_t>{0, 0, 3, 4});
  CHECK(clamp(x, std::nullopt, 1.0).to_vector<int64_t>() == std::vector<int64_t>{-5, 0, 1, 1});
  CHECK(clamp(x, 4.0, 2.0).to_vector<int64_t>() == std::vector<int64_t>{2, 2, 2, 2});  // min > max: max
  Tensor u = clamp(cast(i64({1, 200}), DType::U8), 5.0, 100.0);
  CHECK(u.dtype() == DType::U8);
  CHECK(u.to_vector<uint8_t>() == std::vector<uint8_t>{5, 100});
  Tensor f = clamp(x, 0.5, std::nullopt);
  CHECK(f.dtype() == DType::F32);
  CHECK(f.to_vector<float>() == std::vector<float>{0.5f, 0.5f, 3.0f, 9.0f});
  CHECK_THROWS_WITH(clamp(cast(x, DType::I32), 1e10, std::nullopt), Contains("clamp") && Contains("i32") && Contains("overflow"));
  // PyTorch 1.13: torch.clamp(torch.tensor([-7, 7]), -float('inf'), 5.0) is f32 [-7., 5.]: an
  // infinite bound is a float scalar, not an integral one.
  Tensor inf_bound = clamp(i64({-7, 7}), -std::numeric_limits<double>::infinity(), 5.0);
  CHECK(inf_bound.dtype() == DType::F32);
  CHECK(inf_bound.to_vector<float>() == std::vector<float>{-7.0f, 5.0f});
  CHECK(clamp(i64({-7, 7}), std::nullopt, kInf).to_vector<float>() == std::vector<float>{-7.0f, 7.0f});
  // torch.clamp(torch.tensor([False, True]), 0, 1) is i64 [0, 1]; min=1 gives [1, 1]; min=0.5 f32.
  Tensor b = clamp(bools({false, true}), 0.0, 1.0);
  CHECK(b.dtype() == DType::I64);
  CHECK(b.to_vector<int64_t>() == std::vector<int64_t>{0, 1});
  CHECK(clamp(bools({false, true}), 1.0, std::nullopt).to_vector<int64_t>() == std::vector<int64_t>{1, 1});
  CHECK(clamp(bools({false, true}), 0.5, std::nullopt).to_vector<float>() == std::vector<float>{0.5f, 1.0f});
}

TEST_CASE("pow's gradients at a zero base: 0 for a zero exponent, -inf in the exponent for a negative one", "[parity][binary]") {
  // PyTorch 1.13: a = torch.tensor([0., 0, 0, 2, -2], dtype=torch.float64, requires_grad=True),
  // b = torch.tensor([0., -1, 2, 0, 2], dtype=torch.float64, requires_grad=True); torch.pow(a, b).sum().backward():
  // a.grad = [0, -inf, 0, 0, -4], b.grad = [0, -inf, 0, 0.6931471805599453, nan].
  Tensor a = f64({0, 0, 0, 2, -2}).requires_grad_();
  Tensor b = f64({0, -1, 2, 0, 2}).requires_grad_();
  sum(pow(a, b)).backward();
  const std::vector<double> ga = a.grad().to_vector<double>(), gb = b.grad().to_vector<double>();
  CHECK(ga == std::vector<double>{0, -kInf, 0, 0, -4});
  CHECK(gb[0] == 0.0);
  CHECK(gb[1] == -kInf);
  CHECK(gb[2] == 0.0);
  CHECK(gb[3] == Approx(0.6931471805599453).epsilon(1e-15));
  CHECK(std::isnan(gb[4]));
  // Broadcast: a = torch.tensor([0., 0], ...), b = torch.tensor([[0.], [-1]], ...):
  // a.grad = [-inf, -inf], b.grad = [[0], [-inf]].
  Tensor a2 = f64({0, 0}).requires_grad_();
  Tensor b2 = f64({0, -1}).reshape({2, 1}).detach().requires_grad_();
  sum(pow(a2, b2)).backward();
  CHECK(a2.grad().to_vector<double>() == std::vector<double>{-kInf, -kInf});
  CHECK(b2.grad().to_vector<double>() == std::vector<double>{0, -kInf});
}

TEST_CASE("clamp with a NaN bound: both bounds given gives NaN everywhere, a single one leaves x", "[parity][clamp]") {
  // PyTorch 1.13, x = torch.tensor([1., 2, nan, -3]) in f32 and f64: torch.clamp(x, 0., nan),
  // torch.clamp(x, nan, 5.) and torch.clamp(x, nan, nan) are all nan; torch.clamp(x, min=nan) and
  // torch.clamp(x, max=nan) are x itself; the gradient is 0 in every case; torch.clamp(x) raises
  // "At least one of 'min' or 'max' must not be None".
  for (DType dt : {DType::F32, DType::F64}) {
    const std::vector<std::pair<std::optional<double>, std::optional<double>>> all_nan = {
        {0.0, kNaN}, {kNaN, 5.0}, {kNaN, kNaN}};
    for (auto [lo, hi] : all_nan) {
      Tensor x = f64({1, 2, kNaN, -3}).to(dt).requires_grad_();
      Tensor y = clamp(x, lo, hi);
      for (double v : y.to(DType::F64).to_vector<double>()) CHECK(std::isnan(v));
      sum(y).backward();
      CHECK(x.grad().to(DType::F64).to_vector<double>() == std::vector<double>{0, 0, 0, 0});
    }
    for (auto [lo, hi] : {std::pair<std::optional<double>, std::optional<double>>{kNaN, std::nullopt}, {std::nullopt, kNaN}}) {
      Tensor x = f64({1, 2, -3}).to(dt).requires_grad_();
      Tensor y = clamp(x, lo, hi);
      CHECK(y.to(DType::F64).to_vector<double>() == std::vector<double>{1, 2, -3});
      sum(y).backward();
      CHECK(x.grad().to(DType::F64).to_vector<double>() == std::vector<double>{0, 0, 0});
    }
  }
  CHECK_THROWS_WITH(clamp(f64({1}), std::nullopt, std::nullopt), Contains("clamp") && Contains("At least one of 'min' or 'max'"));
}

TEST_CASE("in-place ops refuse a result type their tensor cannot hold, and integer add refuses a fractional alpha", "[parity][binary]") {
  // PyTorch 1.13: torch.tensor([1, 2]).add_(torch.tensor([0.5, 0.5], dtype=torch.float64)) raises
  // "result type Double can't be cast to the desired output type Long"; .mul_(0.5) raises "result
  // type Float can't be cast ..."; torch.tensor([True]).add_(torch.tensor([1])) likewise;
  // torch.add(torch.tensor([1, 2]), torch.tensor([1, 1]), alpha=2.5) raises "For integral input
  // tensors, argument alpha must not be a floating point number."
  Tensor a = i64({1, 2});
  CHECK_THROWS_WITH(a.add_(f64({0.5, 0.5})), Contains("add_") && Contains("can't be cast to the desired output type i64"));
  CHECK_THROWS_WITH(a.mul_(0.5), Contains("mul_") && Contains("can't be cast"));
  CHECK_THROWS_WITH(a.mul_(f64({2, 2})), Contains("mul_") && Contains("can't be cast"));
  CHECK_THROWS_WITH(bools({true}).add_(i64({1})), Contains("add_") && Contains("can't be cast"));
  CHECK(a.to_vector<int64_t>() == std::vector<int64_t>{1, 2});  // unchanged by the refused calls
  CHECK_THROWS_WITH(add(i64({1, 2}), i64({1, 1}), 2.5), Contains("add") && Contains("alpha must not be a floating point"));
  CHECK_THROWS_WITH(a.add_(i64({1, 1}), 0.5), Contains("add_") && Contains("alpha"));
  // What PyTorch allows: torch.tensor([1, 2]).add_(torch.tensor([3, 4], dtype=torch.int32), alpha=2)
  // -> [7, 10]; .mul_(3) -> [21, 30] (C++'s integral double is an integer scalar, README); an f32
  // tensor takes an f64 or integer operand: torch.tensor([1.5, 2.]).add_(torch.tensor([0.25, 1],
  // dtype=torch.float64)).mul_(torch.tensor([2, 3])) -> [3.5, 9.].
  a.add_(cast(i64({3, 4}), DType::I32), 2.0);
  CHECK(a.to_vector<int64_t>() == std::vector<int64_t>{7, 10});
  a.mul_(3.0);
  CHECK(a.to_vector<int64_t>() == std::vector<int64_t>{21, 30});
  Tensor f = from_vector<float>({1.5f, 2});
  f.add_(f64({0.25, 1}));
  f.mul_(i64({2, 3}));
  CHECK(f.to_vector<float>() == std::vector<float>{3.5f, 9.0f});
  CHECK(add(f64({1, 2}), f64({1, 1}), 0.5).to_vector<double>() == std::vector<double>{1.5, 2.5});
}

TEST_CASE("relu keeps integer dtypes and refuses bool", "[parity][activation]") {
  // PyTorch 1.13: torch.relu(torch.tensor([-1, 3])) -> tensor([0, 3]) (int64);
  // torch.relu(torch.tensor([-5, 7], dtype=torch.int32)) stays int32; torch.relu(torch.tensor([True]))
  // raises "Boolean inputs not supported for relu".
  Tensor r = relu(i64({-1, 3}));
  CHECK(r.dtype() == DType::I64);
  CHECK(r.to_vector<int64_t>() == std::vector<int64_t>{0, 3});
  Tensor r32 = relu(cast(i64({-5, 7}), DType::I32));
  CHECK(r32.dtype() == DType::I32);
  CHECK(r32.to_vector<int32_t>() == std::vector<int32_t>{0, 7});
  CHECK_THROWS_WITH(relu(bools({true})), Contains("relu") && Contains("bool"));
}

TEST_CASE("leaky_relu, gelu and softplus refuse integer tensors, as PyTorch", "[parity][activation]") {
  // PyTorch 1.13 has no integer kernel for these three: F.leaky_relu(torch.tensor([-1, 2])) raises a
  // RuntimeError naming "leaky_relu_cpu" and 'Long' (gelu: "GeluKernelImpl", softplus:
  // "softplus_cpu"); sigmoid and tanh promote to float.
  CHECK_THROWS_WITH(leaky_relu(i64({-1, 2})), Contains("leaky_relu") && Contains("floating point"));
  CHECK_THROWS_WITH(gelu(i64({-1, 2})), Contains("gelu") && Contains("floating point"));
  CHECK_THROWS_WITH(softplus(i64({-1, 2})), Contains("softplus") && Contains("floating point"));
  CHECK(sigmoid(i64({0})).dtype() == DType::F32);
}

TEST_CASE("narrow takes a negative start from the end", "[parity][view]") {
  // PyTorch 1.13: torch.arange(10).narrow(0, -3, 2) -> tensor([7, 8]); narrow(-1, -10, 1) -> [0];
  // narrow(0, 10, 0) -> []; narrow(0, -11, 1) raises "Dimension out of range (expected to be in range
  // of [-10, 9], but got -11)";
  // narrow(0, -2, 3) raises "start (8) + length (3) exceeds dimension size (10)".
  Tensor x = arange(10);
  CHECK(x.narrow(0, -3, 2).to_vector<int64_t>() == std::vector<int64_t>{7, 8});
  CHECK(x.narrow(-1, -10, 1).to_vector<int64_t>() == std::vector<int64_t>{0});
  CHECK(x.narrow(0, 10, 0).numel() == 0);
  CHECK_THROWS_WITH(x.narrow(0, -11, 1), Contains("narrow") && Contains("start out of range"));
  CHECK_THROWS_WITH(x.narrow(0, -2, 3), Contains("narrow") && Contains("exceeds dimension size 10"));
}

TEST_CASE("select, slice, narrow, split, chunk, size and stride refuse a 0-dim tensor", "[parity][view]") {
  // PyTorch 1.13: torch.tensor(3.).select(0, 0) -> IndexError "select() cannot be applied to a
  // 0-dim tensor."; likewise slice (t[0:1]) and narrow; split/chunk -> "expects at least a
  // 1-dimensional tensor"; t.size(0) / t.stride(0) -> "Dimension specified as 0 but tensor has no
  // dimensions". Reading dim 0 of a 0-dim shape used to crash.
  Tensor s = scalar_tensor(3.0);
  CHECK_THROWS_WITH(s.select(0, 0), Contains("select") && Contains("0-dim"));
  CHECK_THROWS_WITH(s.select(-1, 0), Contains("select") && Contains("0-dim"));
  CHECK_THROWS_WITH(s.slice(0, 0, 1), Contains("slice") && Contains("0-dim"));
  CHECK_THROWS_WITH(s.narrow(0, 0, 1), Contains("narrow") && Contains("0-dim"));
  CHECK_THROWS_WITH(split(s, 1), Contains("split") && Contains("1-dimensional"));
  CHECK_THROWS_WITH(chunk(s, 1), Contains("chunk") && Contains("1-dimensional"));
  CHECK_THROWS_WITH(s.size(0), Contains("size") && Contains("no dimensions"));
  CHECK_THROWS_WITH(s.size(-1), Contains("size") && Contains("no dimensions"));
  CHECK_THROWS_WITH(s.stride(0), Contains("stride") && Contains("no dimensions"));
  // torch.tensor(3.).flatten(1) -> IndexError: dims of a 0-dim tensor are 0 and -1 only.
  CHECK(s.flatten(0, -1).shape() == Shape{1});
  CHECK_THROWS_WITH(s.flatten(1), Contains("flatten") && Contains("dim 1"));
}

TEST_CASE("narrow takes a negative start counted from the end", "[parity][view]") {
  // PyTorch 1.13: torch.arange(6.).reshape(2, 3).narrow(1, -2, 2) -> [[1, 2], [4, 5]];
  // narrow(1, 3, 0) -> shape [2, 0]; narrow(1, -4, 1) -> IndexError (start out of range).
  Tensor x = arange(0, 6, 1, DType::F32).reshape({2, 3});
  CHECK(x.narrow(1, -2, 2).to_vector<float>() == std::vector<float>{1, 2, 4, 5});
  CHECK(x.narrow(-1, -3, 1).to_vector<float>() == std::vector<float>{0, 3});
  CHECK(x.narrow(1, 3, 0).shape() == Shape{2, 0});
  CHECK_THROWS_WITH(x.narrow(1, -4, 1), Contains("narrow") && Contains("-4"));
  CHECK_THROWS_WITH(x.narrow(1, -1, 2), Contains("narrow") && Contains("exceeds"));
  CHECK_THROWS_WITH(x.narrow(1, 1, -1), Contains("narrow"));
  // The gradient lands in the narrowed window.
  Tensor w = arange(0, 4, 1, DType::F64).requires_grad_();
  mul(w.narrow(0, -3, 2), 2.0).sum().backward();
  CHECK(w.grad().to_vector<double>() == std::vector<double>{0, 2, 2, 0});
}

TEST_CASE("expand refuses negative sizes other than -1", "[parity][view]") {
  // PyTorch 1.13: torch.zeros(1, 3).expand(-2, 3) and torch.zeros(2, 3).expand(-2, 3) are errors
  // (only -1, "keep this size", is allowed); minidl made a tensor of shape [-2, 3].
  CHECK_THROWS_WITH(zeros({1, 3}).expand({-2, 3}), Contains("expand") && Contains("-2"));
  CHECK_THROWS_WITH(zeros({2, 3}).expand({-2, 3}), Contains("expand") && Contains("-2"));
  CHECK_THROWS_WITH(zeros({3}).expand({-1, 3}), Contains("expand") && Contains("-1"));
  CHECK(zeros({1, 3}).expand({0, -1}).shape() == Shape{0, 3});  // torch: size [0, 3]
}

TEST_CASE("split_size 0 is allowed for an empty dim, one_hot of an empty index needs num_classes > 0", "[parity][join]") {
  // PyTorch 1.13: torch.zeros(0).split(0) -> (tensor([]),); torch.zeros(4).split(0) -> error
  // "split_size can only be 0 if dimension size is 0".
  std::vector<Tensor> parts = split(zeros({0, 2}), 0);
  REQUIRE(parts.size() == 1);
  CHECK(parts[0].shape() == Shape{0, 2});
  CHECK_THROWS_WITH(split(zeros({4}), 0), Contains("split") && Contains("split_size"));
  // F.one_hot(torch.tensor([], dtype=torch.long), 0) -> "Can not infer total number of classes
  // from empty tensor."; with 3 classes -> shape [0, 3].
  CHECK_THROWS_WITH(one_hot(zeros({0}, DType::I64), 0), Contains("one_hot") && Contains("empty"));
  CHECK(one_hot(zeros({0}, DType::I64), 3).shape() == Shape{0, 3});
}

TEST_CASE("factories honour requires_grad: arange", "[parity][factory]") {
  // PyTorch 1.13: torch.arange(3., requires_grad=True) -> tensor([0., 1., 2.], requires_grad=True)
  Tensor a = arange(0, 3, 1, TensorOptions(DType::F32).requires_grad());
  CHECK(a.requires_grad());
  CHECK(a.is_leaf());
  mul(a, a).sum().backward();
  CHECK(a.grad().to_vector<float>() == std::vector<float>{0, 2, 4});
  CHECK_THROWS_WITH(arange(0, 3, 1, TensorOptions(DType::I64).requires_grad()), Contains("floating point"));
}

TEST_CASE("full and fill_ refuse values outside the dtype's range", "[parity][factory]") {
  // PyTorch 1.13, torch.zeros(1, dtype=dt).fill_(v) (and torch.full((1,), v, dtype=dt)):
  // uint8: 300 -> "value cannot be converted to type uint8_t without overflow"; -1 -> [255];
  //        -255 -> [1]; -256 -> error; -1.5 -> error; nan / inf -> error
  CHECK_THROWS_WITH(full({1}, 300, DType::U8), Contains("full: ") && Contains("u8") && Contains("overflow"));
  CHECK(full({1}, -1, DType::U8).to_vector<uint8_t>() == std::vector<uint8_t>{255});
  CHECK(full({1}, -255, DType::U8).to_vector<uint8_t>() == std::vector<uint8_t>{1});
  CHECK_THROWS_WITH(full({1}, -256, DType::U8), Contains("overflow"));
  CHECK_THROWS_WITH(full({1}, -1.5, DType::U8), Contains("overflow"));
  CHECK_THROWS_WITH(zeros({1}, DType::U8).fill_(kNaN), Contains("fill_: ") && Contains("overflow"));
  // int32: 2**31 -> error; -2**31 -> [-2147483648]; 2.7 -> [2] (truncated); inf -> error
  CHECK_THROWS_WITH(full({1}, 2147483648.0, DType::I32), Contains("i32") && Contains("overflow"));
  CHECK(full({1}, -2147483648.0, DType::I32).to_vector<int32_t>() == std::vector<int32_t>{std::numeric_limits<int32_t>::min()});
  CHECK(full({1}, 2.7, DType::I32).to_vector<int32_t>() == std::vector<int32_t>{2});
  CHECK_THROWS_WITH(full({1}, kInf, DType::I32), Contains("overflow"));
  // int64: 1e39, inf, nan -> error; 2**31 -> [2147483648]
  CHECK_THROWS_WITH(full({1}, 1e39, DType::I64), Contains("i64") && Contains("overflow"));
  CHECK_THROWS_WITH(full({1}, -kInf, DType::I64), Contains("overflow"));
  CHECK(full({1}, 2147483648.0, DType::I64).to_vector<int64_t>() == std::vector<int64_t>{2147483648});
  // float16: 65504 -> [65504]; 65505 and 1e6 -> error; inf -> [inf]; nan -> [nan]
  CHECK(full({1}, 65504, DType::F16).item() == 65504.0);
  CHECK_THROWS_WITH(full({1}, 65505, DType::F16), Contains("f16") && Contains("overflow"));
  CHECK_THROWS_WITH(zeros({1}, DType::F16).fill_(-1e6), Contains("overflow"));
  CHECK(std::isinf(full({1}, kInf, DType::F16).item()));
  CHECK(std::isnan(full({1}, kNaN, DType::F16).item()));
  // bfloat16: 1e39 -> error, 1e6 -> [999424.]; float32: 1e39 -> error; bool: anything -> True
  CHECK_THROWS_WITH(full({1}, 1e39, DType::BF16), Contains("overflow"));
  CHECK(full({1}, 1e6, DType::BF16).item() == 999424.0);
  CHECK_THROWS_WITH(full({1}, 1e39, DType::F32), Contains("f32") && Contains("overflow"));
  CHECK(full({1}, 1e39, DType::F64).item() == 1e39);
  CHECK(full({1}, 1e39, DType::Bool).to_vector<bool>() == std::vector<bool>{true});
}

TEST_CASE("copy_ into an expanded view is refused, as PyTorch's internal-overlap check", "[parity][copy]") {
  // PyTorch 1.13: torch.zeros(2, 1).expand(2, 2).copy_(torch.ones(2, 2)) raises "unsupported
  // operation: more than one element of the written-to tensor refers to a single memory location".
  Tensor expanded = zeros({2, 1}).expand({2, 2});
  CHECK_THROWS_WITH(expanded.copy_(ones({2, 2})), Contains("copy_") && Contains("single memory location"));
  CHECK_THROWS_WITH(expanded.copy_(ones({1})), Contains("copy_") && Contains("stride 0"));
  // A size-1 dim with stride 0 and a strided (not overlapping) view are fine.
  Tensor one = zeros({1, 3}).expand({1, 3});
  one.copy_(ones({1, 3}));
  CHECK(one.to_vector<float>() == std::vector<float>{1, 1, 1});
  Tensor base = zeros({2, 4});
  base.slice(1, 0, 4, 2).copy_(ones({2, 2}));
  CHECK(base.to_vector<float>() == std::vector<float>{1, 0, 1, 0, 1, 0, 1, 0});
}
