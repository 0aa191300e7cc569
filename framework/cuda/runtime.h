// Backend-internal runtime services for the CUDA kernels (not a public header: it includes the CUDA
// runtime). One stream per device: every kernel, copy and cuBLAS call of a device is queued on it,
// which is what lets the caching allocator reuse a freed block at once (see caching_allocator.h).
#pragma once
#include <cuda_runtime.h>

#include "framework/device.h"

namespace minidl::cuda {

// The device's stream (created non-blocking on first use).
cudaStream_t stream(int device);
// Number of streaming multiprocessors (cached), to size grids.
int sm_count(int device);

// Makes `device` current for the scope (only calls cudaSetDevice when it differs), restores after.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  explicit DeviceGuard(Device d) : DeviceGuard(d.index) {}
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = -1;
};

// Waits for the device's stream (host code that reads results a kernel wrote to host memory).
void sync_stream(int device);

}  // namespace minidl::cuda
