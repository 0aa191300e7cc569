// The CUDA backend. Two halves:
// - the caching allocator's bookkeeping (ops/cuda/caching_allocator.h) driven by a fake device
//   whose alloc/free only hand out addresses: runs on every machine, GPU or not;
// - CPU-vs-CUDA agreement of every kernel family (forward and backward, f32/f16/bf16, and f64 or
//   integer types where the kernels take them), the AMP kernels against the CPU scaler, allocator
//   reuse on the device, and short MLP training runs. These skip, with a one-line reason, when
//   cuda::is_available() is false (no backend in this build, no GPU, or no working driver), and
//   fail instead under MINIDL_EXPECT_GPU=1.
// Tolerances come from the dtype traits: element-wise results may differ by the rounding of one
// result (the CPU and CUDA math libraries differ by an ulp or two in f32); products and sums are
// checked against an f64 reference with a bound that grows with the reduction length.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "amp/grad_scaler.h"
#include "framework/cuda.h"
#include "minidl.h"
#include "framework/cuda/caching_allocator.h"
#ifdef MINIDL_WITH_CUDA
#include <dlfcn.h>

#include "ops/cuda/cublas_library.h"
#endif
#include "framework/storage.h"
#include "ops/foreach.h"
#include "ops/kernels.h"
#include "cuda_checks.h"
#include "targets.h"

using namespace minidl;
using Catch::Matchers::Contains;

// ================================================================ caching allocator (CPU, fakes)

namespace {
// A pretend device: hands out increasing addresses (never dereferenced) up to a capacity and
// records every call.
struct FakeDevice {
  size_t capacity = SIZE_MAX;
  size_t used = 0;
  uintptr_t next = 0x10000;
  int allocs = 0, frees = 0, failures = 0;
  std::map<void*, size_t> live;

  cuda::CachingAllocatorCore::RawOps ops(bool with_describe = true) {
    cuda::CachingAllocatorCore::RawOps o;
    o.alloc = [this](size_t n) -> void* {
      if (n > capacity - used) {
        ++failures;
        return nullptr;
      }
      used += n;
      ++allocs;
      void* p = reinterpret_cast<void*>(next);
      next += n + 4096;
      live[p] = n;
      return p;
    };
    o.free = [this](void* p, size_t n) {
      REQUIRE(live.count(p) == 1);
      REQUIRE(live[p] == n);
      live.erase(p);
      used -= n;
      ++frees;
    };
    if (with_describe) o.describe = [this] { return "fake device: " + std::to_string(capacity - used) + " bytes free"; };
    return o;
  }
};

constexpr size_t KiB = 1024, MiB = 1024 * 1024;
}  // namespace

TEST_CASE("caching allocator: size classes", "[cuda][allocator]") {
  using Core = cuda::CachingAllocatorCore;
  CHECK(Core::round_size(1) == 512);
  CHECK(Core::round_size(512) == 512);
  CHECK(Core::round_size(513) == 1024);
  CHECK(Core::round_size(4096) == 4096);
  CHECK(Core::round_size(4097) == 4608);         // 4 KiB .. 8 KiB: steps of 512
  CHECK(Core::round_size(MiB + 1) == MiB + 128 * KiB);  // 1 MiB .. 2 MiB: steps of 128 KiB
  CHECK(Core::round_size(1024 * MiB + 1) == 1026 * MiB);  // steps capped at 2 MiB
  // Every class holds the request, wastes at most 1/8 of it (or less than 512 bytes), and is a
  // multiple of 512 (alignment for any dtype and vector load).
  for (size_t n = 1; n < 64 * MiB; n = n * 5 / 4 + 7) {
    const size_t r = Core::round_size(n);
    INFO("n = " << n << ", class = " << r);
    CHECK(r >= n);
    CHECK(r - n <= std::max<size_t>(511, n / 8));
    CHECK(r % 512 == 0);
    CHECK(Core::round_size(r) == r);  // classes are fixed points
  }
}

TEST_CASE("caching allocator: a freed block is reused, and steady state allocates nothing", "[cuda][allocator]") {
  FakeDevice dev;
  cuda::CachingAllocatorCore a(dev.ops());
  void* p = a.allocate(1000);
  REQUIRE(p != nullptr);
  CHECK(dev.allocs == 1);
  CHECK(a.deallocate(p));
  void* q = a.allocate(900);  // same class (1024)
  CHECK(q == p);
  CHECK(dev.allocs == 1);
  CHECK(a.stats().cache_hits == 1);
  CHECK(a.deallocate(q));

  // A training step asks for the same sizes every time: after the first step, zero device calls.
  const std::vector<size_t> step_sizes = {784 * 128 * 2, 256 * 784 * 4, 256 * 4, 128 * 256 * 2, 128 * 256 * 2,
                                          256 * 256 * 4, 10 * 256 * 4, 128 * 10 * 4, 128 * 4, 4};
  for (int step = 0; step < 50; ++step) {
    std::vector<void*> held;
    for (size_t n : step_sizes) held.push_back(a.allocate(n));
    for (void* h : held) CHECK(a.deallocate(h));
    if (step == 0) {
      INFO("device allocations after the first step: " << dev.allocs);
    }
  }
  const int after_warmup = dev.allocs;
  for (int step = 0; step < 50; ++step) {
    std::vector<void*> held;
    for (size_t n : step_sizes) held.push_back(a.allocate(n));
    for (void* h : held) a.deallocate(h);
  }
  CHECK(dev.allocs == after_warmup);
  CHECK(dev.frees == 0);
  CHECK(a.stats().allocated == 0);
  CHECK(a.stats().device_allocs == dev.allocs);
}

TEST_CASE("caching allocator: best fit up to 5/4 of the request, never a much larger block", "[cuda][allocator]") {
  FakeDevice dev;
  cuda::CachingAllocatorCore a(dev.ops());
  void* big = a.allocate(MiB);
  void* mid = a.allocate(2560);
  a.deallocate(big);
  a.deallocate(mid);
  // 2048 may take the cached 2560 block (2560 <= 5/4 * 2048) ...
  void* p = a.allocate(2048);
  CHECK(p == mid);
  CHECK(a.stats().allocated == 2560);
  // ... but 1 KiB must not take the cached 1 MiB block.
  void* q = a.allocate(KiB);
  CHECK(q != big);
  CHECK(dev.allocs == 3);
  // The block goes back to its own class: 2560 serves a 2560 request again.
  a.deallocate(p);
  CHECK(a.allocate(2500) == mid);
}

TEST_CASE("caching allocator: statistics and peaks", "[cuda][allocator]") {
  FakeDevice dev;
  cuda::CachingAllocatorCore a(dev.ops());
  void* p = a.allocate(1000);   // class 1024
  void* q = a.allocate(5000);   // class 5120
  auto s = a.stats();
  CHECK(s.allocated == 1024 + 5120);
  CHECK(s.requested == 6000);
  CHECK(s.reserved == 1024 + 5120);
  CHECK(s.cached == 0);
  CHECK(s.num_allocs == 2);
  CHECK(s.device_allocs == 2);
  a.deallocate(q);
  s = a.stats();
  CHECK(s.allocated == 1024);
  CHECK(s.requested == 1000);
  CHECK(s.reserved == 1024 + 5120);
  CHECK(s.cached == 5120);
  CHECK(s.peak_allocated == 1024 + 5120);
  CHECK(s.num_frees == 1);
  a.reset_peak_stats();
  CHECK(a.stats().peak_allocated == 1024);
  CHECK(a.stats().peak_reserved == 1024 + 5120);
  a.deallocate(p);
  CHECK(a.stats().allocated == 0);
  CHECK(a.stats().reserved == a.stats().cached);
}

