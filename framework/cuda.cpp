// CPU-only builds: no CUDA backend, so no devices. The CUDA build defines these in
// framework/cuda/runtime.cu.
#include "framework/cuda.h"

#include <cstdio>

#include "framework/error.h"

namespace minidl::cuda {

std::string format_bytes(size_t bytes) {
  static const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) return std::to_string(bytes) + " bytes";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f %s (%zu bytes)", v, units[u], bytes);
  return buf;
}

}  // namespace minidl::cuda

#ifndef MINIDL_WITH_CUDA
namespace minidl::cuda {
bool is_available() { return false; }
int device_count() { return 0; }
bool is_compiled() { return false; }
Allocator* caching_allocator() { return nullptr; }
DeviceProperties get_device_properties(int device) {
  MINIDL_FAIL("cuda::get_device_properties", "device cuda:", device,
              " is not available: this build has no CUDA backend");
}
MemoryStats memory_stats(int) { return {}; }
void reset_peak_memory_stats(int) {}
void empty_cache() {}
void synchronize(int) {}
int64_t host_sync_count() { return 0; }
void profiler_start() {}
void profiler_stop() {}
}  // namespace minidl::cuda
#endif
