// sort, argsort, topk (ops/sort.cpp), cumsum and cumprod (ops/scan.cpp), amax/amin (ops/reduce.cpp) and
// scatter_add (ops/index.cpp): values, indices and gradients against torch 1.13's (the literals
// below are what it printed for the same inputs; torch.sort with stable=True), NaN and infinities,
// integer and bool dtypes, the accumulation types of cumsum, errors by message, and CUDA against
// the CPU. Finite-difference checks of every op are rows of tests/test_gradcheck.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "cuda_checks.h"
#include "gradcheck.h"

using namespace minidl;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Element-wise equality (NaN equals NaN), with the shape and dtype.
void check_exact(const Tensor& got, DType dtype, const Shape& shape, const std::vector<double>& want) {
  CHECK(got.dtype() == dtype);
  CHECK(got.shape() == shape);
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", want " << want[i]);
    CHECK((std::isnan(want[i]) ? std::isnan(g[i]) : g[i] == want[i]));
  }
}

Tensor f32(const std::vector<double>& v, const Shape& s) { return cast(from_vector(v, s), DType::F32); }
Tensor i64(const std::vector<int64_t>& v, const Shape& s) { return from_vector<int64_t>(v, s); }

// torch.tensor([[3., 1., nan, 2., 1.], [-inf, 5., 0., inf, -1.]])
Tensor mixed() { return f32({3, 1, kNaN, 2, 1, -kInf, 5, 0, kInf, -1}, {2, 5}); }
}  // namespace

TEST_CASE("sort matches torch.sort(stable=True): NaN last ascending and first descending, ties in order", "[sort]") {
  ValuesIndices a = sort(mixed());
  check_exact(a.values, DType::F32, {2, 5}, {1, 1, 2, 3, kNaN, -kInf, -1, 0, 5, kInf});
  check_exact(a.indices, DType::I64, {2, 5}, {1, 4, 3, 0, 2, 0, 4, 2, 1, 3});
  ValuesIndices d = sort(mixed(), -1, true);
  check_exact(d.values, DType::F32, {2, 5}, {kNaN, 3, 2, 1, 1, kInf, 5, 0, -1, -kInf});
  check_exact(d.indices, DType::I64, {2, 5}, {2, 0, 3, 1, 4, 3, 1, 2, 4, 0});
  check_exact(argsort(mixed(), 1, true), DType::I64, {2, 5}, {2, 0, 3, 1, 4, 3, 1, 2, 4, 0});

  const Tensor y = f32({2, 7, 2, -1, kNaN, 0}, {3, 2});  // along dim 0: columns of a row-major tensor
  check_exact(sort(y, 0).values, DType::F32, {3, 2}, {2, -1, 2, 0, kNaN, 7});
  check_exact(sort(y, 0).indices, DType::I64, {3, 2}, {0, 1, 1, 2, 2, 0});
  check_exact(sort(y, 0, true).values, DType::F32, {3, 2}, {kNaN, 7, 2, 0, 2, -1});
  check_exact(sort(y, 0, true).indices, DType::I64, {3, 2}, {2, 0, 0, 2, 1, 1});
  // A transposed (non-contiguous) input sorts the same values.
  check_exact(sort(y.t().contiguous().t(), 0).indices, DType::I64, {3, 2}, {0, 1, 1, 2, 2, 0});
}

TEST_CASE("sort of integer, bool, f16, 0-dim and empty tensors", "[sort]") {
  const Tensor xi = i64({5, -2, 5, 0, -2, 7}, {6});
  check_exact(sort(xi).values, DType::I64, {6}, {-2, -2, 0, 5, 5, 7});
  check_exact(sort(xi).indices, DType::I64, {6}, {1, 4, 3, 0, 2, 5});
  check_exact(sort(xi, 0, true).values, DType::I64, {6}, {7, 5, 5, 0, -2, -2});
  check_exact(sort(xi, 0, true).indices, DType::I64, {6}, {5, 0, 2, 3, 1, 4});
  const Tensor xb = cast(i64({1, 0, 1, 0}, {4}), DType::Bool);
  check_exact(sort(xb).values, DType::Bool, {4}, {0, 0, 1, 1});
  check_exact(sort(xb).indices, DType::I64, {4}, {1, 3, 0, 2});
  const Tensor xh = cast(from_vector<double>({0.1, -3.5, 2.25, 0.1}), DType::F16);
  check_exact(sort(xh, 0, true).values, DType::F16, {4}, {2.25, 0.0999755859375, 0.0999755859375, -3.5});
  check_exact(sort(xh, 0, true).indices, DType::I64, {4}, {2, 0, 3, 1});
  ValuesIndices s0 = sort(f32({4.5}, {}));
  check_exact(s0.values, DType::F32, {}, {4.5});
  check_exact(s0.indices, DType::I64, {}, {0});
  check_exact(sort(zeros({2, 0}), 1).indices, DType::I64, {2, 0}, {});
  CHECK_THROWS_WITH(sort(mixed(), 2), Catch::Contains("sort") && Catch::Contains("out of range"));
  CHECK_THROWS_WITH(sort(Tensor()), Catch::Contains("sort: argument 'self' is an undefined tensor"));
}

