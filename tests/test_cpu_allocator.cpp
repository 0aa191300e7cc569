// The CPU allocator's cache of large blocks: reuse within a size class, the cap, empty_cache, and
// that tensors on reused memory behave as on fresh memory.
#include <catch2/catch.hpp>

#include "minidl.h"

using namespace minidl;

namespace {
// Restores the cache limit and empties the cache when a test case ends.
struct CacheLimitGuard {
  size_t saved = cpu_cache_limit();
  ~CacheLimitGuard() { set_cpu_cache_limit(saved); }
};
}  // namespace

TEST_CASE("a freed large block is reused by the next request of its size class", "[allocator]") {
  CacheLimitGuard guard;
  set_cpu_cache_limit(64 << 20);
  const void* first;
  {
    Tensor a = empty({(3 << 20) - 1000}, DType::F32);  // just under 12 MiB: the 12 MiB class
    first = a.data_ptr<float>();
  }
  CHECK(cpu_cache_stats().cached_bytes == (size_t{12} << 20));
  const size_t hits = cpu_cache_stats().hits;
  Tensor b = empty({3 << 20}, DType::F32);  // exactly 12 MiB: the same class
  CHECK(static_cast<const void*>(b.data_ptr<float>()) == first);
  CHECK(cpu_cache_stats().hits == hits + 1);
  CHECK(cpu_cache_stats().cached_bytes == 0);
  Tensor c = empty({4 << 20}, DType::F32);  // 16 MiB: another class, fresh memory
  CHECK(static_cast<const void*>(c.data_ptr<float>()) != first);
}

TEST_CASE("blocks from 64 KiB up are cached, smaller ones are not", "[allocator]") {
  CacheLimitGuard guard;
  set_cpu_cache_limit(64 << 20);
  cpu_empty_cache();
  { Tensor a = empty({300 << 10}, DType::BF16); }  // 600 KiB: the 640 KiB class (512 KiB + 2 x 64 KiB steps)
  CHECK(cpu_cache_stats().cached_bytes == (size_t{640} << 10));
  const size_t hits = cpu_cache_stats().hits;
  { Tensor b = empty({16 << 10}, DType::F32); }  // exactly 64 KiB: its own class
  CHECK(cpu_cache_stats().cached_bytes == (size_t{704} << 10));
  { Tensor c = empty({(16 << 10) - 16}, DType::F32); }  // just under 64 KiB: straight to malloc/free
  CHECK(cpu_cache_stats().cached_bytes == (size_t{704} << 10));
  Tensor d = empty({310 << 10}, DType::BF16);  // 620 KiB: the same 640 KiB class, from the cache
  CHECK(cpu_cache_stats().hits == hits + 1);
  CHECK(cpu_cache_stats().cached_bytes == (size_t{64} << 10));
}

TEST_CASE("blocks from 2 MiB up start on a 2 MiB boundary (transparent huge pages), smaller ones on 64 bytes", "[allocator]") {
  CacheLimitGuard guard;
  set_cpu_cache_limit(0);  // fresh blocks from the system every time
  for (int64_t floats : {int64_t{1} << 19, (int64_t{5} << 18) + 7, int64_t{3} << 20}) {  // 2, 5 and 12 MiB
    Tensor t = empty({floats}, DType::F32);
    INFO(floats << " floats");
    CHECK(reinterpret_cast<uintptr_t>(t.raw_data()) % (uintptr_t{2} << 20) == 0);
    t.fill_(1.5);  // the whole block is usable
    CHECK(sum(t).item() == 1.5 * static_cast<double>(floats));
  }
  Tensor small = empty({(int64_t{1} << 19) - 16}, DType::F32);
  CHECK(reinterpret_cast<uintptr_t>(small.raw_data()) % 64 == 0);
}

TEST_CASE("the cache stays under its cap, and empty_cache releases everything", "[allocator]") {
  CacheLimitGuard guard;
  set_cpu_cache_limit(20 << 20);
  {
    Tensor a = empty({3 << 20}, DType::F32), b = empty({3 << 20}, DType::F32);  // 12 MiB each
  }
  CHECK(cpu_cache_stats().cached_bytes == (size_t{12} << 20));  // the second one did not fit
  cpu_empty_cache();
  CHECK(cpu_cache_stats().cached_bytes == 0);
  set_cpu_cache_limit(0);  // caching off
  { Tensor a = empty({3 << 20}, DType::F32); }
  CHECK(cpu_cache_stats().cached_bytes == 0);
}

TEST_CASE("ops on reused blocks give the same results as on fresh ones", "[allocator]") {
  CacheLimitGuard guard;
  set_cpu_cache_limit(256 << 20);
  Tensor x = randn({1 << 20});
  Tensor expect_sum = sum(mul(x, x));
  for (int i = 0; i < 3; ++i) {
    { Tensor junk = full({1 << 20}, 7.0); }  // leaves a block full of 7s in the cache
    CHECK(sum(mul(x, x)).item() == expect_sum.item());
    CHECK(sum(zeros({1 << 20})).item() == 0.0);  // zeros must not inherit the 7s
  }
  CHECK(cpu_cache_stats().hits > 0);
}
