#include "framework/storage.h"

#include <cstdlib>
#include <new>

#include "framework/error.h"

namespace minidl {

namespace {
// 64-byte aligned host memory: whole cache lines and aligned vector loads for every tensor.
struct CpuAllocator final : Allocator {
  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    size_t rounded = (nbytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) MINIDL_FAIL("cpu allocator", "out of memory allocating ", nbytes, " bytes");
    return p;
  }
  void deallocate(void* p, size_t) override { std::free(p); }
};

Allocator*& slot(DeviceType t) {
  static CpuAllocator cpu;
  static Allocator* table[kNumDeviceTypes] = {&cpu, nullptr};
  return table[static_cast<int>(t)];
}
}  // namespace

Allocator* allocator_for(Device device) {
  Allocator* a = slot(device.type);
  MINIDL_CHECK(a != nullptr, "allocator", "no allocator for device ", device.str(),
               " (this build has no CUDA backend, or no GPU was found)");
  return a;
}

void set_allocator(DeviceType type, Allocator* allocator) { slot(type) = allocator; }

Storage::Storage(size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  data_ = allocator_for(device)->allocate(nbytes);
}

Storage::Storage(void* external, size_t nbytes, Device device)
    : data_(external), nbytes_(nbytes), device_(device), owned_(false) {}

Storage::~Storage() {
  if (owned_ && data_) allocator_for(device_)->deallocate(data_, nbytes_);
}

}  // namespace minidl