TEST_CASE("topk matches torch.topk: NaN counts as the largest, k 0, k out of range refused", "[sort]") {
  ValuesIndices t = topk(mixed(), 2, 1);
  check_exact(t.values, DType::F32, {2, 2}, {kNaN, 3, kInf, 5});
  check_exact(t.indices, DType::I64, {2, 2}, {2, 0, 3, 1});
  ValuesIndices s = topk(mixed(), 3, 1, false);
  check_exact(s.values, DType::F32, {2, 3}, {1, 1, 2, -kInf, -1, 0});
  check_exact(s.indices, DType::I64, {2, 3}, {1, 4, 3, 0, 4, 2});
  check_exact(topk(mixed(), 0, 1).values, DType::F32, {2, 0}, {});
  check_exact(topk(i64({3, 9, 1}, {3}), 1).values, DType::I64, {1}, {9});
  CHECK_THROWS_WITH(topk(mixed(), 6, 1), Catch::Contains("topk: k (6) is out of range for dimension 1 of size 5"));
  CHECK_THROWS_WITH(topk(mixed(), -1, 1), Catch::Contains("topk: k (-1) is out of range"));
  // A 0-dim tensor: k 0 or 1 give the value and index 0 (torch.topk(torch.tensor(3.), 0) too).
  check_exact(topk(f32({3}, {}), 0).values, DType::F32, {}, {3});
  check_exact(topk(f32({3}, {}), 1).indices, DType::I64, {}, {0});
  CHECK_THROWS_WITH(topk(f32({3}, {}), 2), Catch::Contains("topk: k (2) is out of range for a 0-dim tensor"));
  CHECK_THROWS_WITH(sort(f32({3}, {}), 1), Catch::Contains("sort: dim 1 out of range for a tensor of 0 dims (expected in [-1, 0])"));
  CHECK_THROWS_WITH(cumsum(f32({3}, {}), 1), Catch::Contains("cumsum: dim 1 out of range for a tensor of 0 dims"));
}

TEST_CASE("sort and topk send the gradient to the selected elements", "[sort][autograd]") {
  // torch: topk(x, 2) of [[0.5, -1, 2, 0.25]], (v * [[3, 5]]).sum().backward() -> [[5, 0, 3, 0]]
  Tensor x = f32({0.5, -1, 2, 0.25}, {1, 4}).requires_grad_();
  sum(mul(topk(x, 2).values, f32({3, 5}, {1, 2}))).backward();
  check_exact(x.grad(), DType::F32, {1, 4}, {5, 0, 3, 0});
  Tensor z = f32({0.5, -1, 2}, {3}).requires_grad_();
  sum(mul(sort(z).values, f32({1, 10, 100}, {3}))).backward();
  check_exact(z.grad(), DType::F32, {3}, {10, 1, 100});
  CHECK_FALSE(argsort(z).requires_grad());
  CHECK_FALSE(sort(z).indices.requires_grad());
}

