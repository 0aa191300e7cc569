// A reference-counted block of device memory. Views of a tensor share one Storage, and with it the
// version counter that autograd uses to detect in-place changes of saved tensors.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "framework/device.h"

namespace minidl {

// A device's memory source: the CPU one (framework/cpu_allocator.h) and the CUDA caching allocator
// (framework/cuda/caching_allocator.h); set_allocator replaces one (tests poison fresh memory so).
struct Allocator {
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* p, size_t nbytes) = 0;
  // A block for a tensor on `device` (what Storage calls). An allocator serving several devices of
  // its type (the CUDA one: one cache per GPU) must take it from that device's memory; the default
  // ignores the index.
  virtual void* allocate_on(size_t nbytes, Device device) {
    (void)device;
    return allocate(nbytes);
  }
};

Allocator* allocator_for(Device device);
// The built-in CPU allocator (framework/cpu_allocator.h: aligned blocks, a cache of large ones).
Allocator* cpu_allocator();
void set_allocator(DeviceType type, Allocator* allocator);

class Storage {
 public:
  Storage(size_t nbytes, Device device);
  // Wraps memory the caller owns; it must outlive the storage.
  Storage(void* external, size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  bool owned_ = true;
  std::atomic<uint32_t> version_{0};
};

}  // namespace minidl
