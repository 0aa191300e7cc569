// Error messages: every failure a user can cause is a minidl::Error that names the op and says what
// it got (shapes, dtypes, devices, dims) and, where useful, what it expected.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "framework/cuda.h"
#include "minidl.h"

using namespace minidl;
using Catch::Contains;

namespace {

// A tensor that claims to live on cuda:0 but is backed by host memory that is never touched: only
// for checks that must fail before any kernel runs. Used only where no GPU is available.
Tensor fake_cuda(const Shape& shape, DType dt = DType::F32) {
  static std::vector<char> host(1 << 16);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(host.data(), static_cast<size_t>(numel_of(shape)) * element_size(dt), Device::cuda());
  impl->sizes = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dt;
  return Tensor(std::move(impl));
}

}  // namespace

TEST_CASE("errors are minidl::Error, a std::runtime_error, with 'op: message'", "[errors]") {
  try {
    mm(zeros({2, 3}), zeros({4, 5}));
    FAIL("no exception");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).rfind("mm: ", 0) == 0);
  }
  CHECK_THROWS_AS(mm(zeros({2, 3}), zeros({4, 5})), std::runtime_error);
}

TEST_CASE("broadcasting failures name the op and both shapes", "[errors][shape]") {
  Tensor a = zeros({2, 3}), b = zeros({4});
  CHECK_THROWS_WITH(add(a, b), Contains("add") && Contains("[2, 3]") && Contains("[4]") && Contains("broadcast"));
  CHECK_THROWS_WITH(sub(a, b), Contains("sub:") && Contains("[2, 3]"));
  CHECK_THROWS_WITH(mul(a, b), Contains("mul:") && Contains("[4]"));
  CHECK_THROWS_WITH(div(a, b), Contains("div:"));
  CHECK_THROWS_WITH(pow(a, b), Contains("pow:"));
  CHECK_THROWS_WITH(maximum(a, b), Contains("maximum:"));
  CHECK_THROWS_WITH(minimum(a, b), Contains("minimum:"));
  CHECK_THROWS_WITH(lt(a, b), Contains("lt:") && Contains("[2, 3]"));
  CHECK_THROWS_WITH(eq(a, b), Contains("eq:"));
  CHECK_THROWS_WITH(where(gt(a, 0.0), a, b), Contains("where:") && Contains("[4]"));
  CHECK_THROWS_WITH(where(gt(b, 0.0), a, a), Contains("where:") && Contains("[4]"));
  CHECK_THROWS_WITH(a + b, Contains("add:"));
  // The failing dim and its sizes.
  CHECK_THROWS_WITH(add(zeros({2, 3, 4}), zeros({5, 1})), Contains("dim 1: 3 vs 5"));
}

TEST_CASE("dtype errors name the op and the dtypes", "[errors][dtype]") {
  CHECK_THROWS_WITH(mm(zeros({2, 2}), zeros({2, 2}, DType::F64)), Contains("mm") && Contains("f32") && Contains("f64"));
  // Integer products run on CPU (as PyTorch); bool does not.
  CHECK_THROWS_WITH(mm(zeros({2, 2}, DType::Bool), zeros({2, 2}, DType::Bool)), Contains("mm") && Contains("floating") && Contains("bool"));
  CHECK_THROWS_WITH(bmm(zeros({1, 2, 2}, DType::F16), zeros({1, 2, 2}, DType::BF16)), Contains("bmm") && Contains("f16") && Contains("bf16"));
  CHECK_THROWS_WITH(matmul(zeros({2}), zeros({2}, DType::F64)), Contains("matmul") && Contains("f64"));
  CHECK_THROWS_WITH(addmm(zeros({2}, DType::F64), zeros({2, 2}), zeros({2, 2})), Contains("addmm") && Contains("f64"));
  CHECK_THROWS_WITH(linear(zeros({2, 3}, DType::F16), zeros({4, 3})), Contains("linear") && Contains("f16") && Contains("f32"));
  CHECK_THROWS_WITH(linear(zeros({2, 3}), zeros({4, 3}), zeros({4}, DType::F64)), Contains("linear") && Contains("bias") && Contains("f64"));
  CHECK_THROWS_WITH(where(zeros({2}), zeros({2}), zeros({2})), Contains("where") && Contains("bool") && Contains("f32[2]"));
  CHECK_THROWS_WITH(mean(zeros({2}, DType::I64)), Contains("mean") && Contains("i64"));
  CHECK_THROWS_WITH(var(zeros({2}, DType::I32)), Contains("var") && Contains("i32"));
  CHECK_THROWS_WITH(pow(ones({2}, DType::Bool), ones({2}, DType::Bool)), Contains("pow") && Contains("bool"));
  CHECK_THROWS_WITH(ones({2}, DType::I64).requires_grad_(), Contains("requires_grad_") && Contains("i64"));
  CHECK_THROWS_WITH(zeros({2}).data_ptr<int64_t>(), Contains("data_ptr") && Contains("f32") && Contains("i64"));
}

