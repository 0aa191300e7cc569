// Indexing (index_select, gather, one_hot) and randomness (Philox generator, rand/randn/randint,
// dropout): exact values against plain loops, gradients (first and second order), error messages,
// determinism for a seed and across thread counts, and loose statistical checks.
#include <catch2/catch.hpp>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "gradcheck.h"

using namespace minidl;
using minidl::testing::GradCase;
using minidl::testing::run_case;

namespace {
Tensor i64(const std::vector<int64_t>& v, const Shape& s) { return from_vector(v, s); }
Tensor iota_f32(const Shape& s) { return arange(0, static_cast<double>(numel_of(s)), 1, DType::F32).reshape(s); }

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}
double var_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size() - 1);
}
}  // namespace

// ------------------------------------------------------------------------------ index_select

TEST_CASE("index_select picks slices along any dim, repeats allowed", "[index]") {
  Tensor x = iota_f32({3, 4});  // [[0..3], [4..7], [8..11]]
  CHECK(index_select(x, 0, i64({2, 0, 2}, {3})).to_vector<float>() ==
        std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11});
  Tensor cols = index_select(x, 1, i64({3, 1}, {2}));
  CHECK(cols.shape() == Shape{3, 2});
  CHECK(cols.to_vector<float>() == std::vector<float>{3, 1, 7, 5, 11, 9});
  // Strided input, i32 index, integer data.
  CHECK(index_select(x.t(), 0, from_vector<int32_t>({1})).to_vector<float>() == std::vector<float>{1, 5, 9});
  CHECK(index_select(arange(5), 0, i64({4, 4}, {2})).to_vector<int64_t>() == std::vector<int64_t>{4, 4});
  CHECK(index_select(x, 0, i64({}, {0})).shape() == Shape{0, 4});
}

TEST_CASE("index_select backward adds the gradient of repeated rows", "[index]") {
  Tensor w = ones({4, 3}).requires_grad_();
  Tensor picked = index_select(w, 0, i64({1, 3, 1, 1}, {4}));
  mul(picked, iota_f32({4, 3})).sum().backward();
  // Row 1 receives rows 0, 2, 3 of the multiplier, row 3 receives row 1, rows 0 and 2 nothing.
  CHECK(w.grad().to_vector<float>() == std::vector<float>{0, 0, 0, 0 + 6 + 9, 1 + 7 + 10, 2 + 8 + 11, 0, 0, 0, 3, 4, 5});
}

TEST_CASE("index_select on an embedding-sized table matches a loop", "[index]") {
  // Large enough for the parallel paths of both kernels (column split for index_add).
  const int64_t V = 500, D = 96, K = 3000;
  std::vector<int64_t> idx(K);
  for (int64_t k = 0; k < K; ++k) idx[k] = (k * 37 + k / 7) % V;
  Tensor table = iota_f32({V, D}).requires_grad_();
  Tensor out = index_select(table, 0, i64(idx, {K}));
  std::vector<float> o = out.to_vector<float>();
  bool all_match = true;
  for (int64_t k = 0; k < K; ++k)
    for (int64_t d = 0; d < D; ++d) all_match = all_match && o[k * D + d] == static_cast<float>(idx[k] * D + d);
  CHECK(all_match);
  out.sum().backward();
  std::vector<float> count(V, 0);
  for (int64_t k : idx) count[k] += 1;
  std::vector<float> g = table.grad().to_vector<float>();
  bool grads_match = true;
  for (int64_t v = 0; v < V; ++v)
    for (int64_t d = 0; d < D; ++d) grads_match = grads_match && g[v * D + d] == count[v];
  CHECK(grads_match);
}

// ------------------------------------------------------------------------------------ gather

TEST_CASE("gather along dim 1 and dim 0, strided inputs", "[index]") {
  Tensor x = iota_f32({3, 4});
  Tensor g1 = gather(x, 1, i64({3, 0, 1, 1, 2, 2}, {3, 2}));
  CHECK(g1.to_vector<float>() == std::vector<float>{3, 0, 5, 5, 10, 10});
  Tensor g0 = gather(x, 0, i64({2, 1, 0, 0}, {1, 4}));
  CHECK(g0.to_vector<float>() == std::vector<float>{8, 5, 2, 3});
  // Index smaller than the input in a non-gathered dim, transposed input.
  Tensor xt = x.t();  // [4, 3]: xt[i][j] = 4 j + i
  Tensor gt = gather(xt, 1, i64({2, 0}, {2, 1}));
  CHECK(gt.to_vector<float>() == std::vector<float>{8, 1});
}