TEST_CASE("caching allocator: empty_cache returns cached blocks only", "[cuda][allocator]") {
  FakeDevice dev;
  cuda::CachingAllocatorCore a(dev.ops());
  void* keep = a.allocate(3000);
  void* f1 = a.allocate(10000);
  void* f2 = a.allocate(10000);
  a.deallocate(f1);
  a.deallocate(f2);
  a.empty_cache();
  CHECK(dev.frees == 2);
  CHECK(dev.live.size() == 1);
  CHECK(dev.live.count(keep) == 1);
  auto s = a.stats();
  CHECK(s.reserved == s.allocated);
  CHECK(s.cached == 0);
  CHECK(s.device_frees == 2);
  CHECK(a.owns(keep));
  CHECK(a.deallocate(keep));
  a.empty_cache();
  CHECK(dev.live.empty());
  CHECK(dev.used == 0);
}

TEST_CASE("caching allocator: out of memory releases the cache and retries, then reports", "[cuda][allocator]") {
  FakeDevice dev;
  dev.capacity = 4 * MiB;
  cuda::CachingAllocatorCore a(dev.ops(), "cuda:0");
  // Three cached 1 MiB blocks leave room for no 2 MiB block until the cache is released.
  std::vector<void*> blocks;
  for (int i = 0; i < 3; ++i) blocks.push_back(a.allocate(MiB));
  for (void* b : blocks) a.deallocate(b);
  void* p = a.allocate(2 * MiB);
  REQUIRE(p != nullptr);
  CHECK(a.stats().oom_retries == 1);
  CHECK(dev.frees == 3);
  CHECK(a.stats().reserved == 2 * MiB);

  // Live tensors hold the memory: the error says what was asked, what is held, and the device's view.
  void* q = a.allocate(MiB + MiB / 2);
  CHECK(q != nullptr);
  try {
    a.allocate(3 * MiB);
    FAIL("expected an out-of-memory error");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Contains("cuda allocator") && Contains("out of memory on cuda:0"));
    CHECK_THAT(msg, Contains("tried to allocate 3.00 MiB (3145728 bytes)"));
    CHECK_THAT(msg, Contains("live tensors hold 3.50 MiB (3670016 bytes)"));
    CHECK_THAT(msg, Contains("fake device:"));
  }
  // The failed request changed nothing.
  CHECK(a.stats().allocated == 2 * MiB + MiB + MiB / 2);
  a.deallocate(p);
  a.deallocate(q);
}

TEST_CASE("caching allocator: unknown pointers and zero sizes", "[cuda][allocator]") {
  FakeDevice dev;
  cuda::CachingAllocatorCore a(dev.ops(false));
  CHECK(a.allocate(0) == nullptr);
  CHECK(a.stats().num_allocs == 0);
  CHECK(a.deallocate(nullptr));
  int local = 0;
  CHECK_FALSE(a.deallocate(&local));
  void* p = a.allocate(1);
  CHECK(a.deallocate(p));
  CHECK_FALSE(a.deallocate(p));  // a second free of the same block is refused, not double-counted
  CHECK(a.stats().num_frees == 1);
  CHECK(a.stats().cached == 512);
}

TEST_CASE("caching allocator: concurrent use keeps the books", "[cuda][allocator]") {
  FakeDevice dev;
  std::mutex fake_mu;  // the fake itself is not thread-safe; the core calls it under its own lock anyway
  auto ops = dev.ops(false);
  auto alloc = ops.alloc;
  auto free_ = ops.free;
  ops.alloc = [&](size_t n) { std::lock_guard<std::mutex> l(fake_mu); return alloc(n); };
  ops.free = [&](void* p, size_t n) { std::lock_guard<std::mutex> l(fake_mu); free_(p, n); };
  cuda::CachingAllocatorCore a(ops);
  auto work = [&](int seed) {
    std::vector<void*> held;
    for (int i = 0; i < 2000; ++i) {
      held.push_back(a.allocate(static_cast<size_t>(512 + (i * 7919 + seed * 104729) % 20000)));
      if (held.size() > 8) {
        a.deallocate(held.front());
        held.erase(held.begin());
      }
    }
    for (void* h : held) a.deallocate(h);
  };
  std::thread t1(work, 1), t2(work, 2);
  t1.join();
  t2.join();
  const auto s = a.stats();
  CHECK(s.allocated == 0);
  CHECK(s.requested == 0);
  CHECK(s.num_allocs == 4000);
  CHECK(s.num_frees == 4000);
  CHECK(s.reserved == s.cached);
  CHECK(static_cast<int64_t>(dev.live.size()) == s.device_allocs);
}

TEST_CASE("storage: a CUDA tensor's block is asked for on its own device, not the current one", "[cuda][allocator]") {
  // Without this, every tensor of cuda:1 (a DataParallel replica, an NCCL rank's model) would get
  // memory of cuda:0, the thread's current device, and its kernels would fault on cuda:1.
  struct Recording final : Allocator {
    std::vector<int> devices;  // -1: asked without a device
    void* allocate(size_t n) override {
      devices.push_back(-1);
      return std::malloc(n);
    }
    void* allocate_on(size_t n, Device d) override {
      devices.push_back(d.index);
      return std::malloc(n);
    }
    void deallocate(void* p, size_t) override { std::free(p); }
  };
  Allocator* prev = nullptr;  // the real one on a GPU machine; none (refilled on use) elsewhere
  if (cuda::is_available()) prev = allocator_for(Device::cuda(0));
  Recording rec;
  set_allocator(DeviceType::CUDA, &rec);
  {
    Storage s1(64, Device::cuda(1));
    Storage s0(64, Device::cuda(0));
  }
  set_allocator(DeviceType::CUDA, prev);
  CHECK(rec.devices == std::vector<int>{1, 0});
}

TEST_CASE("cuda: format_bytes", "[cuda]") {
  CHECK(cuda::format_bytes(0) == "0 bytes");
  CHECK(cuda::format_bytes(1023) == "1023 bytes");
  CHECK(cuda::format_bytes(1536) == "1.50 KiB (1536 bytes)");
  CHECK(cuda::format_bytes(3 * MiB) == "3.00 MiB (3145728 bytes)");
}

// ================================================================ libraries loaded on demand (no GPU needed)