TEST_CASE("matrix-product shape errors show the operand shapes", "[errors][linear]") {
  CHECK_THROWS_WITH(mm(zeros({2, 3}), zeros({4, 5})), Contains("mm") && Contains("2x3") && Contains("4x5"));
  CHECK_THROWS_WITH(mm(zeros({3}), zeros({3, 2})), Contains("mm") && Contains("2-D") && Contains("f32[3]"));
  CHECK_THROWS_WITH(bmm(zeros({2, 3, 4}), zeros({3, 4, 5})), Contains("bmm") && Contains("2 vs 3"));
  CHECK_THROWS_WITH(bmm(zeros({2, 3, 4}), zeros({2, 5, 5})), Contains("bmm") && Contains("[2, 3, 4]") && Contains("[2, 5, 5]"));
  CHECK_THROWS_WITH(bmm(zeros({3, 4}), zeros({4, 5})), Contains("bmm") && Contains("3-D"));
  CHECK_THROWS_WITH(matmul(zeros({3}), zeros({4})), Contains("matmul") && Contains("[3]") && Contains("[4]"));
  CHECK_THROWS_WITH(matmul(zeros({2, 3}), zeros({4})), Contains("matmul") && Contains("[2, 3]") && Contains("[4]"));
  CHECK_THROWS_WITH(matmul(zeros({3}), zeros({4, 2})), Contains("matmul") && Contains("[4, 2]"));
  CHECK_THROWS_WITH(matmul(zeros({2, 2, 3}), zeros({4, 5})), Contains("matmul") && Contains("[2, 2, 3]"));
  CHECK_THROWS_WITH(matmul(zeros({2, 2, 3}), zeros({3, 3, 5})), Contains("matmul") && Contains("[2]") && Contains("[3]"));
  CHECK_THROWS_WITH(matmul(scalar_tensor(1), zeros({2})), Contains("matmul") && Contains("at least 1 dimension"));
  CHECK_THROWS_WITH(linear(zeros({2, 3}), zeros({4, 5})), Contains("linear") && Contains("f32[2, 3]") && Contains("f32[4, 5]"));
  CHECK_THROWS_WITH(linear(zeros({2, 3}), zeros({3})), Contains("linear") && Contains("2-D"));
  CHECK_THROWS_WITH(linear(zeros({2, 3}), zeros({4, 3}), zeros({5})), Contains("linear") && Contains("bias") && Contains("[5]"));
  CHECK_THROWS_WITH(addmm(zeros({3}), zeros({2, 2}), zeros({2, 4})), Contains("addmm") && Contains("[3]") && Contains("[2, 4]"));
  CHECK_THROWS_WITH(addmm(zeros({2}), zeros({2, 3}), zeros({2, 4})), Contains("addmm") && Contains("2x3") && Contains("2x4"));
}

