#include "framework/storage.h"

#include "framework/cuda.h"
#include "framework/error.h"

namespace minidl {

namespace {
// The CUDA slot is filled on first use from the CUDA runtime (framework/cuda/runtime.cu), so that
// CPU-only programs never touch the driver.
Allocator*& slot(DeviceType t) {
  static Allocator* table[kNumDeviceTypes] = {cpu_allocator(), nullptr};
  Allocator*& a = table[static_cast<int>(t)];
  if (!a && t == DeviceType::CUDA) a = cuda::caching_allocator();
  return a;
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
  data_ = allocator_for(device)->allocate_on(nbytes, device);
}

Storage::Storage(void* external, size_t nbytes, Device device)
    : data_(external), nbytes_(nbytes), device_(device), owned_(false) {}

Storage::~Storage() {
  if (owned_ && data_) allocator_for(device_)->deallocate(data_, nbytes_);
}

}  // namespace minidl
