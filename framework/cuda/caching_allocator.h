// The caching allocator's bookkeeping, free of CUDA: it is parameterized on raw alloc/free
// functions, so the CUDA backend plugs in cudaMalloc/cudaFree and the tests plug in fakes that run
// on any machine (tests/test_cuda.cpp). Header-only and C++17-clean for the same reason.
//
// Policy (one instance per device; the backend runs every kernel and copy of a device on one
// stream, so a freed block can be handed out again at once: whatever the next user queues runs
// after everything the previous user queued, and no event is needed; one cache per device is the
// same as one free list per stream):
// - A request of n bytes is rounded up to a size class (round_size): multiples of 512 bytes up to
//   4 KiB, then 8 classes per power of two (at most 12.5% waste), with steps capped at 2 MiB for
//   very large blocks.
// - A freed block goes to the free list of its class. An allocation takes the smallest cached
//   block of at least the rounded size and at most 5/4 of it (a cached 1 GiB block never serves a
//   1 KiB request); only when none fits does it call the device allocator. Steady-state training,
//   which asks for the same sizes every step, therefore calls it zero times per step.
// - When the device allocator fails, every cached block is released and the request retried once;
//   a second failure throws a minidl::Error saying how much was asked and what is held.
// - Blocks are never split or merged: simple, fast, and enough for training loops whose shapes
//   repeat. The destructor releases nothing (at process exit the CUDA context may already be gone).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "framework/cuda.h"
#include "framework/error.h"

namespace minidl::cuda {

class CachingAllocatorCore {
 public:
  struct RawOps {
    // Returns null when the device is out of memory; may throw for other failures.
    std::function<void*(size_t)> alloc;
    std::function<void(void*, size_t)> free;
    // Optional: extra context for the out-of-memory message (e.g. the driver's free/total bytes).
    std::function<std::string()> describe;
  };

  static constexpr size_t kMinBlock = 512;
  static constexpr size_t kMaxStep = size_t{2} << 20;  // 2 MiB

  explicit CachingAllocatorCore(RawOps ops, std::string device_name = "cuda:0")
      : ops_(std::move(ops)), name_(std::move(device_name)) {}
  CachingAllocatorCore(const CachingAllocatorCore&) = delete;
  CachingAllocatorCore& operator=(const CachingAllocatorCore&) = delete;

  // The size class of an n-byte request (n > 0): the block size actually reserved.
  static size_t round_size(size_t n) {
    if (n <= kMinBlock) return kMinBlock;
    size_t p = 1;  // highest power of two <= n
    while (p <= n / 2) p *= 2;
    size_t step = p / 8;
    if (step < kMinBlock) step = kMinBlock;
    if (step > kMaxStep) step = kMaxStep;
    return (n + step - 1) / step * step;
  }
  // The largest cached block an n-byte request (rounded) may take.
  static size_t max_fit(size_t rounded) { return rounded + rounded / 4; }

  // Returns a block of at least n bytes (null for n == 0). Throws minidl::Error on out-of-memory.
  void* allocate(size_t n) {
    if (n == 0) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    const size_t want = round_size(n);
    void* p = nullptr;
    size_t size = 0;
    auto it = free_.lower_bound(want);
    if (it != free_.end() && it->first <= max_fit(want)) {
      size = it->first;
      p = it->second.back();
      it->second.pop_back();
      if (it->second.empty()) free_.erase(it);
      stats_.cached -= size;
      ++stats_.cache_hits;
    } else {
      size = want;
      p = ops_.alloc(size);
      if (!p && stats_.cached > 0) {
        ++stats_.oom_retries;
        release_cached_locked();
        p = ops_.alloc(size);
      }
      if (!p) {
        std::string extra = ops_.describe ? ops_.describe() : std::string();
        MINIDL_FAIL("cuda allocator", "out of memory on ", name_, ": tried to allocate ", format_bytes(n),
                    " (a block of ", format_bytes(size), "); live tensors hold ", format_bytes(stats_.allocated),
                    " and this allocator has reserved ", format_bytes(stats_.reserved),
                    " in all (its cached blocks were released before retrying)", extra.empty() ? "" : "; ", extra,
                    ". Free tensors, lower the batch size, or call cuda::empty_cache() if another allocator "
                    "needs the memory.");
      }
      ++stats_.device_allocs;
      stats_.reserved += size;
      if (stats_.reserved > stats_.peak_reserved) stats_.peak_reserved = stats_.reserved;
    }
    live_.emplace(p, Block{size, n});
    ++stats_.num_allocs;
    stats_.allocated += size;
    stats_.requested += n;
    if (stats_.allocated > stats_.peak_allocated) stats_.peak_allocated = stats_.allocated;
    return p;
  }

  // Returns a block to the cache. False (and nothing changes) when p was not allocated here.
  bool deallocate(void* p) {
    if (!p) return true;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(p);
    if (it == live_.end()) return false;
    const Block b = it->second;
    live_.erase(it);
    stats_.allocated -= b.size;
    stats_.requested -= b.requested;
    stats_.cached += b.size;
    ++stats_.num_frees;
    free_[b.size].push_back(p);
    return true;
  }

  bool owns(void* p) const {
    std::lock_guard<std::mutex> lock(mu_);
    return live_.count(p) != 0;
  }

  // Gives every cached block back to the device allocator.
  void empty_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    release_cached_locked();
  }

  MemoryStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }
  void reset_peak_stats() {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.peak_allocated = stats_.allocated;
    stats_.peak_reserved = stats_.reserved;
  }

 private:
  struct Block {
    size_t size;       // the block's class size
    size_t requested;  // what the caller asked for
  };

  void release_cached_locked() {
    // Block by block, so the books stay right if a free throws part-way.
    while (!free_.empty()) {
      auto it = free_.begin();
      const size_t size = it->first;
      while (!it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        stats_.reserved -= size;
        stats_.cached -= size;
        ++stats_.device_frees;
        ops_.free(p, size);
      }
      free_.erase(it);
    }
  }

  RawOps ops_;
  std::string name_;
  mutable std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;  // class size -> cached blocks
  std::unordered_map<void*, Block> live_;
  MemoryStats stats_;
};

}  // namespace minidl::cuda