TEST_CASE("dim out of range names the op, the dim and the valid range", "[errors][dim]") {
  Tensor x = zeros({2, 3});
  CHECK_THROWS_WITH(sum(x, {2}), Contains("sum") && Contains("dim 2") && Contains("[-2, 1]"));
  CHECK_THROWS_WITH(sum(x, {-3}), Contains("sum") && Contains("dim -3"));
  CHECK_THROWS_WITH(sum(x, {1, -1}), Contains("sum") && Contains("multiple times"));
  CHECK_THROWS_WITH(mean(x, {5}), Contains("mean") && Contains("dim 5"));
  CHECK_THROWS_WITH(var(x, {5}), Contains("var") && Contains("dim 5"));
  CHECK_THROWS_WITH(max(x, 2), Contains("max") && Contains("dim 2"));
  CHECK_THROWS_WITH(min(x, -3), Contains("min") && Contains("dim -3"));
  CHECK_THROWS_WITH(argmax(x, 4), Contains("argmax") && Contains("dim 4"));
  CHECK_THROWS_WITH(x.transpose(0, 2), Contains("transpose") && Contains("dim 2"));
  CHECK_THROWS_WITH(x.permute({0, 2}), Contains("permute") && Contains("dim 2"));
  CHECK_THROWS_WITH(x.permute({0}), Contains("permute") && Contains("1") && Contains("2 dims"));
  CHECK_THROWS_WITH(x.permute({1, 1}), Contains("permute") && Contains("repeated dim 1"));
  CHECK_THROWS_WITH(x.slice(2, 0, 1), Contains("slice") && Contains("dim 2"));
  CHECK_THROWS_WITH(x.narrow(-3, 0, 1), Contains("narrow") && Contains("dim -3"));
  CHECK_THROWS_WITH(x.select(3, 0), Contains("select") && Contains("dim 3"));
  CHECK_THROWS_WITH(x.unsqueeze(3), Contains("unsqueeze") && Contains("dim 3") && Contains("[-3, 2]"));
  CHECK_THROWS_WITH(x.squeeze(2), Contains("squeeze") && Contains("dim 2"));
  CHECK_THROWS_WITH(x.flatten(0, 5), Contains("flatten") && Contains("dim 5"));
  CHECK_THROWS_WITH(x.size(2), Contains("size") && Contains("dim 2"));
  CHECK_THROWS_WITH(x.stride(-3), Contains("stride") && Contains("dim -3"));
  CHECK_THROWS_WITH(cat({x, x}, 2), Contains("cat") && Contains("dim 2"));
  CHECK_THROWS_WITH(stack({x, x}, 3), Contains("stack") && Contains("dim 3"));
  CHECK_THROWS_WITH(split(x, 1, 2), Contains("split") && Contains("dim 2"));
  CHECK_THROWS_WITH(chunk(x, 2, -3), Contains("chunk") && Contains("dim -3"));
}

TEST_CASE("view, reshape and other view errors", "[errors][view]") {
  Tensor x = zeros({3, 2});
  CHECK_THROWS_WITH(x.t().view({6}), Contains("view") && Contains("not contiguous") && Contains("reshape"));
  CHECK_THROWS_WITH(x.view({4, 2}), Contains("view") && Contains("[4, 2]") && Contains("size 6"));
  CHECK_THROWS_WITH(x.reshape({4, -1}), Contains("reshape") && Contains("[4, -1]") && Contains("size 6"));
  CHECK_THROWS_WITH(x.reshape({5}), Contains("reshape") && Contains("[5]") && Contains("size 6"));
  CHECK_THROWS_WITH(x.t().reshape({7}), Contains("reshape") && Contains("size 6"));
  CHECK_THROWS_WITH(x.reshape({-1, -1}), Contains("reshape") && Contains("only one dimension can be inferred"));
  CHECK_THROWS_WITH(x.reshape({-2, 3}), Contains("reshape") && Contains("-2"));
  CHECK_THROWS_WITH(zeros({0, 2}).reshape({-1, 0}), Contains("reshape"));
  CHECK_THROWS_WITH(x.flatten(1, 0), Contains("flatten") && Contains("start_dim"));
  CHECK_THROWS_WITH(x.slice(0, 0, 2, 0), Contains("slice") && Contains("step"));
  CHECK_THROWS_WITH(x.narrow(0, 2, 2), Contains("narrow") && Contains("exceeds") && Contains("3"));
  CHECK_THROWS_WITH(x.select(0, 3), Contains("select") && Contains("index 3") && Contains("size 3"));
  CHECK_THROWS_WITH(x.select(1, -3), Contains("select") && Contains("index -3"));
  CHECK_THROWS_WITH(x.expand({3, 4}), Contains("expand") && Contains("[3, 2]") && Contains("[3, 4]"));
  CHECK_THROWS_WITH(x.expand({2}), Contains("expand") && Contains("number of sizes"));
  CHECK_THROWS_WITH(zeros({2, 3, 4}).t(), Contains("t:") && Contains("3"));
}

