// The tensor core: factories, metadata, views sharing storage and version counters, contiguous(),
// dtype conversion, item(), printing, Device and dtype names, in-place ops and version bumps.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "framework/cuda.h"
#include "framework/half.h"
#include "minidl.h"

using namespace minidl;

namespace {
template <class T>
std::vector<T> vec(const Tensor& t) { return t.to_vector<T>(); }
}  // namespace

// ---------------------------------------------------------------- factories

TEST_CASE("zeros, ones, full and the _like forms", "[tensor][factory]") {
  Tensor z = zeros({2, 3});
  CHECK(z.dtype() == DType::F32);
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.strides() == Shape{3, 1});
  CHECK(z.numel() == 6);
  CHECK(z.nbytes() == 24);
  CHECK(z.device() == Device::cpu());
  CHECK(vec<float>(z) == std::vector<float>(6, 0.0f));
  CHECK(vec<double>(ones({3}, DType::F64)) == std::vector<double>{1, 1, 1});
  CHECK(vec<int64_t>(full({2}, 7, DType::I64)) == std::vector<int64_t>{7, 7});
  CHECK(vec<float>(full({2}, -2.5)) == std::vector<float>{-2.5f, -2.5f});
  CHECK(vec<bool>(full({2}, 3.0, DType::Bool)) == std::vector<bool>{true, true});
  CHECK(vec<float>(full({2}, 0.1, DType::BF16)) == std::vector<float>(2, static_cast<float>(bfloat16(0.1f))));

  Tensor h = full({2, 2}, 1.5, DType::F16);
  CHECK(zeros_like(h).dtype() == DType::F16);
  CHECK(zeros_like(h).shape() == Shape{2, 2});
  CHECK(vec<float>(ones_like(h)) == std::vector<float>(4, 1.0f));
  CHECK(vec<float>(full_like(h, 3)) == std::vector<float>(4, 3.0f));
  CHECK(empty_like(h).dtype() == DType::F16);

  Tensor r = zeros({2}, TensorOptions(DType::F64).requires_grad());
  CHECK(r.requires_grad());
  CHECK(r.is_leaf());
  Tensor e = empty({0, 3});
  CHECK(e.numel() == 0);
  CHECK(e.nbytes() == 0);
}

TEST_CASE("scalar_tensor is 0-dim with one element", "[tensor][factory]") {
  Tensor s = scalar_tensor(2.5);
  CHECK(s.dim() == 0);
  CHECK(s.shape().empty());
  CHECK(s.numel() == 1);
  CHECK(s.is_contiguous());
  CHECK(s.item() == 2.5);
  CHECK(scalar_tensor(3, DType::I32).item<int>() == 3);
}