TEST_CASE("cumsum matches torch.cumsum: dims, f64 accumulation of f32, integer and bool to i64, dtype", "[cumsum]") {
  const Tensor c = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  check_exact(cumsum(c, 0), DType::F32, {2, 3}, {1, 2, 3, 5, 7, 9});
  check_exact(cumsum(c, -1), DType::F32, {2, 3}, {1, 3, 6, 4, 9, 15});
  check_exact(cumsum(c.t(), 1), DType::F32, {3, 2}, {1, 5, 2, 7, 3, 9});
  // f32 accumulated in f64 (torch's CPU acc_type): 1e8 + 1 + 1 + 1 - 1e8 is 3, not 0.
  check_exact(cumsum(f32({1e8, 1, 1, 1, -1e8}, {5}), 0), DType::F32, {5}, {1e8, 1e8, 1e8, 1e8, 3});
  check_exact(cumsum(cast(i64({1, 2, 3}, {3}), DType::I32), 0), DType::I64, {3}, {1, 3, 6});
  check_exact(cumsum(cast(i64({1, 0, 1}, {3}), DType::Bool), 0), DType::I64, {3}, {1, 1, 2});
  check_exact(cumsum(cast(i64({200, 100}, {2}), DType::U8), 0, DType::U8), DType::U8, {2}, {200, 44});
  check_exact(cumsum(i64({1, 2}, {2}), 0, DType::F64), DType::F64, {2}, {1, 3});
  // i64 wraps around as torch's (two's complement), with no signed overflow inside the kernel.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  CHECK(cumsum(i64({kMax, 1}, {2}), 0).to_vector<int64_t>() == std::vector<int64_t>{kMax, kMin});
  CHECK(cumprod(i64({int64_t{1} << 62, 4, 3}, {3}), 0).to_vector<int64_t>() == std::vector<int64_t>{int64_t{1} << 62, 0, 0});
  check_exact(cumsum(f32({1, kInf, -kInf, 2}, {4}), 0), DType::F32, {4}, {1, kInf, kNaN, kNaN});
  // bf16 adds in f32 and rounds each output once: 257 and 259 round to even (torch: 255, 256, 256, 258, 260, 260).
  const Tensor b = cumsum(full({400}, 1.0, DType::BF16), 0);
  check_exact(b.slice(0, 254, 260), DType::BF16, {6}, {255, 256, 256, 258, 260, 260});
  // f16 likewise (torch 2.x; 1.13 has no CPU f16 cumsum): 2049 rounds to 2048, 2051 to 2052.
  const Tensor h = cumsum(full({3000}, 1.0, DType::F16), 0);
  check_exact(h.slice(0, 2046, 2052), DType::F16, {6}, {2047, 2048, 2048, 2050, 2052, 2052});
  check_exact(cumsum(f32({2.5}, {}), 0), DType::F32, {}, {2.5});
  CHECK_THROWS_WITH(cumsum(c, 2), Catch::Contains("cumsum") && Catch::Contains("out of range"));
}

TEST_CASE("cumsum's gradient is the reversed cumulative sum", "[cumsum][autograd]") {
  // torch: (cumsum(x, 0) * [1, 10, 100, 1000]).sum().backward() -> [1111, 1110, 1100, 1000]
  Tensor x = f32({1, 2, 3, 4}, {4}).requires_grad_();
  sum(mul(cumsum(x, 0), f32({1, 10, 100, 1000}, {4}))).backward();
  check_exact(x.grad(), DType::F32, {4}, {1111, 1110, 1100, 1000});
  CHECK_FALSE(cumsum(i64({1, 2}, {2}), 0).requires_grad());
}