TEST_CASE("join and split errors", "[errors][join]") {
  CHECK_THROWS_WITH(cat({}), Contains("cat") && Contains("non-empty"));
  CHECK_THROWS_WITH(cat({zeros({2, 3}), zeros({2, 4})}, 0), Contains("cat") && Contains("expected size 3") && Contains("size 4"));
  CHECK_THROWS_WITH(cat({zeros({2, 3}), zeros({3})}), Contains("cat") && Contains("same number of dimensions"));
  CHECK_THROWS_WITH(cat({scalar_tensor(1), scalar_tensor(2)}), Contains("cat") && Contains("zero-dimensional"));
  CHECK_THROWS_WITH(stack({zeros({2}), zeros({3})}), Contains("stack") && Contains("[2]") && Contains("[3]"));
  CHECK_THROWS_WITH(stack({}), Contains("stack") && Contains("non-empty"));
  CHECK_THROWS_WITH(split(zeros({4}), 0), Contains("split") && Contains("split_size"));
  CHECK_THROWS_WITH(chunk(zeros({4}), 0), Contains("chunk") && Contains("chunks"));
  CHECK_THROWS_WITH(cat({zeros({2}), Tensor()}), Contains("cat") && Contains("undefined"));
}

TEST_CASE("reductions of empty tensors", "[errors][reduce]") {
  CHECK_THROWS_WITH(max(zeros({0})), Contains("max") && Contains("empty"));
  CHECK_THROWS_WITH(min(zeros({2, 0})), Contains("min") && Contains("empty"));
  CHECK_THROWS_WITH(max(zeros({2, 0}), 1), Contains("max") && Contains("zero-size dimension 1"));
  CHECK_THROWS_WITH(sum_to(zeros({2, 3}), {4, 2, 3}), Contains("sum_to") && Contains("[2, 3]") && Contains("[4, 2, 3]"));
  CHECK_THROWS_WITH(sum_to(zeros({2, 3}), {2, 2}), Contains("sum_to") && Contains("[2, 2]"));
}

TEST_CASE("in-place op errors", "[errors][inplace]") {
  Tensor x = zeros({2, 3});
  CHECK_THROWS_WITH(x.add_(zeros({4})), Contains("add_") && Contains("[2, 3]") && Contains("[4]"));
  CHECK_THROWS_WITH(x.add_(zeros({2, 2, 3})), Contains("add_") && Contains("[2, 2, 3]"));
  CHECK_THROWS_WITH(x.mul_(zeros({3, 3})), Contains("mul_") && Contains("[3, 3]"));
  CHECK_THROWS_WITH(x.copy_(zeros({3, 2})), Contains("copy_") && Contains("[3, 2]"));
  CHECK_THROWS_WITH(x.t().add_(ones({3, 2})), Contains("add_") && Contains("contiguous"));
  CHECK_THROWS_WITH(x.t().mul_(2.0), Contains("mul_") && Contains("contiguous"));
  Tensor w = ones({2}).requires_grad_();
  CHECK_THROWS_WITH(w.fill_(0), Contains("fill_") && Contains("requires grad"));
  CHECK_THROWS_WITH(w.zero_(), Contains("fill_") && Contains("requires grad"));
  CHECK_THROWS_WITH(w.add_(ones({2})), Contains("add_") && Contains("requires grad"));
  CHECK_THROWS_WITH(w.copy_(ones({2})), Contains("copy_") && Contains("NoGradGuard"));
  CHECK_THROWS_WITH(x.copy_(Tensor()), Contains("copy_") && Contains("undefined"));
}

