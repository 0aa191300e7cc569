#include "framework/cpu_allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <map>
#include <mutex>
#include <string>

#include "framework/error.h"
#include "framework/storage.h"

namespace minidl {

namespace {
constexpr size_t kAlign = 64;
// Blocks from 64 KiB up are cached: below that glibc serves them from its heap without touching
// the kernel; above it, each free at the top of the heap may be trimmed (or munmapped) and the next
// step page-faults the block again. A bf16 LeNet step (activations of 0.1-0.6 MB) took 3x the page
// faults of its f32 twin (whose activations, twice the size, were cached from 1 MiB): bench/README.md.
constexpr size_t kLargeBlock = size_t{64} << 10;

// The default cap: an eighth of the machine's memory, at least 256 MiB. A training step frees and
// reallocates its whole working set; a cap below it (ResNet-20 at batch 512 holds ~1.2 GB) sends
// the overflow back to the system every step, and the next step page-faults it in again: with a
// 256 MiB cap that step ran at 0.64x of its speed under a 3 GiB one, at the same peak RSS, because
// cached blocks are the ones the next step reuses (bench/README.md).
size_t default_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const size_t eighth = pages > 0 && page > 0 ? static_cast<size_t>(pages) / 8 * static_cast<size_t>(page) : 0;
  return std::max(eighth, size_t{256} << 20);
}

size_t limit_from_env() {
  const char* v = std::getenv("MINIDL_CPU_CACHE_MB");
  if (!v || !*v) return default_limit();
  char* end = nullptr;
  const unsigned long long mb = std::strtoull(v, &end, 10);
  MINIDL_CHECK(v[0] >= '0' && v[0] <= '9' && end && *end == '\0' && mb <= (SIZE_MAX >> 21), "cpu allocator",
               "MINIDL_CPU_CACHE_MB must be a whole number of MiB, got '", v, "'");
  return static_cast<size_t>(mb) << 20;
}

// The size a request is served with: cache lines below 64 KiB; above, the next of eight steps
// between consecutive powers of two, so blocks of nearby sizes share a class.
size_t rounded_size(size_t nbytes) {
  if (nbytes < kLargeBlock) return (nbytes + kAlign - 1) / kAlign * kAlign;
  size_t pow2 = kLargeBlock;
  while (pow2 <= nbytes / 2) pow2 *= 2;
  const size_t step = pow2 / 8;
  return (nbytes + step - 1) / step * step;
}

// Blocks from 2 MiB up are aligned to 2 MiB and offered to the kernel's transparent huge pages
// (MADV_HUGEPAGE; a no-op where THP is off): their first touch then faults once per 2 MiB instead of
// once per 4 KiB. The first training step touches its whole working set: ResNet-20 b128, ~300 MB,
// is 75,000 faults in 4 KiB pages, and on a paravirtualised VM a fault costs microseconds
// (bench/README.md, performance log 18).
constexpr size_t kHugePage = size_t{2} << 20;

// Only the whole huge pages inside the block are advised: a partial one at its end would be
// faulted in whole, up to 2 MiB of resident memory the block never uses.
void* system_alloc(size_t size) {
  if (size < kHugePage) return std::aligned_alloc(kAlign, size);
  void* p = nullptr;
  if (posix_memalign(&p, kHugePage, size) != 0) return nullptr;
#ifdef MADV_HUGEPAGE
  madvise(p, size / kHugePage * kHugePage, MADV_HUGEPAGE);  // advice only: its failure changes nothing
#endif
  return p;
}

class CpuAllocator final : public Allocator {
 public:
  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    MINIDL_CHECK(nbytes <= static_cast<size_t>(PTRDIFF_MAX) / 2, "cpu allocator", "cannot allocate ", nbytes,
                 " bytes (larger than the address space)");
    const size_t size = rounded_size(nbytes);
    if (size >= kLargeBlock) {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(size);
      if (it != free_.end()) {
        void* p = it->second;
        free_.erase(it);
        cached_ -= size;
        ++hits_;
        return p;
      }
      ++misses_;
    }
    void* p = system_alloc(size);
    if (!p) {
      cpu_empty_cache();  // the cache may hold what the system now lacks
      p = system_alloc(size);
    }
    if (!p) MINIDL_FAIL("cpu allocator", "out of memory allocating ", nbytes, " bytes");
    return p;
  }

  void deallocate(void* p, size_t nbytes) override {
    const size_t size = rounded_size(nbytes);
    if (p && size >= kLargeBlock) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_ + size <= limit_) {
        try {
          free_.emplace(size, p);
          cached_ += size;
          return;
        } catch (const std::bad_alloc&) {  // no memory for the cache's node: free the block instead
        }
      }
    }
    std::free(p);
  }

  void empty() {
    std::multimap<size_t, void*> blocks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks.swap(free_);
      cached_ = 0;
    }
    for (auto& [size, p] : blocks) std::free(p);
  }

  CpuCacheStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {cached_, hits_, misses_};
  }
  size_t limit() {
    std::lock_guard<std::mutex> lock(mutex_);
    return limit_;
  }
  void set_limit(size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      limit_ = bytes;
    }
    empty();
  }

 private:
  std::mutex mutex_;
  std::multimap<size_t, void*> free_;  // rounded size -> block
  size_t cached_ = 0, hits_ = 0, misses_ = 0;
  size_t limit_ = limit_from_env();
};

// Never destroyed: tensors in static objects may be freed after main returns.
CpuAllocator& instance() {
  static CpuAllocator* a = new CpuAllocator();
  return *a;
}
}  // namespace

Allocator* cpu_allocator() { return &instance(); }
CpuCacheStats cpu_cache_stats() { return instance().stats(); }
void cpu_empty_cache() { instance().empty(); }
size_t cpu_cache_limit() { return instance().limit(); }
void set_cpu_cache_limit(size_t bytes) { instance().set_limit(bytes); }

}  // namespace minidl