TEST_CASE("arange: count, values and dtype", "[tensor][factory]") {
  Tensor a = arange(5);
  CHECK(a.dtype() == DType::I64);
  CHECK(vec<int64_t>(a) == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(vec<int64_t>(arange(0, 10, 3)) == std::vector<int64_t>{0, 3, 6, 9});
  CHECK(vec<int64_t>(arange(5, 0, -2)) == std::vector<int64_t>{5, 3, 1});
  CHECK(arange(3, 3).numel() == 0);
  CHECK(vec<float>(arange(1, 2.5, 0.5, DType::F32)) == std::vector<float>{1.0f, 1.5f, 2.0f});
  CHECK(arange(0, 1, 0.1, DType::F64).numel() == 10);  // ceil((1 - 0) / 0.1), as PyTorch
  CHECK(vec<double>(arange(0, 1, 0.25, DType::F64)) == std::vector<double>{0, 0.25, 0.5, 0.75});
  CHECK(vec<int64_t>(arange(0, 4.5)) == std::vector<int64_t>{0, 1, 2, 3, 4});  // a fractional end is fine
  CHECK(vec<float>(arange(-1, 1, 0.5, DType::F32)) == std::vector<float>{-1, -0.5f, 0, 0.5f});
  CHECK_THROWS_AS(arange(0, 5, 0), Error);
  CHECK_THROWS_AS(arange(0, 5, -1), Error);
}

TEST_CASE("from_vector and from_blob copy host data with the right dtype and shape", "[tensor][factory]") {
  Tensor a = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(a.dtype() == DType::F32);
  CHECK(a.shape() == Shape{2, 3});
  CHECK(vec<float>(a) == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(from_vector<double>({1, 2}).shape() == Shape{2});
  CHECK(from_vector<int64_t>({1, 2}).dtype() == DType::I64);
  CHECK(from_vector<int32_t>({1, 2}).dtype() == DType::I32);
  CHECK(from_vector<uint8_t>({1, 2}).dtype() == DType::U8);
  Tensor b = from_vector<bool>({true, false, true});
  CHECK(b.dtype() == DType::Bool);
  CHECK(vec<bool>(b) == std::vector<bool>{true, false, true});
  CHECK(vec<float>(from_vector<half>({half(1.5f), half(-2.0f)})) == std::vector<float>{1.5f, -2.0f});
  // With options: converted to the requested dtype.
  Tensor c = from_vector<double>({1.25, 2.75}, {2}, TensorOptions(DType::F32).requires_grad());
  CHECK(c.dtype() == DType::F32);
  CHECK(c.requires_grad());
  CHECK(c.is_leaf());
  CHECK(vec<float>(c) == std::vector<float>{1.25f, 2.75f});
  CHECK_THROWS_WITH(from_vector<float>({1, 2, 3}, {2, 2}), Catch::Contains("from_vector") && Catch::Contains("3 values"));

  std::vector<int32_t> host{10, 20, 30, 40};
  Tensor d = from_blob(host.data(), {2, 2}, DType::I32);
  host[0] = -1;  // from_blob copies: the tensor does not alias the buffer
  CHECK(vec<int32_t>(d) == std::vector<int32_t>{10, 20, 30, 40});
  // The buffer's dtype decides; the options only choose device and requires_grad.
  Tensor e = from_blob(host.data(), {4}, DType::I32, DType::F64);
  CHECK(e.dtype() == DType::I32);
  CHECK(vec<int32_t>(e) == std::vector<int32_t>{-1, 20, 30, 40});
}

// ---------------------------------------------------------------- metadata

TEST_CASE("metadata: size/stride with negative dims, meta_str, contiguity", "[tensor]") {
  Tensor x = zeros({2, 3, 4});
  CHECK(x.size(-1) == 4);
  CHECK(x.size(0) == 2);
  CHECK(x.stride(-1) == 1);
  CHECK(x.stride(0) == 12);
  CHECK(x.meta_str() == "f32[2, 3, 4] on cpu");
  CHECK(x.is_contiguous());
  CHECK_FALSE(x.transpose(0, 2).is_contiguous());
  CHECK(x.slice(0, 0, 1).is_contiguous());  // size-1 dims do not break contiguity
  CHECK_FALSE(x.slice(2, 0, 4, 2).is_contiguous());
  CHECK(zeros({3, 1}).expand({3, 1}).is_contiguous());
  CHECK_FALSE(zeros({3, 1}).expand({3, 4}).is_contiguous());
  CHECK(Tensor().meta_str() == "undefined");
  CHECK_FALSE(Tensor().defined());
  CHECK_THROWS_WITH(Tensor().shape(), Catch::Contains("undefined tensor"));
  x.set_name("fc1.weight");
  CHECK(x.name() == "fc1.weight");
}

// ---------------------------------------------------------------- views

TEST_CASE("views share storage with their base: writes through one are seen by the other", "[tensor][view]") {
  Tensor x = arange(0, 12, 1, DType::F32).reshape({3, 4});
  Tensor row = x.select(0, 1);
  Tensor col = x.select(1, 2);
  Tensor t = x.t();
  Tensor s = x.slice(1, 0, 4, 2);
  CHECK(row.impl()->storage == x.impl()->storage);
  CHECK(t.impl()->storage == x.impl()->storage);
  CHECK(vec<float>(row) == std::vector<float>{4, 5, 6, 7});
  CHECK(vec<float>(col) == std::vector<float>{2, 6, 10});
  CHECK(vec<float>(s) == std::vector<float>{0, 2, 4, 6, 8, 10});
  CHECK(s.strides() == Shape{4, 2});
  CHECK(t.strides() == Shape{1, 4});
  CHECK(col.offset() == 2);

  row.fill_(-1);
  CHECK(vec<float>(x) == std::vector<float>{0, 1, 2, 3, -1, -1, -1, -1, 8, 9, 10, 11});
  t.select(0, 3).fill_(9);  // column 3 of x
  CHECK(vec<float>(x.select(1, 3)) == std::vector<float>{9, 9, 9});
  x.narrow(0, 2, 1).copy_(from_vector<float>({5, 6, 7, 8}));
  CHECK(vec<float>(x.select(0, 2)) == std::vector<float>{5, 6, 7, 8});
  CHECK(vec<float>(col) == std::vector<float>{2, -1, 7});
}

TEST_CASE("view, reshape, flatten, squeeze, unsqueeze, permute, expand: shapes and strides", "[tensor][view]") {
  Tensor x = arange(0, 24, 1, DType::F32);
  Tensor v = x.view({2, 3, 4});
  CHECK(v.shape() == Shape{2, 3, 4});
  CHECK(v.impl()->storage == x.impl()->storage);
  CHECK(x.view({-1, 6}).shape() == Shape{4, 6});
  CHECK(v.flatten().shape() == Shape{24});
  CHECK(v.flatten(1).shape() == Shape{2, 12});
  CHECK(v.flatten(0, 1).shape() == Shape{6, 4});
  CHECK(scalar_tensor(1).flatten().shape() == Shape{1});
  CHECK(v.unsqueeze(0).shape() == Shape{1, 2, 3, 4});
  CHECK(v.unsqueeze(-1).shape() == Shape{2, 3, 4, 1});
  CHECK(v.unsqueeze(1).squeeze(1).shape() == Shape{2, 3, 4});
  CHECK(zeros({1, 3, 1, 2}).squeeze().shape() == Shape{3, 2});
  CHECK(zeros({2, 3}).squeeze(0).shape() == Shape{2, 3});  // not size 1: unchanged
  Tensor p = v.permute({2, 0, 1});
  CHECK(p.shape() == Shape{4, 2, 3});
  CHECK(p.strides() == Shape{1, 12, 4});
  CHECK(v.permute({-1, 0, 1}).shape() == Shape{4, 2, 3});
  Tensor e = from_vector<float>({1, 2, 3}, {3, 1}).expand({2, 3, 4});
  CHECK(e.shape() == Shape{2, 3, 4});
  CHECK(e.strides() == Shape{0, 1, 0});
  CHECK(vec<float>(e.select(0, 1).select(1, 3)) == std::vector<float>{1, 2, 3});
  // reshape of a non-contiguous tensor copies (element order is the logical order).
  Tensor r = v.transpose(0, 2).reshape({-1});
  CHECK(r.is_contiguous());
  CHECK(vec<float>(r).at(1) == 12.0f);
}

TEST_CASE("unsqueeze and squeeze of a non-contiguous tensor are views, as in PyTorch", "[tensor][view]") {
  Tensor x = zeros({3, 4});
  Tensor u = x.t().unsqueeze(0);  // [1, 4, 3]
  CHECK(u.impl()->storage == x.impl()->storage);
  u.select(0, 0).select(0, 1).fill_(5);  // x[:, 1]
  CHECK(vec<float>(x.select(1, 1)) == std::vector<float>{5, 5, 5});
  Tensor s = zeros({3, 1, 4}).transpose(0, 2).squeeze();  // [4, 3], a view
  CHECK(s.shape() == Shape{4, 3});
  Tensor base = zeros({1, 4, 3});
  Tensor sq = base.transpose(1, 2).squeeze();
  CHECK(sq.impl()->storage == base.impl()->storage);
  sq.fill_(2);
  CHECK(vec<float>(base) == std::vector<float>(12, 2.0f));
}

TEST_CASE("views and detach share the version counter and in-place ops bump it once", "[tensor][version]") {
  Tensor x = zeros({2, 3});
  Tensor v = x.view({3, 2});
  Tensor d = x.detach();
  const uint32_t v0 = x.version();
  x.fill_(1);
  CHECK(x.version() == v0 + 1);
  CHECK(v.version() == x.version());
  CHECK(d.version() == x.version());
  v.zero_();
  CHECK(x.version() == v0 + 2);
  d.add_(ones({2, 3}));
  CHECK(x.version() == v0 + 3);
  x.mul_(2.0);
  CHECK(x.version() == v0 + 4);
  x.mul_(full({3}, 0.5));
  CHECK(x.version() == v0 + 5);
  x.select(0, 0).copy_(from_vector<float>({7, 8, 9}));
  CHECK(x.version() == v0 + 6);
  // Out-of-place ops, clone and contiguous of a contiguous tensor do not bump it.
  Tensor y = add(x, x);
  Tensor c = x.clone();
  Tensor k = x.contiguous();
  CHECK(x.version() == v0 + 6);
  CHECK(c.version() == 0);
  CHECK(vec<float>(x) == std::vector<float>{7, 8, 9, 1, 1, 1});
  // A clone does not share the counter.
  c.fill_(0);
  CHECK(x.version() == v0 + 6);
}

TEST_CASE("in-place ops: values, broadcasting, alpha, dtype conversion", "[tensor][inplace]") {
  Tensor x = from_vector<float>({1, 2, 3, 4}, {2, 2});
  x.add_(from_vector<float>({10, 20}), 2.0);  // row broadcast, alpha
  CHECK(vec<float>(x) == std::vector<float>{21, 42, 23, 44});
  x.add_(from_vector<double>({1, 1, 1, 1}, {2, 2}));  // other cast to x's dtype
  CHECK(x.dtype() == DType::F32);
  CHECK(vec<float>(x) == std::vector<float>{22, 43, 24, 45});
  x.mul_(from_vector<float>({2, 2}, {2, 1}));  // column broadcast
  CHECK(vec<float>(x) == std::vector<float>{44, 86, 48, 90});
  x.mul_(0.5);
  CHECK(vec<float>(x) == std::vector<float>{22, 43, 24, 45});
  // copy_: dtype conversion, broadcasting, strided destination.
  Tensor y = zeros({3, 2}, DType::I64);
  y.t().copy_(from_vector<float>({1.9f, -2.9f, 3.5f}));  // truncation toward zero, broadcast over rows
  CHECK(vec<int64_t>(y) == std::vector<int64_t>{1, 1, -2, -2, 3, 3});
  Tensor h = zeros({4}, DType::F16);
  h.copy_(scalar_tensor(0.1, DType::F64));
  CHECK(vec<float>(h) == std::vector<float>(4, static_cast<float>(half(0.1f))));
  // Returns *this for chaining.
  CHECK(&x.zero_() == &x);
  CHECK(vec<float>(x) == std::vector<float>(4, 0.0f));
}

// ---------------------------------------------------------------- contiguous, clone, to

TEST_CASE("contiguous returns the same tensor when already contiguous, else a packed copy", "[tensor]") {
  Tensor x = arange(0, 6, 1, DType::F32).reshape({2, 3});
  CHECK(x.contiguous().is_same(x));
  Tensor t = x.t();
  Tensor c = t.contiguous();
  CHECK_FALSE(c.is_same(t));
  CHECK(c.is_contiguous());
  CHECK(c.strides() == Shape{2, 1});
  CHECK(vec<float>(c) == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK(c.impl()->storage != x.impl()->storage);
  Tensor k = x.clone();
  CHECK(k.impl()->storage != x.impl()->storage);
  k.fill_(0);
  CHECK(vec<float>(x) == std::vector<float>{0, 1, 2, 3, 4, 5});
  // An offset view is contiguous but its data does not start at the storage start.
  Tensor row = x.select(0, 1);
  CHECK(row.is_contiguous());
  CHECK(row.contiguous().is_same(row));
  CHECK(*static_cast<float*>(row.raw_data()) == 3.0f);
}

TEST_CASE("copies of transposed matrices (tile by tile) put every element in place, with dtype conversion", "[tensor]") {
  // Sizes on either side of the 32 x 32 tiles.
  for (const auto& size : {std::pair<int64_t, int64_t>{31, 40}, {32, 32}, {33, 70}, {100, 65}, {1, 50}, {64, 2}}) {
    const int64_t rows = size.first, cols = size.second;  // not a structured binding: clang 14 cannot capture one
    INFO(rows << " x " << cols);
    Tensor base = arange(0, static_cast<double>(rows * cols), 1, DType::F32).reshape({cols, rows});
    // c must be base^T, base's values as `source` holds them.
    auto expect_transposed = [&](const Tensor& c, const Tensor& source) {
      REQUIRE(c.shape() == Shape{rows, cols});
      const std::vector<double> v = c.to_vector<double>(), b = source.to_vector<double>();
      int64_t wrong = 0;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) wrong += v[i * cols + j] != b[j * rows + i];
      CHECK(wrong == 0);
    };
    for (DType dt : {DType::F32, DType::F64, DType::I64}) {
      INFO(dtype_name(dt));
      expect_transposed(cast(base, dt).t().contiguous(), base);
    }
    // Widened and narrowed while transposing.
    const Tensor half_base = cast(base, DType::F16);
    expect_transposed(cast(half_base.t(), DType::F32), half_base);
    expect_transposed(cast(base.t(), DType::BF16), cast(base, DType::BF16));
    expect_transposed(cast(base.t(), DType::F64), base);
    // Into a strided destination: the middle columns of a wider matrix.
    Tensor wide = zeros({rows, cols + 5});
    wide.narrow(1, 2, cols).copy_(base.t());
    expect_transposed(wide.narrow(1, 2, cols).contiguous(), base);
    CHECK(sum(wide.narrow(1, 0, 2)).item() == 0.0);
    CHECK(sum(wide.narrow(1, cols + 2, 3)).item() == 0.0);
  }
}

TEST_CASE("to(dtype) converts as PyTorch and returns the tensor itself for its own dtype", "[tensor][dtype]") {
  Tensor x = from_vector<float>({-1.7f, -0.5f, 0.0f, 0.5f, 2.9f});
  CHECK(x.to(DType::F32).is_same(x));
  CHECK(vec<int64_t>(x.to(DType::I64)) == std::vector<int64_t>{-1, 0, 0, 0, 2});  // truncation
  CHECK(vec<bool>(x.to(DType::Bool)) == std::vector<bool>{true, true, false, true, true});
  CHECK(vec<double>(x.to(DType::F64)) == std::vector<double>{-1.7f, -0.5f, 0.0f, 0.5f, 2.9f});
  CHECK(vec<float>(from_vector<bool>({true, false}).to(DType::F32)) == std::vector<float>{1, 0});
  CHECK(vec<uint8_t>(from_vector<int64_t>({255, 3}).to(DType::U8)) == std::vector<uint8_t>{255, 3});
  CHECK(vec<float>(from_vector<int64_t>({1 << 20, -7}).to(DType::F32)) == std::vector<float>{1 << 20, -7});
  CHECK(x.to(Device::cpu()).is_same(x));
}

TEST_CASE("item() reads one element, in any dtype", "[tensor]") {
  CHECK(from_vector<float>({2.5f}).item() == 2.5);
  CHECK(full({1, 1}, 7, DType::I64).item<int64_t>() == 7);
  CHECK(scalar_tensor(1, DType::Bool).item<bool>());
  CHECK(full({}, 0.25, DType::BF16).item() == 0.25);
  CHECK(arange(0, 10, 1, DType::F32).select(0, 7).item() == 7.0);
  CHECK_THROWS_WITH(zeros({2}).item(), Catch::Contains("item") && Catch::Contains("2 elements"));
  CHECK_THROWS_AS(zeros({0}).item(), Error);
}

TEST_CASE("data_ptr checks the dtype", "[tensor]") {
  Tensor x = zeros({2});
  CHECK(x.data_ptr<float>() != nullptr);
  CHECK_THROWS_WITH(x.data_ptr<double>(), Catch::Contains("f32") && Catch::Contains("f64"));
}

// ---------------------------------------------------------------- autograd fields

TEST_CASE("requires_grad_ and detach", "[tensor][autograd]") {
  Tensor x = ones({2});
  CHECK_FALSE(x.requires_grad());
  x.requires_grad_();
  CHECK(x.requires_grad());
  Tensor y = mul(x, 2.0);
  CHECK(y.requires_grad());
  CHECK_FALSE(y.is_leaf());
  CHECK_THROWS_WITH(y.requires_grad_(false), Catch::Contains("leaf"));
  CHECK_THROWS_WITH(ones({2}, DType::I64).requires_grad_(), Catch::Contains("floating") && Catch::Contains("i64"));
  Tensor d = y.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.is_leaf());
  CHECK(d.impl()->storage == y.impl()->storage);
  CHECK_THROWS_WITH(ones({2}).set_grad(ones({3})), Catch::Contains("set_grad"));
}

// ---------------------------------------------------------------- printing

TEST_CASE("printing shows values, dtype, shape and grad_fn", "[tensor][print]") {
  CHECK(to_string(from_vector<float>({1, 2.5f, -3})) == "tensor([1, 2.5, -3], dtype=f32)");
  CHECK(to_string(from_vector<int64_t>({1, 2}, {2, 1})) == "tensor([[1],\n        [2]], dtype=i64, shape=[2, 1])");
  CHECK(to_string(scalar_tensor(0.5, DType::F64)) == "tensor(0.5, dtype=f64)");
  CHECK(to_string(from_vector<bool>({true, false})) == "tensor([true, false], dtype=bool)");
  CHECK(to_string(Tensor()) == "tensor(undefined)");
  CHECK(to_string(zeros({0})) == "tensor([], dtype=f32)");
  Tensor w = ones({2}).requires_grad_();
  CHECK_THAT(to_string(w), Catch::Contains("requires_grad=true"));
  Tensor y = mul(w, w);
  CHECK_THAT(to_string(y), Catch::Contains("grad_fn=<MulBackward>") && !Catch::Contains("requires_grad"));
  // As PyTorch (threshold 1000, edgeitems 3): up to 1000 elements print in full; beyond, each long
  // dim keeps its first and last three values.
  CHECK_THAT(to_string(arange(0, 10, 1, DType::F32)), Catch::StartsWith("tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"));
  std::string full = to_string(arange(0, 1000, 1, DType::F32));
  CHECK_THAT(full, Catch::Contains(" 500, ") && !Catch::Contains("..."));
  std::string s = to_string(arange(0, 1001, 1, DType::F32));
  CHECK_THAT(s, Catch::StartsWith("tensor([0, 1, 2, ..., 998, 999, 1000]") && Catch::Contains("shape=[1001]"));
  std::string m = to_string(arange(0, 1010, 1, DType::F32).reshape({101, 10}));
  CHECK_THAT(m, Catch::StartsWith("tensor([[0, 1, 2, ..., 7, 8, 9],") && Catch::Contains("...,") &&
                    Catch::Contains("[1000, 1001, 1002, ..., 1007, 1008, 1009]]"));
  // Printing a view prints the view's elements.
  CHECK_THAT(to_string(arange(0, 6, 1, DType::F32).reshape({2, 3}).t().select(0, 2)), Catch::StartsWith("tensor([2, 5]"));
  CHECK_THAT(to_string(from_vector<float>({std::nanf(""), INFINITY})), Catch::Contains("nan") && Catch::Contains("inf"));
  // operator<< leaves the stream's formatting state as it found it.
  std::ostringstream os;
  os << from_vector<float>({1.0f}) << ' ' << 3.14159265;
  CHECK(os.str() == "tensor([1], dtype=f32) 3.14159");
}

// ---------------------------------------------------------------- devices and dtype names

TEST_CASE("Device parse and str round-trip", "[tensor][device]") {
  CHECK(Device::parse("cpu") == Device::cpu());
  CHECK(Device::parse("cuda") == Device::cuda(0));
  CHECK(Device::parse("cuda:3") == Device::cuda(3));
  CHECK(Device::cpu().str() == "cpu");
  CHECK(Device::cuda(1).str() == "cuda:1");
  CHECK(Device::parse(Device::cuda(2).str()) == Device::cuda(2));
  CHECK(Device::cuda(0) != Device::cuda(1));
  CHECK(Device::cpu() != Device::cuda());
  CHECK(Device::cuda().is_cuda());
  CHECK(Device::cpu().is_cpu());
  CHECK(std::string(device_type_name(DeviceType::CUDA)) == "cuda");
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "CPU", "", "cuda:1:2", "cuda:99999999999999999999"}) {
    INFO(bad);
    CHECK_THROWS_AS(Device::parse(bad), Error);
  }
  CHECK_THROWS_WITH(Device::parse("tpu"), Catch::Contains("Device::parse") && Catch::Contains("'tpu'"));
}