TEST_CASE("factory and conversion errors", "[errors][factory]") {
  CHECK_THROWS_WITH(empty({2, -1}), Contains("empty") && Contains("negative") && Contains("[2, -1]"));
  CHECK_THROWS_WITH(zeros({-3}), Contains("negative"));
  CHECK_THROWS_WITH(from_vector<float>({1, 2}, {3}), Contains("from_vector") && Contains("2 values") && Contains("[3]"));
  CHECK_THROWS_WITH(arange(0, 1, 0), Contains("arange") && Contains("nonzero"));
  CHECK_THROWS_WITH(arange(1, 0, 1), Contains("arange") && Contains("inconsistent"));
  const double inf = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(arange(0, inf), Contains("arange") && Contains("finite") && Contains("inf"));
  CHECK_THROWS_WITH(arange(-inf, 0), Contains("arange") && Contains("finite"));
  CHECK_THROWS_WITH(arange(0, 1, std::nan("")), Contains("arange") && Contains("finite"));
  CHECK_THROWS_WITH(arange(0, 1e300, 1, DType::F64), Contains("arange") && Contains("more than int64"));
  CHECK_THROWS_WITH(arange(0, 1, 0.25), Contains("arange") && Contains("0.25") && Contains("i64") && Contains("F32"));
  CHECK_THROWS_WITH(arange(0.5, 3, 1, DType::I32), Contains("arange") && Contains("0.5") && Contains("i32"));
  CHECK_THROWS_WITH(zeros({2}).item(), Contains("item") && Contains("2 elements"));
  CHECK_THROWS_WITH(zeros({3}).item<int64_t>(), Contains("item") && Contains("3 elements"));
  CHECK_THROWS_WITH(dtype_from_name("float8"), Contains("dtype_from_name") && Contains("float8"));
  CHECK_THROWS_WITH(Device::parse("gpu:0"), Contains("Device::parse") && Contains("gpu:0"));
  CHECK_THROWS_WITH(Tensor().dim(), Contains("undefined tensor"));
  CHECK_THROWS_WITH(add(Tensor(), zeros({1})), Contains("add") && Contains("undefined"));
  CHECK_THROWS_WITH(exp(Tensor()), Contains("exp") && Contains("undefined"));
  CHECK_THROWS_WITH(sum(Tensor()), Contains("sum") && Contains("undefined"));
  CHECK_THROWS_WITH(mm(Tensor(), zeros({1, 1})), Contains("mm") && Contains("undefined"));
}

TEST_CASE("element and byte counts that overflow int64 are errors naming the op and the shape", "[errors][factory]") {
  const int64_t big = int64_t{1} << 32, huge = int64_t{1} << 62;
  CHECK_THROWS_WITH(zeros({big, big}), Contains("empty") && Contains("[4294967296, 4294967296]") && Contains("overflows int64"));
  // An empty tensor whose strides would overflow is refused too (its element count is 0).
  CHECK_THROWS_WITH(empty({0, huge, huge}), Contains("empty") && Contains("overflows int64"));
  CHECK_THROWS_WITH(empty({huge}, TensorOptions(DType::F64)), Contains("empty") && Contains("bytes"));
  CHECK_THROWS_WITH(zeros({0}).reshape({big, big, 0}), Contains("reshape") && Contains("overflows int64"));
  CHECK_THROWS_WITH(zeros({0}).reshape({big, big, 0, -1}), Contains("reshape") && Contains("overflows int64"));
  CHECK(empty({0, huge}).numel() == 0);
  CHECK(empty({huge - 1, 0}).numel() == 0);
}