#ifdef MINIDL_WITH_CUDA
namespace {
bool mapped(const char* soname) {
  void* h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);  // RTLD_NOLOAD still counts a reference
  return h != nullptr;
}
#define MINIDL_STR2(x) #x
#define MINIDL_STR(x) MINIDL_STR2(x)
const char* const kCublasLt = "libcublasLt.so." MINIDL_STR(CUBLAS_VER_MAJOR);
// Read before main, before any test can have multiplied on a GPU: what program start itself loads.
const bool kCublasAtStart = kernels::cuda::cublas_loaded();
const bool kCublasLtAtStart = mapped(kCublasLt);
}  // namespace

TEST_CASE("cuda: cuBLAS is not loaded at program start, only by the first CUDA product", "[cuda]") {
  // Linked, cuBLAS (through cuBLASLt) made every program of a CUDA build ~210 MB larger and ~0.35 s
  // slower to start, GPU or not (ops/cuda/cublas_library.h).
  CHECK_FALSE(kCublasAtStart);
  CHECK_FALSE(kCublasLtAtStart);
  const kernels::cuda::CublasLibrary& lib = kernels::cuda::cublas();
  CHECK(kernels::cuda::cublas_loaded());
  CHECK(mapped(kCublasLt));
  REQUIRE(lib.path != nullptr);
  CHECK(lib.cublasCreate_v2 != nullptr);
  CHECK(lib.cublasGemmEx != nullptr);
  CHECK(lib.cublasGemmStridedBatchedEx != nullptr);
  CHECK(std::string(lib.cublasGetStatusName(CUBLAS_STATUS_NOT_INITIALIZED)) == "CUBLAS_STATUS_NOT_INITIALIZED");
  CHECK(&kernels::cuda::cublas() == &lib);  // opened once
}
#endif

// ================================================================ device checks (skip without GPU)

using namespace minidl::cuda_test;

TEST_CASE("cuda: device properties, streams and memory statistics", "[cuda]") {
  if (!cuda::is_available()) {
    CHECK(cuda::device_count() == 0);
    CHECK(cuda::memory_stats().allocated == 0);
    CHECK(cuda::memory_stats().reserved == 0);
    CHECK_NOTHROW(cuda::empty_cache());
    CHECK_NOTHROW(cuda::synchronize());
    CHECK_THROWS_WITH(cuda::get_device_properties(0), Contains("cuda:0"));
  }
  MINIDL_REQUIRE_GPU();
  if (!kCuda.is_cuda()) return;
  const auto p = cuda::get_device_properties(0);
  CHECK(!p.name.empty());
  CHECK(p.major >= 3);
  CHECK(p.total_memory > 0);
  CHECK(p.multiprocessor_count > 0);
  CHECK_THROWS_WITH(cuda::get_device_properties(cuda::device_count()), Contains("not available"));

  cuda::synchronize();
  cuda::empty_cache();
  const auto before = cuda::memory_stats();
  {
    Tensor t = empty({1000, 1000}, TensorOptions(DType::F32).device(kCuda));
    const auto s = cuda::memory_stats();
    CHECK(s.allocated >= before.allocated + 4000000);
    CHECK(s.requested >= before.requested + 4000000);
    CHECK(s.peak_allocated >= s.allocated);
  }
  const auto after = cuda::memory_stats();
  CHECK(after.allocated == before.allocated);
  CHECK(after.cached >= 4000000);
  cuda::empty_cache();
  CHECK(cuda::memory_stats().cached == 0);
}

TEST_CASE("cuda: steady-state training steps call cudaMalloc zero times", "[cuda][allocator]") {
  MINIDL_REQUIRE_GPU();
  if (!kCuda.is_cuda()) return;
  manual_seed(1);
  auto model = std::make_shared<nn::models::MLP>(64, std::vector<int64_t>{32}, 10);
  model->to(kCuda);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  Tensor x = randn_cpu({16, 64}, DType::F32, 3).to(kCuda);
  Tensor y = randint(0, 10, {16}, DType::I64).to(kCuda);
  auto step = [&] {
    opt.zero_grad();
    Tensor loss = cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
  };
  for (int i = 0; i < 3; ++i) step();
  const auto warm = cuda::memory_stats();
  for (int i = 0; i < 10; ++i) step();
  const auto s = cuda::memory_stats();
  CHECK(s.device_allocs == warm.device_allocs);
  CHECK(s.cache_hits > warm.cache_hits);
}

TEST_CASE("cuda: fill and copies across devices, dtypes and layouts", "[cuda]") {
  MINIDL_REQUIRE_GPU();
  const std::vector<DType> all = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64, DType::I32, DType::U8, DType::Bool};
  // Values every dtype holds exactly (u8: non-negative; bool: 0/1 after conversion).
  Tensor base = from_vector<double>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
  for (DType from : all) {
    Tensor h = cast(base, from);
    Tensor d = h.to(kCuda);
    CHECK(d.device() == kCuda);
    check_equal(d.to(Device::cpu()), h, std::string("round trip ") + dtype_name(from));
    for (DType to : all) {
      check_equal(cast(d, to), cast(h, to), std::string("cast ") + dtype_name(from) + " -> " + dtype_name(to));
    }
    check_equal(d.t().contiguous(), h.t().contiguous(), std::string("transpose ") + dtype_name(from));
    check_equal(d.slice(1, 1, 4, 2), h.slice(1, 1, 4, 2), std::string("slice ") + dtype_name(from));
  }
  for (DType t : kFloat64) {
    // Rounding of non-representable values matches the CPU's (f64 -> f32 -> f16/bf16).
    Tensor x = randn_cpu({257}, DType::F64, 7, 1000.0);
    check_equal(cast(x.to(kCuda), t), cast(x, t), std::string("rounding to ") + dtype_name(t));
    // fill_ on a strided view leaves the rest alone.
    Tensor dz = zeros({4, 6}, TensorOptions(t).device(kCuda));
    Tensor hz = zeros({4, 6}, TensorOptions(t));
    dz.slice(1, 0, 6, 2).fill_(0.1);
    hz.slice(1, 0, 6, 2).fill_(0.1);
    check_equal(dz, hz, std::string("strided fill ") + dtype_name(t));
    // copy_ with broadcasting and conversion, CPU source into a strided CUDA destination.
    Tensor src = randn_cpu({6}, DType::F32, 11);
    dz.t().copy_(src.unsqueeze(1).expand({6, 4}));
    hz.t().copy_(src.unsqueeze(1).expand({6, 4}));
    check_equal(dz, hz, std::string("broadcast copy_ into a transposed view ") + dtype_name(t));
    // And back into a strided CPU destination.
    Tensor back = zeros({6, 4}, TensorOptions(t));
    back.t().copy_(dz);
    check_equal(back.t(), hz, std::string("strided device-to-host copy ") + dtype_name(t));
  }
  // Uploads of 64 KiB and more go through pinned staging buffers (two, alternating): the source
  // may be overwritten right after to() returns, and each upload keeps its own data.
  Tensor big = randn_cpu({1 << 20}, DType::F32, 13);
  std::vector<Tensor> ups, refs;
  for (int i = 0; i < 5; ++i) {
    Tensor src = add(big, static_cast<double>(i));
    ups.push_back(kCuda.is_cuda() ? src.to(kCuda) : src.clone());
    refs.push_back(src.clone());
    src.fill_(-1.0);
  }
  for (int i = 0; i < 5; ++i) check_equal(ups[i], refs[i], "staged upload " + std::to_string(i));
  // Floating values outside a narrow integer type wrap through i64, as on the CPU (and PyTorch's
  // u8): -1 -> u8 255, 300 -> u8 44, 3e9 -> i32 -1294967296; a direct conversion on the GPU
  // saturates instead. fill_ takes the same rule.
  Tensor wide = from_vector<double>({-1, -2.5, -129.75, 300, 1000.5, -3e9, 3e9}, {7});
  for (DType from : kFloat64) {
    const int64_t n = is_low_precision(from) ? 5 : 7;  // +-3e9 are inf or inexact in f16/bf16
    Tensor h = cast(wide.narrow(0, 0, n), from);
    for (DType to : {DType::U8, DType::I32})
      check_equal(cast(h.to(kCuda), to), cast(h, to), std::string("out-of-range cast ") + dtype_name(from) + " -> " + dtype_name(to));
  }
  Tensor du8 = zeros({5}, TensorOptions(DType::U8).device(kCuda));
  du8.fill_(-1.0);
  check_equal(du8, full({5}, 255.0, TensorOptions(DType::U8)), "fill_(-1) of u8");
  // Special values survive every float conversion.
  Tensor special = from_vector<float>({INFINITY, -INFINITY, NAN, -0.0f, 65504.0f, 1e-8f});
  for (DType t : kFloat64) check_equal(cast(special.to(kCuda), t), cast(special, t), std::string("specials ") + dtype_name(t));
}

