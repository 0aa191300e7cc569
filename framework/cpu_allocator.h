// The CPU allocator: 64-byte aligned blocks, with a bounded cache of freed large blocks.
// Why a cache: glibc serves blocks above its mmap threshold (at most 32 MiB) with a fresh mmap and
// returns them with munmap, so every large temporary page-faults all of its pages again; an op
// on 16M floats ran at 0.13-0.28 of memcpy speed for that reason alone (bench/README.md). Blocks of
// at least 64 KiB are rounded up to a size class (1/8 steps between powers of two, <= 12.5% waste)
// and kept when freed, up to a cap (MINIDL_CPU_CACHE_MB; default an eighth of the machine's
// memory, at least 256 MiB; 0 turns caching off), then reused for the next request of their class.
// Smaller blocks go straight to malloc/free.
#pragma once
#include <cstddef>

namespace minidl {

struct CpuCacheStats {
  size_t cached_bytes = 0;  // freed blocks held for reuse
  size_t hits = 0, misses = 0;  // large allocations served from the cache / from the system
};

CpuCacheStats cpu_cache_stats();
// Returns every cached block to the system (as torch.cuda.empty_cache does on CUDA).
void cpu_empty_cache();
// The cap in bytes (read from MINIDL_CPU_CACHE_MB once, overridable for tests).
size_t cpu_cache_limit();
void set_cpu_cache_limit(size_t bytes);

}  // namespace minidl