TEST_CASE("gather on a 3-D tensor matches a loop", "[index]") {
  const int64_t A = 3, B = 5, Cd = 4;
  Tensor x = iota_f32({A, B, Cd});
  std::vector<int64_t> idx(A * 2 * Cd);
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = static_cast<int64_t>((k * 3) % B);
  Tensor out = gather(x, 1, i64(idx, {A, 2, Cd}));
  std::vector<float> o = out.to_vector<float>();
  bool ok = true;
  for (int64_t a = 0; a < A; ++a)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t c = 0; c < Cd; ++c) {
        const int64_t k = (a * 2 + j) * Cd + c;
        ok = ok && o[k] == static_cast<float>((a * B + idx[k]) * Cd + c);
      }
  CHECK(ok);
}

TEST_CASE("gather backward scatter-adds repeated picks", "[index]") {
  Tensor x = zeros({2, 3}).requires_grad_();
  Tensor picked = gather(x, 1, i64({2, 2, 0, 1, 1, 1}, {2, 3}));
  mul(picked, from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})).sum().backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{3, 0, 3, 0, 15, 0});
}

TEST_CASE("indexing gradients, first and second order", "[index][gradcheck]") {
  const Tensor rows = i64({2, 0, 2, 1}, {4});
  const Tensor pick = i64({1, 1, 0, 2, 0, 0}, {3, 2});
  std::vector<GradCase> cases = {
      {"index_select dim 0", {{3, 2}}, [rows](const std::vector<Tensor>& in) { return index_select(in[0], 0, rows); }},
      {"index_select dim 1 squared", {{2, 3}},
       [rows](const std::vector<Tensor>& in) { Tensor y = index_select(in[0], 1, rows); return mul(y, y); }},
      {"gather dim 1 squared", {{3, 3}},
       [pick](const std::vector<Tensor>& in) { Tensor y = gather(in[0], 1, pick); return mul(y, y); }},
      {"gather dim 0", {{3, 2}}, [pick](const std::vector<Tensor>& in) { return gather(in[0], 0, pick); }},
  };
  for (const GradCase& c : cases) {
    INFO(c.name);
    CHECK(run_case(c) == "");
  }
}

TEST_CASE("indexing errors name the op and the offending index", "[index][errors]") {
  Tensor x = zeros({3, 4});
  CHECK_THROWS_WITH(index_select(x, 0, i64({0, 5}, {2})),
                    Catch::Contains("index_select") && Catch::Contains("index 5 is out of bounds for dimension 0 with size 3"));
  CHECK_THROWS_WITH(index_select(x, 1, i64({-1}, {1})), Catch::Contains("index -1 is out of bounds"));
  CHECK_THROWS_WITH(index_select(x, 0, zeros({2})), Catch::Contains("index_select") && Catch::Contains("i64"));
  CHECK_THROWS_WITH(index_select(x, 0, i64({0, 1}, {1, 2})), Catch::Contains("1-D"));
  CHECK_THROWS_WITH(index_select(x, 2, i64({0}, {1})), Catch::Contains("index_select"));
  CHECK_THROWS_WITH(gather(x, 1, i64({0, 4}, {1, 2})),
                    Catch::Contains("gather") && Catch::Contains("index 4 is out of bounds for dimension 1 with size 4"));
  CHECK_THROWS_WITH(gather(x, 1, i64({0, 1}, {2})), Catch::Contains("gather") && Catch::Contains("same number of dimensions"));
  CHECK_THROWS_WITH(gather(x, 1, i64(std::vector<int64_t>(5, 0), {5, 1})), Catch::Contains("gather") && Catch::Contains("dimension 0"));
  CHECK_THROWS_WITH(gather(x, 1, from_vector<int32_t>({0, 1}, {1, 2})), Catch::Contains("gather") && Catch::Contains("i64"));
}