TEST_CASE("cuda: binary kernels agree with the CPU for every op, layout and float dtype", "[cuda]") {
  MINIDL_REQUIRE_GPU();
  using kernels::BinaryOp;
  const std::vector<BinaryOp> ops = {
      BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Pow, BinaryOp::Max, BinaryOp::Min,
      BinaryOp::Eq, BinaryOp::Ne, BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge,
      BinaryOp::ReluBackward, BinaryOp::LeakyReluBackward, BinaryOp::SigmoidBackward, BinaryOp::TanhBackward,
      BinaryOp::GeluBackward, BinaryOp::GeluTanhBackward, BinaryOp::SoftplusBackward,
      BinaryOp::Remainder, BinaryOp::Fmod, BinaryOp::DivFloor, BinaryOp::DivTrunc};
  struct Layout {
    const char* name;
    Shape a, b, out;
    bool transpose_a;
    bool scalar_b;
  };
  const std::vector<Layout> layouts = {
      {"same shape", {37, 29}, {37, 29}, {37, 29}, false, false},
      {"bias broadcast", {64, 33}, {33}, {64, 33}, false, false},
      {"both broadcast", {5, 1, 7}, {3, 1}, {5, 3, 7}, false, false},
      {"transposed a", {29, 37}, {37, 29}, {37, 29}, true, false},
      {"scalar b", {1000}, {}, {1000}, false, true},
      {"long flat", {100003}, {100003}, {100003}, false, false},
  };
  for (DType t : kFloat64) {
    for (const Layout& L : layouts) {
      Tensor a = randn_cpu(L.a, t, 1, 2.0);
      Tensor b = L.scalar_b ? Tensor() : randn_cpu(L.b, t, 2, 2.0);
      if (L.transpose_a) a = a.t();
      for (BinaryOp op : ops) {
        const bool cmp = op >= BinaryOp::Eq && op <= BinaryOp::Ge;
        Tensor aa = a, bb = b;
        if (op == BinaryOp::Pow) aa = abs(a);  // real results only
        const double scalar = op == BinaryOp::SoftplusBackward ? 1.5 : 0.7;
        const double alpha = op == BinaryOp::Add || op == BinaryOp::Sub ? -0.5 : 0.3;
        const DType out_t = cmp ? DType::Bool : t;
        Tensor hout = empty(L.out, out_t);
        Tensor dout = empty(L.out, TensorOptions(out_t).device(kCuda));
        R().binary.get(Device::cpu(), t)(op, hout, aa, bb, scalar, alpha);
        R().binary.get(kCuda, t)(op, dout, aa.to(kCuda), bb.defined() ? bb.to(kCuda) : Tensor(), scalar, alpha);
        std::ostringstream what;
        what << "binary op " << static_cast<int>(op) << ", " << L.name << ", " << dtype_name(t);
        if (cmp) {
          check_equal(dout, hout, what.str());
          continue;
        }
        // The fused activation gradients that subtract inside (1 - y, 1 - y^2, gelu's Phi + x phi
        // near its zero at -0.75): the CPU's f64 kernel, perturbed in a and in b, gives the scale of
        // the two backends' rounding differences there. Every other op keeps the plain tolerance.
        const bool cancels = op == BinaryOp::SigmoidBackward || op == BinaryOp::TanhBackward ||
                             op == BinaryOp::GeluBackward || op == BinaryOp::GeluTanhBackward;
        Tensor scale;
        if (cancels) {
          auto f64_op = [&](const Tensor& x, const Tensor& y) {
            Tensor o = empty(L.out, DType::F64);
            R().binary.get(Device::cpu(), DType::F64)(op, o, x, y, scalar, alpha);
            return o;
          };
          const Tensor a64 = cast(aa, DType::F64), b64 = bb.defined() ? cast(bb, DType::F64) : Tensor();
          scale = relative_sensitivity([&](const Tensor& x) { return f64_op(x, b64); }, aa);
          if (bb.defined()) scale = add(scale, relative_sensitivity([&](const Tensor& y) { return f64_op(a64, y); }, bb));
        }
        check_close(dout, hout, ew_rtol(t), 4 * traits(t).min_normal, what.str(), scale);
      }
    }
  }
}

TEST_CASE("cuda: integer and bool binary ops", "[cuda]") {
  MINIDL_REQUIRE_GPU();
  Tensor a = from_vector<int64_t>({-7, -1, 0, 3, 8, 100}, {6});
  Tensor b = from_vector<int64_t>({2, 2, 5, -3, 8, 7}, {6});
  for (DType t : {DType::I64, DType::I32}) {
    Tensor ha = cast(a, t), hb = cast(b, t), da = ha.to(kCuda), db = hb.to(kCuda);
    check_equal(add(da, db, 3.0), add(ha, hb, 3.0), "int add");
    check_equal(mul(da, db), mul(ha, hb), "int mul");
    check_equal(maximum(da, db), maximum(ha, hb), "int max");
    check_equal(eq(da, db), eq(ha, hb), "int eq");
    check_equal(lt(da, 3.0), lt(ha, 3.0), "int lt scalar");
    // Integer pow stays integer (wrapping; negative exponents truncate), as the CPU kernel.
    Tensor he = cast(from_vector<int64_t>({3, 0, 2, -1, 21, 1}, {6}), t);
    check_equal(pow(da, he.to(kCuda)), pow(ha, he), "int pow");
  }
  Tensor hb = gt(a, 0.0), db = hb.to(kCuda);
  check_equal(eq(db, db), eq(hb, hb), "bool eq");
  // Two bools: add/maximum are a logical or, mul/minimum a logical and.
  Tensor hc = lt(b, 3.0), dc = hc.to(kCuda);
  check_equal(add(db, dc), add(hb, hc), "bool add (or)");
  check_equal(maximum(db, dc), maximum(hb, hc), "bool maximum (or)");
  check_equal(mul(db, dc), mul(hb, hc), "bool mul (and)");
  check_equal(minimum(db, dc), minimum(hb, hc), "bool minimum (and)");
  // Accuracy the way a training loop counts it: argmax == target, summed.
  Tensor logits = randn_cpu({50, 10}, DType::F32, 5);
  Tensor target = randint(0, 10, {50}, DType::I64);
  const int64_t h = sum(eq(argmax(logits, 1), target)).item_int();
  const int64_t d = sum(eq(argmax(logits.to(kCuda), 1), target.to(kCuda))).item_int();
  CHECK(d == h);
}

