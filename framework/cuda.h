// Queries about the CUDA backend. Safe to call in every build: without the backend, or without a
// working GPU and driver, is_available() is false, device_count() is 0 and the memory queries
// report zeros. C++17-clean and free of CUDA headers (the backend's .cu files include it).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "framework/device.h"

namespace minidl {
struct Allocator;
}

namespace minidl::cuda {

// The caching allocator of CUDA memory; null without the backend or without a usable GPU.
Allocator* caching_allocator();

bool is_available();
int device_count();
// Whether this build contains the CUDA backend at all.
bool is_compiled();

// Throws a minidl::Error naming `op` when `device` cannot be used here: a CUDA device in a build
// without the backend, on a machine without a GPU, or with an index past device_count().
void check_device(Device device, const char* op);

// What the driver reports about one device. Throws (naming the index) when it is not available.
struct DeviceProperties {
  int index = 0;
  std::string name;                // "NVIDIA H200"
  int major = 0, minor = 0;        // compute capability
  size_t total_memory = 0;         // bytes
  int multiprocessor_count = 0;
  int max_threads_per_block = 0;
  size_t shared_memory_per_block = 0;  // bytes
};
DeviceProperties get_device_properties(int device = 0);

// The caching allocator's counters for one device. Byte counts are of blocks (requests rounded up
// to the allocator's size classes), except `requested`, which sums what callers asked for.
struct MemoryStats {
  size_t allocated = 0;       // bytes in blocks held by live tensors
  size_t reserved = 0;        // bytes obtained from the device: allocated + cached
  size_t cached = 0;          // bytes in free blocks kept for reuse (reserved - allocated)
  size_t requested = 0;       // bytes asked for by live allocations, before rounding
  size_t peak_allocated = 0;  // highest `allocated` since start or reset_peak_memory_stats()
  size_t peak_reserved = 0;   // highest `reserved` likewise
  int64_t num_allocs = 0;     // allocations served (cache hits + device allocations)
  int64_t num_frees = 0;      // blocks returned to the cache
  int64_t cache_hits = 0;     // allocations served from a cached block
  int64_t device_allocs = 0;  // calls to the device allocator (cudaMalloc)
  int64_t device_frees = 0;   // calls to the device free (cudaFree)
  int64_t oom_retries = 0;    // device allocations retried after releasing the cache
};
MemoryStats memory_stats(int device = 0);
void reset_peak_memory_stats(int device = 0);
// Returns every cached (unused) block of every device to the driver; live tensors are untouched.
void empty_cache();
// Waits until all work queued on `device`'s stream has finished (-1: every device). No-op without GPU.
// Like every host wait, it throws the first bad input a kernel found since the last one (a class
// target or an index out of range, framework/deferred_error.h), then clears it.
void synchronize(int device = -1);
// How many times the host has waited for a device's whole stream to drain since the process
// started: synchronize(), every read of device memory into host memory (item(), to_vector(),
// to(cpu)) and copies between two GPUs (not an upload's wait for its pinned staging buffer). Lets
// a test check that work is queued without waiting. 0 without the backend.
int64_t host_sync_count();
// Bound the region that a profiler started with its recording off (ncu --profile-from-start off)
// records: cudaProfilerStart/Stop. No-op without the backend.
void profiler_start();
void profiler_stop();

// "1.50 MiB (1572864 bytes)": how allocator messages print sizes.
std::string format_bytes(size_t bytes);

}  // namespace minidl::cuda