TEST_CASE("autograd misuse errors", "[errors][autograd]") {
  Tensor x = ones({3}).requires_grad_();
  CHECK_THROWS_WITH(mul(x, 2.0).backward(), Contains("backward") && Contains("scalar outputs") && Contains("f32[3]"));
  CHECK_THROWS_WITH(ones({1}).backward(), Contains("backward") && Contains("does not require grad"));
  CHECK_THROWS_WITH(mul(x, 2.0).sum().backward(ones({2})), Contains("backward") && Contains("[2]"));
  CHECK_THROWS_WITH(mul(x, 2.0).requires_grad_(false), Contains("requires_grad_") && Contains("leaf"));
  CHECK_THROWS_WITH(x.set_grad(ones({2})), Contains("set_grad") && Contains("f32[2]") && Contains("f32[3]"));
  CHECK_THROWS_WITH(ones({2}).register_hook([](const Tensor& g) { return g; }), Contains("register_hook"));
  CHECK_THROWS_WITH(autograd::grad({mul(x, 2.0).sum()}, {ones({1})}), Contains("grad") && Contains("input 0"));
}

TEST_CASE("a CUDA device without a GPU (or without the backend) is a clear error, not a crash", "[errors][device]") {
  if (cuda::is_available()) {
    WARN("a CUDA device is available: the no-GPU error paths are not exercised here");
    CHECK_THROWS_WITH(empty({2}, Device::cuda(cuda::device_count())), Contains("empty") && Contains("CUDA device"));
    return;
  }
  CHECK_THROWS_AS(empty({2}, Device::cuda()), Error);
  const std::string why = cuda::is_compiled() ? "no CUDA GPU" : "no CUDA backend";
  CHECK_THROWS_WITH(empty({2}, Device::cuda()), Contains("empty") && Contains("cuda:0") && Contains(why));
  CHECK_THROWS_WITH(zeros({2, 2}, Device::cuda()), Contains("cuda:0") && Contains(why));
  CHECK_THROWS_WITH(ones({2}, TensorOptions(DType::F16).device(Device::cuda(1))), Contains("cuda:1"));
  CHECK_THROWS_WITH(ones({2}).to(Device::cuda()), Contains("to:") && Contains("cuda:0") && Contains(why));
  CHECK_THROWS_WITH(from_vector<float>({1, 2}, {2}, TensorOptions().device(Device::cuda())), Contains("cuda:0"));
  CHECK_THROWS_WITH(arange(4, TensorOptions(DType::I64).device(Device::cuda())), Contains("cuda:0"));
}