// ------------------------------------------------------------------------------------ one_hot

TEST_CASE("one_hot encodes, infers the class count and rejects bad classes", "[index]") {
  Tensor oh = one_hot(i64({0, 2, 1}, {3}), 4);
  CHECK(oh.dtype() == DType::I64);
  CHECK(oh.shape() == Shape{3, 4});
  CHECK(oh.to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0});
  Tensor inferred = one_hot(i64({1, 0, 1, 2}, {2, 2}));
  CHECK(inferred.shape() == Shape{2, 2, 3});
  CHECK(inferred.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1});
  CHECK_THROWS_WITH(one_hot(i64({0, -1}, {2}), 3), Catch::Contains("one_hot") && Catch::Contains("non-negative"));
  CHECK_THROWS_WITH(one_hot(i64({0, 3}, {2}), 3), Catch::Contains("one_hot") && Catch::Contains("smaller than num_classes (3), got 3"));
  CHECK_THROWS_WITH(one_hot(i64({}, {0})), Catch::Contains("empty"));
  CHECK_THROWS_WITH(one_hot(zeros({2}), 3), Catch::Contains("one_hot") && Catch::Contains("i64"));
}

// ------------------------------------------------------------------------------ generator

TEST_CASE("Philox4x32-10 matches the Random123 known-answer vectors", "[random]") {
  CHECK(philox4x32(0, 0, 0) == std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
  CHECK(philox4x32(~0ULL, ~0ULL, ~0ULL) == std::array<uint32_t, 4>{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu});
}

TEST_CASE("tensor fills follow the documented counter layout", "[random]") {
  // Element k of an f32 fill is word k % 4 of block k / 4 (24 bits); of an f64 fill, words
  // 2(k % 2), 2(k % 2) + 1 of block k / 2 (53 bits). 150 elements cross several batches.
  const uint64_t seed = 0x1234567890ULL;
  Generator g(seed);
  std::vector<float> f = rand({150}, DType::F32, &g).to_vector<float>();
  const uint64_t next = g.offset();
  CHECK(next == 75);  // random_blocks(150)
  std::vector<double> d = rand({150}, DType::F64, &g).to_vector<double>();
  bool f_ok = true, d_ok = true;
  for (uint64_t k = 0; k < 150; ++k) {
    const auto w = philox4x32(seed, k / 4);
    f_ok = f_ok && f[k] == bits_to_unit_float(w[k % 4]);
    const auto v = philox4x32(seed, next + k / 2);
    const uint64_t bits = (static_cast<uint64_t>(v[2 * (k % 2) + 1]) << 32) | v[2 * (k % 2)];
    d_ok = d_ok && d[k] == bits_to_unit_double(bits);
  }
  CHECK(f_ok);
  CHECK(d_ok);
}

TEST_CASE("a generator is reproducible from its seed and from a saved state", "[random]") {
  Generator g(123);
  std::vector<uint64_t> first;
  for (int i = 0; i < 5; ++i) first.push_back(g.next_u64());
  g.manual_seed(123);
  for (int i = 0; i < 5; ++i) CHECK(g.next_u64() == first[i]);
  std::vector<uint64_t> saved = g.state();
  const double u1 = g.uniform(), u2 = g.uniform();
  CHECK(u1 >= 0.0);
  CHECK(u1 < 1.0);
  CHECK(u1 != u2);
  g.set_state(saved);
  CHECK(g.uniform() == u1);
  Generator copy = g;
  CHECK(copy.uniform() == g.uniform());
  CHECK(Generator(124).next_u64() != Generator(123).next_u64());
  CHECK_THROWS_WITH(g.set_state({1}), Catch::Contains("set_state"));
}

TEST_CASE("manual_seed makes the random factories repeat", "[random]") {
  manual_seed(7);
  Tensor a = rand({1000}), b = randn({50}, DType::F64), c = randint(0, 10, {20});
  manual_seed(7);
  CHECK(rand({1000}).to_vector<float>() == a.to_vector<float>());
  CHECK(randn({50}, DType::F64).to_vector<double>() == b.to_vector<double>());
  CHECK(randint(0, 10, {20}).to_vector<int64_t>() == c.to_vector<int64_t>());
  // Consecutive draws differ, and an explicit generator leaves the default one alone.
  CHECK(rand({1000}).to_vector<float>() != a.to_vector<float>());
  Generator g(7);
  CHECK(rand({1000}, {}, &g).to_vector<float>() == a.to_vector<float>());
}

TEST_CASE("random tensors do not depend on the thread count", "[random]") {
  const int saved = omp_get_max_threads();
  Generator g1(99), g2(99);
  omp_set_num_threads(1);
  std::vector<float> one = randn({300001}, {}, &g1).to_vector<float>();
  std::vector<int64_t> one_i = randint(-5, 5, {200001}, DType::I64, &g1).to_vector<int64_t>();
  omp_set_num_threads(2);
  std::vector<float> two = randn({300001}, {}, &g2).to_vector<float>();
  std::vector<int64_t> two_i = randint(-5, 5, {200001}, DType::I64, &g2).to_vector<int64_t>();
  omp_set_num_threads(saved);
  CHECK(one == two);
  CHECK(one_i == two_i);
}

TEST_CASE("rand and randn have the right moments", "[random]") {
  // n = 200k: the standard error of the mean is ~0.0006 (uniform) and ~0.002 (normal); bounds
  // are 10 standard errors or more.
  const int64_t n = 200000;
  Generator g(2024);
  for (DType t : {DType::F32, DType::F64, DType::BF16}) {
    INFO(dtype_name(t));
    std::vector<double> u = rand({n}, t, &g).to_vector<double>();
    CHECK(*std::min_element(u.begin(), u.end()) >= 0.0);
    CHECK(*std::max_element(u.begin(), u.end()) < 1.0);
    CHECK(std::abs(mean_of(u) - 0.5) < 0.01);
    CHECK(std::abs(var_of(u) - 1.0 / 12.0) < 0.005);
    std::vector<double> z = randn({n}, t, &g).to_vector<double>();
    CHECK(std::abs(mean_of(z)) < 0.02);
    CHECK(std::abs(var_of(z) - 1.0) < 0.03);
    int64_t beyond2 = 0;
    for (double v : z) beyond2 += std::abs(v) > 2.0;
    CHECK(std::abs(static_cast<double>(beyond2) / n - 0.0455) < 0.005);  // P(|Z| > 2)
  }
}

TEST_CASE("randint covers [low, high) uniformly", "[random]") {
  Generator g(5);
  std::vector<int64_t> v = randint(-3, 4, {70000}, DType::I64, &g).to_vector<int64_t>();
  std::map<int64_t, int64_t> counts;
  for (int64_t x : v) counts[x]++;
  CHECK(counts.size() == 7);
  CHECK(counts.begin()->first == -3);
  CHECK(counts.rbegin()->first == 3);
  for (auto& [value, c] : counts) CHECK(std::abs(c - 10000) < 600);
  // Ranges beyond 32 bits use 64-bit draws.
  std::vector<int64_t> wide = randint(0, int64_t{1} << 40, {1000}, DType::I64, &g).to_vector<int64_t>();
  CHECK(*std::max_element(wide.begin(), wide.end()) > (int64_t{1} << 39));
  CHECK(*std::min_element(wide.begin(), wide.end()) >= 0);
  CHECK(randint(0, 3, {4}, DType::F32, &g).dtype() == DType::F32);
  CHECK_THROWS_WITH(randint(4, 4, {2}), Catch::Contains("randint") && Catch::Contains("low < high"));
  CHECK_THROWS_WITH(rand({2}, DType::I64), Catch::Contains("rand") && Catch::Contains("floating"));
}

TEST_CASE("randint refuses bounds outside its dtype's range, as PyTorch", "[random][parity]") {
  // PyTorch 1.13: torch.randint(-1, 3, (4,), dtype=torch.uint8) raises "from is out of bounds for
  // unsigned char"; (0, 257) "to - 1 is out of bounds"; (0, 256) and bool's (0, 2) are fine.
  using Catch::Contains;
  CHECK_THROWS_WITH(randint(-1, 3, {4}, DType::U8), Contains("randint") && Contains("low = -1") && Contains("u8"));
  CHECK_THROWS_WITH(randint(0, 257, {4}, DType::U8), Contains("randint") && Contains("high - 1 = 256") && Contains("u8"));
  CHECK_THROWS_WITH(randint(0, 3, {4}, DType::Bool), Contains("randint") && Contains("bool"));
  CHECK_THROWS_WITH(randint(0, int64_t{1} << 31 | 1, {4}, DType::I32), Contains("randint") && Contains("i32"));
  CHECK_THROWS_WITH(randint(0, 100000, {4}, DType::F16), Contains("randint") && Contains("f16"));
  Generator g(3);
  std::vector<uint8_t> u = randint(0, 256, {4000}, DType::U8, &g).to_vector<uint8_t>();
  CHECK(*std::max_element(u.begin(), u.end()) == 255);
  std::vector<bool> b = randint(0, 2, {200}, DType::Bool, &g).to_vector<bool>();
  CHECK(std::count(b.begin(), b.end(), true) > 50);
  CHECK(std::count(b.begin(), b.end(), false) > 50);
  CHECK(randint(-128, 128, {8}, DType::I32, &g).dtype() == DType::I32);
  // Beyond the integers f16 holds exactly (2^11) PyTorch only warns; so does minidl.
  std::vector<std::string> warnings;
  auto previous = set_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  Tensor wide = randint(0, 5000, {16}, DType::F16, &g);
  set_warning_handler(previous);
  CHECK(wide.dtype() == DType::F16);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Contains("randint") && Contains("f16"));
}