TEST_CASE("dtype_from_name accepts short and PyTorch names", "[tensor][dtype]") {
  CHECK(dtype_from_name("f32") == DType::F32);
  CHECK(dtype_from_name("float32") == DType::F32);
  CHECK(dtype_from_name("float") == DType::F32);
  CHECK(dtype_from_name("f64") == DType::F64);
  CHECK(dtype_from_name("double") == DType::F64);
  CHECK(dtype_from_name("f16") == DType::F16);
  CHECK(dtype_from_name("half") == DType::F16);
  CHECK(dtype_from_name("float16") == DType::F16);
  CHECK(dtype_from_name("bf16") == DType::BF16);
  CHECK(dtype_from_name("bfloat16") == DType::BF16);
  CHECK(dtype_from_name("i64") == DType::I64);
  CHECK(dtype_from_name("long") == DType::I64);
  CHECK(dtype_from_name("i32") == DType::I32);
  CHECK(dtype_from_name("int") == DType::I32);
  CHECK(dtype_from_name("u8") == DType::U8);
  CHECK(dtype_from_name("uint8") == DType::U8);
  CHECK(dtype_from_name("bool") == DType::Bool);
  for (int t = 0; t < kNumDTypes; ++t) {
    DType d = static_cast<DType>(t);
    CHECK(dtype_from_name(dtype_name(d)) == d);  // every printed name parses back
  }
  CHECK_THROWS_WITH(dtype_from_name("f8"), Catch::Contains("dtype_from_name") && Catch::Contains("'f8'"));
}