TEST_CASE("device mismatches name the op and both devices", "[errors][device]") {
  if (cuda::is_available()) {
    WARN("a CUDA device is available: mismatches are tested with real device tensors");
    Tensor g = ones({2}).to(Device::cuda());
    CHECK_THROWS_WITH(add(ones({2}), g), Contains("add") && Contains("cpu") && Contains("cuda:0"));
    CHECK_THROWS_WITH(mm(ones({2, 2}), ones({2, 2}).to(Device::cuda())), Contains("mm") && Contains("cuda:0"));
    return;
  }
  Tensor c = zeros({2, 2});
  Tensor g = fake_cuda({2, 2});
  CHECK(g.device() == Device::cuda());
  CHECK_THROWS_WITH(add(c, g), Contains("add") && Contains("same device") && Contains("f32[2, 2] on cpu") && Contains("on cuda:0"));
  CHECK_THROWS_WITH(mul(g, c), Contains("mul") && Contains("cuda:0") && Contains("cpu"));
  CHECK_THROWS_WITH(lt(c, g), Contains("lt") && Contains("cuda:0"));
  CHECK_THROWS_WITH(where(gt(c, 0.0), c, g), Contains("where") && Contains("cuda:0"));
  CHECK_THROWS_WITH(mm(c, g), Contains("mm") && Contains("cuda:0"));
  CHECK_THROWS_WITH(bmm(c.unsqueeze(0), g.unsqueeze(0)), Contains("bmm") && Contains("cuda:0"));
  CHECK_THROWS_WITH(matmul(c, g), Contains("matmul") && Contains("cuda:0"));
  CHECK_THROWS_WITH(linear(c, g), Contains("linear") && Contains("cuda:0"));
  CHECK_THROWS_WITH(linear(c, c, fake_cuda({2})), Contains("linear") && Contains("cuda:0"));
  CHECK_THROWS_WITH(addmm(zeros({2}), c, g), Contains("addmm") && Contains("cuda:0"));
  CHECK_THROWS_WITH(cat({c, g}), Contains("cat") && Contains("cuda:0"));
  CHECK_THROWS_WITH(c.add_(g), Contains("add_") && Contains("cuda:0"));
  CHECK_THROWS_WITH(c.mul_(g), Contains("mul_") && Contains("cuda:0"));
  // An op on a device whose kernels are not in this build names the op and the missing key.
  CHECK_THROWS_WITH(exp(g), Contains("exp") && Contains("no kernel for (cuda, f32)"));
  CHECK_THROWS_WITH(relu(g), Contains("relu") && Contains("(cuda, f32)"));
  CHECK_THROWS_WITH(add(g, g), Contains("add") && Contains("(cuda, f32)"));
  CHECK_THROWS_WITH(mul(g, 2.0), Contains("mul") && Contains("(cuda, f32)"));
  CHECK_THROWS_WITH(neg(g), Contains("neg") && Contains("(cuda, f32)"));
  CHECK_THROWS_WITH(gt(g, 0.0), Contains("gt") && Contains("(cuda, f32)"));
  CHECK_THROWS_WITH(sum(g), Contains("sum") && Contains("(cuda, f32)"));
  CHECK_THROWS_WITH(max(g, 0), Contains("max") && Contains("(cuda, f32)"));
  CHECK_THROWS_WITH(mm(g, g), Contains("mm") && Contains("(cuda, f32)"));
  CHECK_THROWS_WITH(clamp(g, 0.0, 1.0), Contains("clamp") && Contains("(cuda, f32)"));
  CHECK_THROWS_WITH(g.to(Device::cpu()), Contains("(cuda, f32)"));
  CHECK_THROWS_WITH(c.copy_(g), Contains("copy_") && Contains("(cuda, f32)"));
}

TEST_CASE("library warnings go to the warning handler, which can capture, silence and restore", "[errors][warnings]") {
  std::vector<std::string> seen;
  WarningHandler previous = set_warning_handler([&](const std::string& m) { seen.push_back(m); });
  CHECK_FALSE(static_cast<bool>(previous));  // the default was installed
  {
    amp::autocast scope(DeviceType::CPU, DType::F32);  // f32 CPU autocast: warns and disables
    CHECK_FALSE(amp::is_autocast_enabled(DeviceType::CPU));
  }
  if (!cuda::is_available()) {
    amp::GradScaler scaler(Device::cuda());
    CHECK_FALSE(scaler.is_enabled());
  }
  REQUIRE(!seen.empty());
  CHECK_THAT(seen[0], Contains("target dtype f32 is not supported") && Contains("disabling autocast"));
  if (!cuda::is_available()) CHECK_THAT(seen.back(), Contains("GradScaler is enabled, but CUDA is not available"));
  // Silenced: nothing reaches anyone; restoring gives back the capturing handler.
  WarningHandler capturing = set_warning_handler([](const std::string&) {});
  { amp::autocast scope(DeviceType::CPU, DType::F32); }
  const size_t count = seen.size();
  set_warning_handler(capturing);
  { amp::autocast scope(DeviceType::CPU, DType::F32); }
  CHECK(seen.size() == count + 1);
  CHECK(static_cast<bool>(set_warning_handler(nullptr)));  // back to the default (stderr); the replaced one is returned
}