// ------------------------------------------------------------------------------------ dropout

TEST_CASE("dropout: identity when off, exact inverted scaling when on", "[random][dropout]") {
  Tensor x = ones({10000}).requires_grad_();
  CHECK(dropout(x, 0.5, false).is_same(x));
  CHECK(dropout(x, 0.0, true).is_same(x));
  Generator g(11);
  Tensor y = dropout(x, 0.2, true, &g);
  CHECK(y.grad_fn()->name() == "DropoutBackward");
  std::vector<float> v = y.to_vector<float>();
  int64_t kept = 0;
  bool values_ok = true;
  for (float f : v) {
    values_ok = values_ok && (f == 0.0f || f == 1.25f);  // 1 / (1 - 0.2) is exact in binary
    kept += f != 0.0f;
  }
  CHECK(values_ok);
  CHECK(std::abs(static_cast<double>(kept) / 10000 - 0.8) < 0.02);
  // The backward multiplies by the same mask: for x = 1 the gradient equals the output.
  y.backward(ones({10000}));
  CHECK(x.grad().to_vector<float>() == v);
  // Same generator state, same mask.
  Generator g2(11);
  CHECK(dropout(x.detach(), 0.2, true, &g2).to_vector<float>() == v);
}

TEST_CASE("dropout with p = 1 zeroes values and gradients, bad p is an error", "[random][dropout]") {
  Tensor x = from_vector<float>({1, -2, 3}).requires_grad_();
  Tensor y = dropout(x, 1.0, true);
  CHECK(y.to_vector<float>() == std::vector<float>{0, -0.0f, 0});
  y.sum().backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{0, 0, 0});
  CHECK_THROWS_WITH(dropout(x, 1.5, true), Catch::Contains("dropout") && Catch::Contains("between 0 and 1, but got 1.5"));
  CHECK_THROWS_WITH(dropout(x, -0.1, false), Catch::Contains("dropout"));
  // Low-precision input keeps its dtype.
  Tensor h = dropout(ones({64}, DType::BF16), 0.5, true);
  CHECK(h.dtype() == DType::BF16);
  for (float f : h.to_vector<float>()) CHECK((f == 0.0f || f == 2.0f));
}

TEST_CASE("dropout gradients, first and second order", "[random][dropout][gradcheck]") {
  GradCase c{"dropout", {{4, 5}}, [](const std::vector<Tensor>& in) {
               Generator g(3);  // the same mask on every evaluation
               Tensor y = dropout(in[0], 0.4, true, &g);
               return mul(y, y);
             }};
  CHECK(run_case(c) == "");
}