TEST_CASE("cuda: unary kernels agree with the CPU", "[cuda]") {
  MINIDL_REQUIRE_GPU();
  using kernels::UnaryOp;
  const std::vector<UnaryOp> ops = {UnaryOp::Neg, UnaryOp::Exp, UnaryOp::Log, UnaryOp::Sqrt, UnaryOp::Rsqrt,
                                    UnaryOp::Abs, UnaryOp::Sign, UnaryOp::Tanh, UnaryOp::Sigmoid, UnaryOp::Relu,
                                    UnaryOp::LeakyRelu, UnaryOp::Gelu, UnaryOp::GeluTanh, UnaryOp::Softplus,
                                    UnaryOp::Square, UnaryOp::Reciprocal, UnaryOp::Clamp, UnaryOp::Sin, UnaryOp::Cos,
                                    UnaryOp::Tan, UnaryOp::Asin, UnaryOp::Acos, UnaryOp::Atan, UnaryOp::Sinh, UnaryOp::Cosh,
                                    UnaryOp::Asinh, UnaryOp::Acosh, UnaryOp::Atanh, UnaryOp::Log1p, UnaryOp::Expm1,
                                    UnaryOp::Log2, UnaryOp::Log10, UnaryOp::Exp2, UnaryOp::Erf, UnaryOp::Erfc,
                                    UnaryOp::Erfinv, UnaryOp::Floor, UnaryOp::Ceil, UnaryOp::Round, UnaryOp::Trunc,
                                    UnaryOp::Hardswish, UnaryOp::Hardsigmoid, UnaryOp::Mish, UnaryOp::LogSigmoid};
  for (DType t : kFloat64) {
    for (bool strided : {false, true}) {
      Tensor x = randn_cpu({67, 45}, t, 9, 3.0);
      if (strided) x = x.t();
      for (UnaryOp op : ops) {
        // Each op's domain: positive for the logs and roots, (-1, 1) for the inverse sines, tanh and
        // erf, above 1 for acosh.
        const bool positive = op == UnaryOp::Log || op == UnaryOp::Sqrt || op == UnaryOp::Rsqrt || op == UnaryOp::Log2 ||
                              op == UnaryOp::Log10 || op == UnaryOp::Log1p;
        const bool unit = op == UnaryOp::Asin || op == UnaryOp::Acos || op == UnaryOp::Atanh || op == UnaryOp::Erfinv;
        Tensor in = positive ? add(abs(x), 0.1) : unit ? mul(tanh(x), 0.99) : op == UnaryOp::Acosh ? add(abs(x), 1.1) : x;
        double p0 = 0, p1 = 0;
        if (op == UnaryOp::LeakyRelu) p0 = 0.02;
        if (op == UnaryOp::Softplus) { p0 = 1.5; p1 = 3.0; }
        if (op == UnaryOp::Clamp) { p0 = -1.0; p1 = 0.5; }
        Tensor hout = empty(in.shape(), t), dout = empty(in.shape(), TensorOptions(t).device(kCuda));
        R().unary.get(Device::cpu(), t)(op, hout, in, p0, p1);
        R().unary.get(kCuda, t)(op, dout, in.to(kCuda), p0, p1);
        std::ostringstream what;
        what << "unary op " << static_cast<int>(op) << (strided ? " strided " : " ") << dtype_name(t);
        // GELU's two forms compute an intermediate argument (x / sqrt 2; gelu_tanh's cubic inside
        // exp) that each backend rounds its own way (FMA contraction on the GPU): that moves the
        // result by about |x f'(x)| times the dtype's epsilon. Every other op reads x directly and
        // keeps the plain tolerance.
        // The same holds for the element-wise math near a function's zeros (sin near pi, log2 near 1, ...)
        // and for the rounding functions' steps.
        Tensor scale;
        if (op == UnaryOp::Gelu || op == UnaryOp::GeluTanh || op >= UnaryOp::Sin)
          scale = relative_sensitivity(
              [&](const Tensor& v) {
                Tensor o = empty(v.shape(), DType::F64);
                R().unary.get(Device::cpu(), DType::F64)(op, o, v, p0, p1);
                return o;
              },
              in);
        check_close(dout, hout, ew_rtol(t), 4 * traits(t).min_normal, what.str(), scale);
      }
    }
  }
}

TEST_CASE("cuda: activation gradients through autograd agree with the CPU", "[cuda]") {
  MINIDL_REQUIRE_GPU();
  const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> fns = {
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.1); }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, true); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"softplus", [](const Tensor& x) { return softplus(x, 2.0, 4.0); }},
      {"exp", [](const Tensor& x) { return exp(x); }},
  };
  for (DType t : kFloat) {
    for (const auto& entry : fns) {
      // Named references, not a structured binding: clang 14 cannot capture one in a lambda.
      const char* const name = entry.first;
      const std::function<Tensor(const Tensor&)>& f = entry.second;
      Tensor x0 = randn_cpu({33, 17}, t, 21);
      Tensor gy = randn_cpu({33, 17}, t, 22);
      Tensor hx = leaf_on_cpu(x0);
      Tensor dx = leaf_on_device(x0);
      Tensor hy = f(hx), dy = f(dx);
      hy.backward(gy);
      dy.backward(gy.to(kCuda));
      check_close(dy, hy, ew_rtol(t), 4 * traits(t).min_normal, std::string(name) + " forward " + dtype_name(t));
      // Where f' subtracts inside (gelu's near -0.75, tanh's 1 - y^2 near |y| = 1, sigmoid's
      // y (1 - y)), the two sides' f32 roundings differ by the gradient's own sensitivity to x
      // (f64 autograd on the CPU) times epsilon. The other functions keep the plain tolerance.
      const std::string fn_name = name;
      Tensor scale;
      if (fn_name == "gelu" || fn_name == "gelu_tanh" || fn_name == "tanh" || fn_name == "sigmoid") {
        const Tensor gy64 = cast(gy, DType::F64);
        scale = relative_sensitivity(
            [&](const Tensor& v) {
              Tensor l = leaf_on_cpu(v);
              f(l).backward(gy64);
              return l.grad();
            },
            x0);
      }
      check_close(dx.grad(), hx.grad(), 2 * ew_rtol(t), 4 * traits(t).min_normal,
                  std::string(name) + " backward " + dtype_name(t), scale);
    }
  }
}