TEST_CASE("promote_types: the table PyTorch uses", "[tensor][dtype]") {
  CHECK(promote_types(DType::F16, DType::BF16) == DType::F32);
  CHECK(promote_types(DType::BF16, DType::F16) == DType::F32);
  CHECK(promote_types(DType::F16, DType::F32) == DType::F32);
  CHECK(promote_types(DType::BF16, DType::F64) == DType::F64);
  CHECK(promote_types(DType::I64, DType::F16) == DType::F16);
  CHECK(promote_types(DType::I32, DType::I64) == DType::I64);
  CHECK(promote_types(DType::U8, DType::I32) == DType::I32);
  CHECK(promote_types(DType::Bool, DType::U8) == DType::U8);
  CHECK(promote_types(DType::Bool, DType::Bool) == DType::Bool);
  for (int a = 0; a < kNumDTypes; ++a)
    for (int b = 0; b < kNumDTypes; ++b)
      CHECK(promote_types(static_cast<DType>(a), static_cast<DType>(b)) ==
            promote_types(static_cast<DType>(b), static_cast<DType>(a)));
}

TEST_CASE("tensors on a device without a backend fail with a clear error", "[tensor][device]") {
  if (cuda::is_available()) {
    Tensor g = from_vector<float>({1, 2}).to(Device::cuda());
    CHECK(g.device() == Device::cuda());
    CHECK(vec<float>(g) == std::vector<float>{1, 2});
  } else {
    CHECK_THROWS_AS(empty({2}, Device::cuda()), Error);
    CHECK_THROWS_WITH(ones({2}).to(Device::cuda()), Catch::Contains("cuda"));
  }
}
