// Backend-internal runtime services for the CUDA kernels (not a public header: it includes the CUDA
// runtime). One stream per device: every kernel, copy and cuBLAS call of a device is queued on it,
// which is what lets the caching allocator reuse a freed block at once (see caching_allocator.h).
#pragma once
#include <cuda_runtime.h>

#include "framework/deferred_error.h"
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

// Waits for the device's stream (host code that reads results a kernel wrote to host memory). Every
// host wait goes through here, so it is also where a deferred error is reported: when a validating
// kernel ran since the last wait, the device's error slot is copied back behind the queued work (no
// second wait), and a filled slot is cleared and thrown as a minidl::Error (framework/deferred_error.h).
void sync_stream(int device);

// A validating kernel's handle on its device's deferred-error slot: pass get() to the kernel, which
// records bad input with record_deferred_error (framework/cuda/deferred_error.cuh). Destroyed after
// the launch, it arms the check at the device's next sync_stream; arming before the launch could let
// a wait on another thread read the slot, and disarm it, before the kernel had run.
class DeferredErrorSlot {
 public:
  explicit DeferredErrorSlot(int device);
  explicit DeferredErrorSlot(Device d) : DeferredErrorSlot(d.index) {}
  ~DeferredErrorSlot();
  DeferredErrorSlot(const DeferredErrorSlot&) = delete;
  DeferredErrorSlot& operator=(const DeferredErrorSlot&) = delete;
  DeferredErrorRecord* get() const { return slot_; }

 private:
  int device_;
  DeferredErrorRecord* slot_;
};

}  // namespace minidl::cuda