TEST_CASE("cuda: where", "[cuda]") {
  MINIDL_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I64, DType::U8}) {
    Tensor c = gt(randn_cpu({4, 1, 6}, DType::F32, 1), 0.0);
    Tensor a = cast(mul(randn_cpu({5, 6}, DType::F32, 2), 10.0), t);
    Tensor b = cast(mul(randn_cpu({4, 5, 1}, DType::F32, 3), 10.0), t);
    check_equal(where(c.to(kCuda), a.to(kCuda), b.to(kCuda)), where(c, a, b), std::string("where ") + dtype_name(t));
  }
}

TEST_CASE("cuda: reductions agree with the CPU over every layout path", "[cuda][reduce]") {
  MINIDL_REQUIRE_GPU();
  using kernels::ReduceOp;
  struct Case {
    Shape shape;
    std::vector<int64_t> dims;
  };
  const std::vector<Case> cases = {
      {{7, 33, 5}, {2}},        // rows (trailing)
      {{7, 33, 5}, {0}},        // columns (leading)
      {{7, 33, 5}, {1}},        // middle: permuted copy
      {{7, 33, 5}, {0, 2}},     // non-adjacent
      {{7, 33, 5}, {0, 1, 2}},  // everything
      {{3, 5000}, {1}},         // long rows: one block per row
      {{2, 300000}, {1}},       // few long rows: segments + second pass
      {{20000, 12}, {0}},       // long columns: segments + second pass
      {{1024, 256}, {0}},       // bias gradient of a batch-1024 layer
      {{1, 1}, {0, 1}},
  };
  for (DType t : kFloat64) {
    for (const Case& c : cases) {
      Tensor x = randn_cpu(c.shape, t, 31);
      Tensor dx = x.to(kCuda);
      std::ostringstream what;
      what << shape_str(c.shape) << " over " << c.dims.size() << " dims, " << dtype_name(t);
      // Sum: both sides accumulate in f32 (f64) in different orders; bound by the length.
      const int64_t r = x.numel() / std::max<int64_t>(1, sum(x, c.dims, true).numel());
      const double acc_eps = t == DType::F64 ? eps_of(DType::F64) : eps_of(DType::F32);
      const double sum_tol = eps_of(t) + 2.0 * std::sqrt(static_cast<double>(r)) * acc_eps * 4;
      check_close(sum(dx, c.dims), sum(x, c.dims), sum_tol, sum_tol * std::sqrt(static_cast<double>(r)),
                  "sum " + what.str());
      if (c.dims.size() == 1) {
        const int64_t d = c.dims[0];
        auto [hv, hi] = max(x, d);
        auto [dv, di] = max(dx, d);
        check_equal(dv, hv, "max values " + what.str());
        check_equal(di, hi, "max indices " + what.str());
        auto [hmv, hmi] = min(x, d);
        auto [dmv, dmi] = min(dx, d);
        check_equal(dmv, hmv, "min values " + what.str());
        check_equal(dmi, hmi, "min indices " + what.str());
        check_equal(argmax(dx, d), argmax(x, d), "argmax " + what.str());
      }
    }
  }
  // Ties report the first index; NaN wins and reports the first NaN.
  Tensor ties = from_vector<float>({1, 5, 5, 2, 5, 0, NAN, 3, NAN, 1}, {2, 5});
  auto [tv, ti] = max(ties.to(kCuda), 1);
  CHECK(ti.to_vector<int64_t>() == std::vector<int64_t>{1, 1});
  CHECK(std::isnan(tv.to_vector<float>()[1]));
  // Integer sums are exact (i64 accumulation); bool sums count.
  Tensor ints = cast(mul(randn_cpu({1000, 3}, DType::F32, 4), 1000.0), DType::I64);
  check_equal(sum(ints.to(kCuda), {0}), sum(ints, {0}), "i64 sum");
  Tensor mask = gt(randn_cpu({4097}, DType::F32, 6), 0.0);
  CHECK(sum(mask.to(kCuda)).item_int() == sum(mask).item_int());
  // A reduced dim of size 0 sums to 0.
  check_equal(sum(zeros({3, 0}, TensorOptions().device(kCuda)), {1}), zeros({3}), "empty sum");
}

namespace {
// c = a @ b against an f64 reference: |c - ref| <= (2 eps(out) + k eps(acc)) * (|a| @ |b|).
void check_gemm(const Tensor& got, const Tensor& a, const Tensor& b, int64_t k, DType t, const std::string& what) {
  Tensor ref = matmul(cast(a, DType::F64), cast(b, DType::F64));
  Tensor mag = matmul(abs(cast(a, DType::F64)), abs(cast(b, DType::F64)));
  const double acc = t == DType::F64 ? eps_of(DType::F64) : eps_of(DType::F32);
  const double bound = 2 * eps_of(t) + static_cast<double>(k) * acc;
  const std::vector<double> g = got.to_vector<double>(), r = ref.to_vector<double>(), m = mag.to_vector<double>();
  INFO(what);
  REQUIRE(g.size() == r.size());
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::fabs(g[i] - r[i]) / (bound * m[i] + 1e-300));
  CHECK(worst <= 1.0);
}
}  // namespace

