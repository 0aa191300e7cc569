// CUDA runtime entry points: device queries (any failure, such as a missing driver, means "no GPU"),
// the device allocator, host<->device copies, and registration of the CUDA kernels.
#include <cuda_runtime.h>

#include <cstdio>

#include "framework/cuda.h"
#include "framework/storage.h"
#include "ops/cuda/check.h"
#include "ops/kernels.h"

namespace minidl::cuda {

int device_count() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky error: treat any failure as "no GPU"
      return 0;
    }
    return n;
  }();
  return count;
}

bool is_available() { return device_count() > 0; }
bool is_compiled() { return true; }

namespace {
struct DeviceAllocator final : Allocator {
  void* allocate(size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, nbytes);
    if (err != cudaSuccess) {
      cudaGetLastError();
      size_t free_b = 0, total_b = 0;
      cudaMemGetInfo(&free_b, &total_b);
      MINIDL_FAIL("cuda allocator", "out of memory allocating ", nbytes, " bytes (", free_b, " of ", total_b,
                  " bytes free): ", cudaGetErrorString(err));
    }
    return p;
  }
  void deallocate(void* p, size_t) override { cudaFree(p); }
};

// Contiguous copies between host and device, or device to device, of one dtype.
void copy(const Tensor& dst, const Tensor& src) {
  MINIDL_CHECK(dst.dtype() == src.dtype() && dst.shape() == src.shape() && dst.is_contiguous() && src.is_contiguous(),
               "copy_ (cuda)", "cross-device copies need contiguous tensors of one dtype and shape; got ",
               src.meta_str(), " -> ", dst.meta_str());
  cudaMemcpyKind kind = src.device().is_cpu() ? cudaMemcpyHostToDevice
                        : dst.device().is_cpu() ? cudaMemcpyDeviceToHost
                                                : cudaMemcpyDeviceToDevice;
  MINIDL_CUDA_CHECK(cudaMemcpy(dst.raw_data(), src.raw_data(), dst.nbytes(), kind));
}
}  // namespace

}  // namespace minidl::cuda

namespace minidl::kernels::cuda {

void register_kernels(Registry& r) {
  if (!minidl::cuda::is_available()) return;
  static minidl::cuda::DeviceAllocator allocator;
  set_allocator(DeviceType::CUDA, &allocator);
  r.copy.set_all(DeviceType::CUDA, minidl::cuda::copy);
}

}  // namespace minidl::kernels::cuda