TEST_CASE("cumprod matches torch.cumprod: values, f64 accumulation, integers, gradients through zeros", "[cumsum]") {
  check_exact(cumprod(f32({3, -2, 0.5, 4}, {4}), 0), DType::F32, {4}, {3, -6, -3, -12});
  // f64 accumulation: the running product passes 1e40 (inf in f32) and comes back.
  check_exact(cumprod(f32({1e20, 1e20, 1e-20, 1e-20}, {4}), 0), DType::F32, {4}, {1.0000000200408773e+20, kInf, 1.0000000200408773e+20, 1});
  check_exact(cumprod(cast(i64({2, 3, 4}, {3}), DType::I32), 0), DType::I64, {3}, {2, 6, 24});
  check_exact(cumprod(cast(i64({1, 1, 0}, {3}), DType::Bool), 0), DType::I64, {3}, {1, 1, 0});
  check_exact(cumprod(full({4}, 1.1, DType::BF16), 0), DType::BF16, {4}, {1.1015625, 1.2109375, 1.3359375, 1.46875});
  // torch: (cumprod(x, 0) * w).sum().backward() for w = [1, 10, 100, 1000, 10000] and [1, 2, 3, 4]
  Tensor x = f32({2, 0, 3, 0, 5}, {5}).requires_grad_();
  Tensor y = cumprod(x, 0);
  check_exact(y, DType::F32, {5}, {2, 0, 0, 0, 0});
  sum(mul(y, f32({1, 10, 100, 1000, 10000}, {5}))).backward();
  check_exact(x.grad(), DType::F32, {5}, {1, 620, 0, 0, 0});
  Tensor z = f32({3, -2, 0.5, 4}, {4}).requires_grad_();
  sum(mul(cumprod(z, 0), f32({1, 2, 3, 4}, {4}))).backward();
  check_exact(z.grad(), DType::F32, {4}, {-22, 34.5, -114, -12});
  Tensor m = f32({1, 2, 0, 4, 5, 0}, {3, 2}).requires_grad_();
  Tensor ym = cumprod(m, 0);
  check_exact(ym, DType::F32, {3, 2}, {1, 2, 0, 8, 0, 0});
  sum(ym).backward();
  check_exact(m.grad(), DType::F32, {3, 2}, {1, 5, 6, 2, 0, 8});
  // f64 finite differences, first and second order, on lines with zeros (random inputs have none).
  const std::vector<Tensor> inputs = {from_vector<double>({0.5, 0, -1.5, 0, 2, 0, 0.75, 1.25, -0.5, 0, 0, 3}, {3, 4}).requires_grad_()};
  for (int64_t dim : {0, 1}) {
    const auto fn = [dim](const std::vector<Tensor>& v) { Tensor c = cumprod(v[0], dim); return mul(c, c); };
    CHECK(testing::check_gradients(fn, inputs, 1e-6, 1e-6) == "");
    CHECK(testing::check_second_order(fn, inputs, 1e-6, 1e-5) == "");
  }
}

TEST_CASE("amax and amin match torch: ties share the gradient, NaN propagates, empty dims refused", "[reduce]") {
  Tensor a = f32({1, 3, 3, 2, 2, 0}, {2, 3}).requires_grad_();
  Tensor r = amax(a, {1});
  check_exact(r, DType::F32, {2}, {3, 2});
  sum(r).backward();
  check_exact(a.grad(), DType::F32, {2, 3}, {0, 0.5, 0.5, 0.5, 0.5, 0});
  a.set_grad(Tensor());
  Tensor m = amin(a);
  check_exact(m, DType::F32, {}, {0});
  m.backward();
  check_exact(a.grad(), DType::F32, {2, 3}, {0, 0, 0, 0, 0, 1});
  check_exact(amax(a, {0, 1}, true), DType::F32, {1, 1}, {3});
  Tensor an = f32({1, kNaN, 2}, {3}).requires_grad_();
  Tensor rn = amax(an);
  check_exact(rn, DType::F32, {}, {kNaN});
  rn.backward();
  check_exact(an.grad(), DType::F32, {3}, {kNaN, kNaN, kNaN});
  check_exact(amax(i64({1, 5, 7, 2}, {2, 2}), {0}), DType::I64, {2}, {7, 5});
  check_exact(amax(cast(i64({0, 1}, {2}), DType::Bool)), DType::Bool, {}, {1});
  check_exact(amax(zeros({0, 3}), {1}), DType::F32, {0}, {});
  CHECK_THROWS_WITH(amax(zeros({2, 0}), {1}), Catch::Contains("amax: expected reduction dim 1 to have non-zero size"));
}