TEST_CASE("cuda: cuBLAS gemm with transposed views and batches, against an f64 reference", "[cuda]") {
  MINIDL_REQUIRE_GPU();
  for (DType t : kFloat64) {
    const int64_t m = 37, k = 300, n = 53;
    Tensor a = randn_cpu({m, k}, t, 1), b = randn_cpu({k, n}, t, 2);
    Tensor at = randn_cpu({k, m}, t, 3).t(), bt = randn_cpu({n, k}, t, 4).t();  // transposed views
    const std::string dt = dtype_name(t);
    check_gemm(mm(a.to(kCuda), b.to(kCuda)), a, b, k, t, "mm " + dt);
    check_gemm(mm(at.to(kCuda).contiguous().t().t(), b.to(kCuda)), at, b, k, t, "mm (copied) " + dt);
    Tensor dat = at.t().to(kCuda).t(), dbt = bt.t().to(kCuda).t();  // device-side transposed views
    check_gemm(mm(dat, b.to(kCuda)), at, b, k, t, "mm a^T " + dt);
    check_gemm(mm(a.to(kCuda), dbt), a, bt, k, t, "mm b^T " + dt);
    check_gemm(mm(dat, dbt), at, bt, k, t, "mm a^T b^T " + dt);
    // A view with no unit stride is copied first.
    Tensor wide = randn_cpu({m, 2 * k}, t, 5);
    Tensor every_other = wide.slice(1, 0, 2 * k, 2);
    check_gemm(mm(wide.to(kCuda).slice(1, 0, 2 * k, 2), b.to(kCuda)), every_other, b, k, t, "mm strided " + dt);
    // Vectors and single rows (ld edge cases).
    Tensor row = randn_cpu({1, k}, t, 6), col = randn_cpu({k, 1}, t, 7);
    check_gemm(mm(row.to(kCuda), b.to(kCuda)), row, b, k, t, "row " + dt);
    check_gemm(mm(a.to(kCuda), col.to(kCuda)), a, col, k, t, "col " + dt);
    // Batched, including a transposed batch and a broadcast operand (stride 0).
    Tensor ba = randn_cpu({4, m, k}, t, 8), bb = randn_cpu({4, k, n}, t, 9);
    check_gemm(bmm(ba.to(kCuda), bb.to(kCuda)), ba, bb, k, t, "bmm " + dt);
    Tensor bbt = randn_cpu({4, n, k}, t, 10);
    check_gemm(bmm(ba.to(kCuda), bbt.to(kCuda).transpose(1, 2)), ba, bbt.transpose(1, 2), k, t, "bmm b^T " + dt);
    check_gemm(matmul(ba.to(kCuda), b.to(kCuda).unsqueeze(0).expand({4, k, n})), ba, b.unsqueeze(0).expand({4, k, n}), k, t,
               "bmm broadcast " + dt);
    // addmm / linear: the bias is written first and the GEMM accumulates (beta = 1), alpha scales.
    Tensor bias = randn_cpu({n}, t, 11);
    Tensor hl = addmm(bias, a, b, 1.0, 0.5);
    Tensor dl = addmm(bias.to(kCuda), a.to(kCuda), b.to(kCuda), 1.0, 0.5);
    check_gemm(sub(cast(dl.to(Device::cpu()), DType::F64), cast(bias, DType::F64).unsqueeze(0)).mul_(2.0), a, b, k, t,
               "addmm " + dt);
    (void)hl;
    // k = 0: the product is zero (plus the bias).
    Tensor z = mm(zeros({3, 0}, TensorOptions(t).device(kCuda)), zeros({0, 4}, TensorOptions(t).device(kCuda)));
    check_equal(z, zeros({3, 4}, t), "k = 0 " + dt);
  }
}

TEST_CASE("cuda: linear forward and backward agree with the CPU", "[cuda]") {
  MINIDL_REQUIRE_GPU();
  for (DType t : kFloat) {
    Tensor x0 = randn_cpu({128, 784}, t, 1), w0 = randn_cpu({256, 784}, t, 2, 0.05), b0 = randn_cpu({256}, t, 3);
    Tensor gy = randn_cpu({128, 256}, t, 4);
    Tensor hx = leaf_on_cpu(x0), hw = leaf_on_cpu(w0), hb = leaf_on_cpu(b0);
    Tensor dx = leaf_on_device(x0), dw = leaf_on_device(w0), db = leaf_on_device(b0);
    Tensor hy = linear(hx, hw, hb), dy = linear(dx, dw, db);
    hy.backward(gy);
    dy.backward(gy.to(kCuda));
    // Both sides round the same f32 accumulations once; allow a few ulps of the largest product.
    const double tol = 4 * eps_of(t) + 784 * eps_of(DType::F32);
    const std::string dt = dtype_name(t);
    check_close(dy, hy, tol, tol * 30, "linear forward " + dt);
    check_close(dx.grad(), hx.grad(), tol, tol * 30, "linear grad x " + dt);
    check_close(dw.grad(), hw.grad(), tol, tol * 30, "linear grad w " + dt);
    check_close(db.grad(), hb.grad(), tol, tol * 30, "linear grad b " + dt);
  }
}

TEST_CASE("cuda: softmax and log_softmax forward and backward", "[cuda][softmax]") {
  MINIDL_REQUIRE_GPU();
  for (DType t : kFloat64) {
    for (int64_t n : {10, 1000, 3000}) {  // warp per row, warp per long row, block per row
      Tensor x0 = randn_cpu({65, n}, t, 1, 4.0), gy = randn_cpu({65, n}, t, 2);
      for (bool log : {false, true}) {
        Tensor hx = leaf_on_cpu(x0), dx = leaf_on_device(x0);
        Tensor hy = log ? log_softmax(hx, 1) : softmax(hx, 1);
        Tensor dy = log ? log_softmax(dx, 1) : softmax(dx, 1);
        hy.backward(gy);
        dy.backward(gy.to(kCuda));
        std::ostringstream what;
        what << (log ? "log_softmax" : "softmax") << " n=" << n << " " << dtype_name(t);
        const double acc = t == DType::F64 ? eps_of(DType::F64) : eps_of(DType::F32);
        const double tol = 2 * eps_of(t) + 8 * std::sqrt(static_cast<double>(n)) * acc;
        check_close(dy, hy, tol, tol, what.str() + " forward");
        check_close(dx.grad(), hx.grad(), 4 * tol, 4 * tol, what.str() + " backward");
      }
    }
  }
  // A row of -inf/large values stays finite where it should, NaN where the CPU gives NaN.
  Tensor big = from_vector<float>({1000, 0, -1000, 88, 89, 90}, {2, 3});
  check_close(softmax(big.to(kCuda), 1), softmax(big, 1), 1e-6, 1e-30, "softmax large logits");
}

TEST_CASE("cuda: fused cross-entropy forward and backward, with ignored rows", "[cuda][softmax]") {
  MINIDL_REQUIRE_GPU();
  for (DType t : kFloat64) {
    for (int64_t classes : {10, 2000}) {
      const int64_t rows = 130;
      Tensor x0 = randn_cpu({rows, classes}, t, 1, 3.0);
      Tensor target = randint(0, classes, {rows}, DType::I64);
      target.slice(0, 0, 10).fill_(-100);  // ignored
      for (Reduction red : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
        CrossEntropyOptions o;
        o.reduction = red;
        Tensor hx = leaf_on_cpu(x0), dx = leaf_on_device(x0);
        Tensor hl = cross_entropy(hx, target, o), dl = cross_entropy(dx, target.to(kCuda), o);
        Tensor g = red == Reduction::None ? randn_cpu({rows}, t, 3) : ones({}, t);
        hl.backward(g);
        dl.backward(g.to(kCuda));
        std::ostringstream what;
        what << "cross_entropy C=" << classes << " reduction " << static_cast<int>(red) << " " << dtype_name(t);
        const double acc = t == DType::F64 ? eps_of(DType::F64) : eps_of(DType::F32);
        const double tol = 2 * eps_of(t) + 8 * std::sqrt(static_cast<double>(classes)) * acc;
        check_close(dl, hl, tol, tol, what.str() + " loss");
        // Each gradient entry is g (p - onehot) / denominator: it cancels where p is near 1 at the
        // target, so the absolute tolerance is on the scale of those terms.
        const double denom = red == Reduction::Mean ? static_cast<double>(rows - 10) : 1.0;
        const double terms = max(abs(cast(g, DType::F64))).item() / denom;
        check_close(dx.grad(), hx.grad(), 4 * tol, 4 * tol * terms, what.str() + " grad");
      }
    }
  }
}