TEST_CASE("scatter_add matches torch.scatter_add: repeated indices add, gradients, bad indices refused", "[index]") {
  const Tensor idx = i64({0, 1, 2, 0, 0, 2, 0, 0, 1, 2}, {2, 5});
  const Tensor src = f32({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {2, 5});
  check_exact(scatter_add(zeros({3, 5}), 0, idx, src), DType::F32, {3, 5}, {1, 7, 8, 4, 5, 0, 2, 0, 9, 0, 6, 0, 3, 0, 10});
  // An index smaller than src along dim 1 takes src's first columns.
  check_exact(scatter_add(ones({2, 5}), 1, i64({0, 0, 1, 4, 4, 4}, {2, 3}), src), DType::F32, {2, 5},
              {4, 4, 1, 1, 1, 1, 1, 1, 1, 22});
  Tensor xs = ones({3, 5}).requires_grad_(), ss = src.clone().requires_grad_();
  sum(mul(scatter_add(xs, 0, idx, ss), cast(arange(0, 15, 1), DType::F32).reshape({3, 5}))).backward();
  check_exact(xs.grad(), DType::F32, {3, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14});
  check_exact(ss.grad(), DType::F32, {2, 5}, {0, 6, 12, 3, 4, 10, 1, 2, 8, 14});
  CHECK_THROWS_WITH(scatter_add(zeros({3, 5}), 0, i64({3, 0, 0, 0, 0}, {1, 5}), src.slice(0, 0, 1)),
                    Catch::Contains("scatter_add: index 3 is out of bounds for dimension 0 with size 3"));
  CHECK_THROWS_WITH(scatter_add(zeros({3, 5}), 0, cast(idx, DType::I32), src), Catch::Contains("scatter_add: expected an i64 index"));
  CHECK_THROWS_WITH(scatter_add(zeros({3, 5}, DType::F64), 0, idx, src), Catch::Contains("scatter_add: expected self and src of one dtype"));
  CHECK_THROWS_WITH(scatter_add(zeros({3, 5}), 0, i64({0, 0, 0, 0, 0, 0}, {1, 6}), f32({1, 1, 1, 1, 1, 1}, {1, 6})),
                    Catch::Contains("scatter_add: index [1, 6] must be no larger than src [1, 6] and, apart from dimension 0, than self [3, 5]"));
}

TEST_CASE("cuda: sort, topk, cumsum, amax and scatter_add agree with the CPU", "[cuda][sort]") {
  using namespace minidl::cuda_test;
  MINIDL_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64, DType::I32, DType::U8, DType::Bool}) {
    INFO(dtype_name(t));
    // Few distinct values (ties everywhere) with NaN and infinities in the floating ones; a short
    // line, and one longer than the CUDA kernel takes (4096: sorted on the CPU).
    for (const Shape& shape : {Shape{7, 33, 5}, Shape{2, 5000}}) {
      Tensor x = cast(cast(randn_cpu(shape, DType::F32, 31, 3.0), DType::I64), t);
      if (is_floating(t)) {
        x.select(0, 0).flatten().slice(0, 0, 3).fill_(kNaN);
        x.select(0, 1).flatten().slice(0, 0, 2).fill_(kInf);
        x.select(0, 1).flatten().slice(0, 2, 4).fill_(-kInf);
      }
      const Tensor d = x.to(kCuda);
      for (int64_t dim : {int64_t{0}, int64_t{-1}})
        for (bool desc : {false, true}) {
          check_equal(sort(d, dim, desc).values, sort(x, dim, desc).values, "sort values");
          check_equal(sort(d, dim, desc).indices, sort(x, dim, desc).indices, "sort indices");
          check_equal(topk(d, 2, dim, desc).indices, topk(x, 2, dim, desc).indices, "topk indices");
        }
      check_equal(amax(d, {0, -1}), amax(x, {0, -1}), "amax");
      check_equal(amin(d, {1}), amin(x, {1}), "amin");
      {  // u8 and bool sum and multiply as i64, as PyTorch's
        check_close(cumsum(d, 1), cumsum(x, 1), is_floating(t) ? 2 * eps_of(t) : 0, 0, "cumsum");
        const Tensor small = is_floating(t) ? div(x, 8.0) : x.slice(-1, 0, 3);  // products that stay finite
        check_close(cumprod(small.to(kCuda), -1), cumprod(small, -1), is_floating(t) ? 2 * eps_of(t) : 0, 0, "cumprod");
      }
    }
  }
  Tensor idx = cast(clamp(mul(abs(randn_cpu({40, 6}, DType::F32, 34)), 3.0), 0.0, 9.0), DType::I64);
  Tensor src = randn_cpu({40, 6}, DType::F32, 32), base = randn_cpu({10, 6}, DType::F32, 33);
  check_close(scatter_add(base.to(kCuda), 0, idx.to(kCuda), src.to(kCuda)), scatter_add(base, 0, idx, src), 1e-6, 1e-6, "scatter_add");
  if (kCuda.is_cuda()) {
    amp::autocast scope(DeviceType::CUDA);
    CHECK(cumsum(cast(src, DType::F16).to(kCuda), 0).dtype() == DType::F32);
    CHECK(scatter_add(base.to(kCuda), 0, idx.to(kCuda), cast(src, DType::F16).to(kCuda)).dtype() == DType::F32);
  }
}