TEST_CASE("cuda: foreach unscale agrees with the CPU scaler, with per-tensor inf/NaN counts", "[cuda][amp]") {
  MINIDL_REQUIRE_GPU();
  for (DType t : kFloat64) {
    REQUIRE(R().foreach_unscale.has(kCuda.type, t));
    std::vector<Tensor> host, dev;
    for (int64_t n : {1, 1000, 40000, 70001}) {
      Tensor g = randn_cpu({n}, t, static_cast<uint64_t>(n), 1000.0);
      host.push_back(g);
    }
    // Poison: tensor 1 gets 2 infs and 1 NaN, tensor 3 one NaN far into its last chunk.
    host[1].slice(0, 5, 7).fill_(INFINITY);
    host[1].slice(0, 500, 501).fill_(NAN);
    host[3].slice(0, 70000, 70001).fill_(NAN);
    for (const Tensor& g : host) dev.push_back(g.to(kCuda));
    const float inv = 1.0f / 1024.0f;
    // One tensor at a time.
    for (size_t i = 0; i < host.size(); ++i) {
      Tensor h = host[i].clone(), d = dev[i].clone();
      const NonFiniteCount hc = foreach_non_finite_check_and_unscale_({h}, inv, true)[0];
      const NonFiniteCount dc = foreach_non_finite_check_and_unscale_({d}, inv, true)[0];
      CHECK(dc.found == hc.found);
      CHECK(dc.inf == hc.inf);
      CHECK(dc.nan == hc.nan);
      check_equal(d, h, std::string("unscale ") + dtype_name(t));
    }
    // All at once: one launch for the group.
    std::vector<Tensor> hs, ds;
    for (size_t i = 0; i < host.size(); ++i) {
      hs.push_back(host[i].clone());
      ds.push_back(dev[i].clone());
    }
    const std::vector<NonFiniteCount> counts = foreach_non_finite_check_and_unscale_(ds, inv, true);
    REQUIRE(counts.size() == 4);
    const std::vector<std::array<int64_t, 3>> want = {{0, 0, 0}, {1, 2, 1}, {0, 0, 0}, {1, 0, 1}};
    for (size_t i = 0; i < 4; ++i) {
      CHECK(counts[i].found == (want[i][0] == 1));
      CHECK(counts[i].inf == want[i][1]);
      CHECK(counts[i].nan == want[i][2]);
    }
    foreach_non_finite_check_and_unscale_(hs, inv);
    for (size_t i = 0; i < hs.size(); ++i) check_equal(ds[i], hs[i], std::string("foreach unscale ") + dtype_name(t));
    // A clean group reports nothing.
    for (const NonFiniteCount& c : foreach_non_finite_check_and_unscale_({dev[0].clone(), dev[2].clone()}, inv))
      CHECK_FALSE(c.found);
  }
}

TEST_CASE("cuda: GradScaler on CUDA follows the CPU scaler step for step", "[cuda][amp]") {
  MINIDL_REQUIRE_GPU();
  struct Plain {
    std::vector<Tensor> params;
    std::vector<Tensor> parameters() const { return params; }
    void step() {
      NoGradGuard ng;
      for (const Tensor& p : params) p.add_(p.grad(), -0.1);
    }
  };
  auto run = [](Device dev) {
    Tensor w = from_vector<float>({0.5f, -1.0f, 2.0f}).to(dev).requires_grad_();
    Plain opt{{w}};
    amp::GradScaler scaler(dev, amp::GradScalerOptions().init_scale_(1024.0).growth_interval_(2));
    std::vector<double> scales;
    for (int i = 0; i < 6; ++i) {
      w.set_grad(Tensor());
      // Step 3 overflows: its loss is multiplied by inf.
      Tensor loss = mul(mul(w, w).sum(), i == 3 ? INFINITY : 1.0);
      scaler.scale(loss).backward();
      auto r = scaler.step(opt);
      scaler.update();
      scales.push_back(scaler.get_scale());
      CHECK(r.found_inf == (i == 3));
    }
    return std::make_pair(w.to(Device::cpu()).detach(), scales);
  };
  auto [hw, hs] = run(Device::cpu());
  auto [dw, ds] = run(kCuda);
  CHECK(ds == hs);
  check_close(dw, hw, 4 * eps_of(DType::F32), 1e-7, "parameters after 6 scaled steps");
}

TEST_CASE("cuda: MLP training, f32 on CUDA tracks the CPU and fp16 autocast learns", "[cuda][train]") {
  MINIDL_REQUIRE_GPU();
  // A separable synthetic problem: class = argmax of a fixed random projection of the input.
  Tensor x = randn_cpu({512, 64}, DType::F32, 1);
  Tensor proj = randn_cpu({64, 10}, DType::F32, 2);
  Tensor y = argmax(mm(x, proj), 1);
  auto make = [] {
    manual_seed(7);
    return std::make_shared<nn::models::MLP>(64, std::vector<int64_t>{128, 128}, 10);
  };

  // f32: five SGD steps on each device from the same initial weights.
  auto hm = make(), dm = make();
  dm->to(kCuda);
  optim::SGD hopt(hm->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD dopt(dm->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  Tensor dx = x.to(kCuda), dy = y.to(kCuda);
  for (int i = 0; i < 5; ++i) {
    hopt.zero_grad();
    dopt.zero_grad();
    Tensor hl = cross_entropy(hm->forward(x.slice(0, 0, 128)), y.slice(0, 0, 128));
    Tensor dl = cross_entropy(dm->forward(dx.slice(0, 0, 128)), dy.slice(0, 0, 128));
    CHECK(dl.item() == Approx(hl.item()).epsilon(1e-4));
    hl.backward();
    dl.backward();
    hopt.step();
    dopt.step();
  }
  auto hp = hm->parameters(), dp = dm->parameters();
  REQUIRE(hp.size() == dp.size());
  for (size_t i = 0; i < hp.size(); ++i) check_close(dp[i], hp[i], 1e-3, 1e-5, "parameter " + std::to_string(i));

  // fp16 autocast + GradScaler: the loss falls and the training accuracy climbs.
  auto am = make();
  am->to(kCuda);
  optim::SGD aopt(am->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  amp::GradScaler scaler(kCuda);
  double first = 0, last = 0;
  int skipped = 0;
  for (int epoch = 0; epoch < 20; ++epoch) {
    for (int64_t b = 0; b < 512; b += 128) {
      aopt.zero_grad();
      Tensor loss;
      {
        amp::autocast scope(kCuda.type);
        Tensor out = am->forward(dx.slice(0, b, b + 128));
        CHECK(out.dtype() == kAmpDType);
        loss = cross_entropy(out, dy.slice(0, b, b + 128));
      }
      scaler.scale(loss).backward();
      auto r = scaler.step(aopt);
      scaler.update();
      if (!r.stepped) ++skipped;
      if (epoch == 0 && b == 0) first = loss.item();
      last = loss.item();
    }
  }
  for (const Tensor& p : am->parameters()) CHECK(p.dtype() == DType::F32);
  CHECK(skipped <= 2);
  CHECK(last < 0.5 * first);
  Tensor pred;
  {
    amp::autocast scope(kCuda.type);
    pred = argmax(am->forward(dx), 1);
  }
  const double acc = static_cast<double>(sum(eq(pred, dy)).item_int()) / 512.0;
  CHECK(acc > 0.9);
}
