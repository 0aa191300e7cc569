// CUDA runtime entry points: device queries (any failure, such as a missing driver, means "no GPU"),
// device properties, one stream per device, and the caching device allocator and its statistics.
// The core floor: no ops (their CUDA kernels register in ops/cuda/register.cu).
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include "framework/cuda.h"
#include "framework/storage.h"
#include "framework/cuda/caching_allocator.h"
#include "framework/cuda/check.h"
#include "framework/cuda/runtime.h"
#include "framework/warning.h"

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

DeviceProperties get_device_properties(int device) {
  check_device(Device::cuda(device), "cuda::get_device_properties");
  cudaDeviceProp p{};
  MINIDL_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  DeviceProperties d;
  d.index = device;
  d.name = p.name;
  d.major = p.major;
  d.minor = p.minor;
  d.total_memory = p.totalGlobalMem;
  d.multiprocessor_count = p.multiProcessorCount;
  d.max_threads_per_block = p.maxThreadsPerBlock;
  d.shared_memory_per_block = p.sharedMemPerBlock;
  return d;
}

namespace {
// Per-device state, created once for every device on first use.
struct DeviceState {
  cudaStream_t stream = nullptr;
  int sm_count = 0;
  std::once_flag once;
  // Deferred errors: the slot kernels write (device memory), its pinned host copy, whether a
  // validating kernel was queued since the last read, and a lock for the read.
  DeferredErrorRecord* error_slot = nullptr;
  DeferredErrorRecord* error_copy = nullptr;
  std::atomic<bool> error_check_armed{false};
  std::mutex error_mutex;
};

std::vector<DeviceState>& devices() {
  static std::vector<DeviceState> d(static_cast<size_t>(device_count()));
  return d;
}

DeviceState& state(int device) {
  auto& all = devices();
  MINIDL_CHECK(device >= 0 && device < static_cast<int>(all.size()), "cuda", "device cuda:", device,
               " is not available: this machine has ", all.size(), " CUDA device(s)");
  DeviceState& s = all[static_cast<size_t>(device)];
  std::call_once(s.once, [&] {
    DeviceGuard g(device);
    MINIDL_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    MINIDL_CUDA_CHECK(cudaDeviceGetAttribute(&s.sm_count, cudaDevAttrMultiProcessorCount, device));
    // Outside the caching allocator: one small block for the life of the process.
    // Two records: the slot kernels fill, and the one take_deferred_error moves it to.
    MINIDL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&s.error_slot), 2 * sizeof(DeferredErrorRecord)));
    MINIDL_CUDA_CHECK(cudaMemsetAsync(s.error_slot, 0, 2 * sizeof(DeferredErrorRecord), s.stream));
    MINIDL_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&s.error_copy), sizeof(DeferredErrorRecord)));
    *s.error_copy = DeferredErrorRecord{};
  });
  return s;
}

thread_local int current_device = -1;  // cache of cudaGetDevice for this thread

int get_current_device() {
  if (current_device < 0) MINIDL_CUDA_CHECK(cudaGetDevice(&current_device));
  return current_device;
}
}  // namespace

cudaStream_t stream(int device) { return state(device).stream; }
int sm_count(int device) { return state(device).sm_count; }

DeviceGuard::DeviceGuard(int device) {
  const int cur = get_current_device();
  if (cur != device) {
    MINIDL_CUDA_CHECK(cudaSetDevice(device));
    current_device = device;
    prev_ = cur;
  }
}

DeviceGuard::~DeviceGuard() {
  if (prev_ >= 0 && cudaSetDevice(prev_) == cudaSuccess) current_device = prev_;
}

namespace {
std::atomic<int64_t> host_syncs{0};

// Moves the slot's record to `taken` and empties the slot, as one operation in stream order: every
// kernel queued before it is in the record, every kernel queued after it finds an empty slot and
// reports anew (a copy, a wait and a later clear would lose an error recorded in between).
__global__ void take_deferred_error(DeferredErrorRecord* slot, DeferredErrorRecord* taken) {
  *taken = *slot;
  *slot = DeferredErrorRecord{};
}
}  // namespace

void sync_stream(int device) {
  host_syncs.fetch_add(1, std::memory_order_relaxed);
  DeviceState& s = state(device);
  if (!s.error_check_armed.load(std::memory_order_acquire)) {
    MINIDL_CUDA_CHECK(cudaStreamSynchronize(s.stream));
    return;
  }
  std::lock_guard<std::mutex> lock(s.error_mutex);
  const bool armed = s.error_check_armed.exchange(false, std::memory_order_acq_rel);
  // Queued behind every kernel already launched, so the one wait below covers the take and the copy.
  if (armed) {
    DeviceGuard g(device);  // a kernel goes on a stream of the current device
    DeferredErrorRecord* taken = s.error_slot + 1;
    take_deferred_error<<<1, 1, 0, s.stream>>>(s.error_slot, taken);
    MINIDL_CUDA_CHECK(cudaGetLastError());
    MINIDL_CUDA_CHECK(cudaMemcpyAsync(s.error_copy, taken, sizeof(DeferredErrorRecord), cudaMemcpyDeviceToHost, s.stream));
  }
  MINIDL_CUDA_CHECK(cudaStreamSynchronize(s.stream));
  if (!armed || s.error_copy->op == 0) return;
  const DeferredErrorRecord found = *s.error_copy;
  *s.error_copy = DeferredErrorRecord{};
  throw Error(describe(found, device));
}

DeferredErrorSlot::DeferredErrorSlot(int device) : device_(device), slot_(state(device).error_slot) {}

DeferredErrorSlot::~DeferredErrorSlot() { state(device_).error_check_armed.store(true, std::memory_order_release); }

int64_t host_sync_count() { return host_syncs.load(std::memory_order_relaxed); }

void profiler_start() {
  if (is_available()) MINIDL_CUDA_CHECK(cudaProfilerStart());
}
void profiler_stop() {
  if (is_available()) MINIDL_CUDA_CHECK(cudaProfilerStop());
}

void synchronize(int device) {
  if (!is_available()) return;
  if (device >= 0) return sync_stream(device);
  for (int d = 0; d < device_count(); ++d) sync_stream(d);
}

namespace {
// The Allocator the Storage layer sees: one CachingAllocatorCore per device over cudaMalloc/cudaFree.
// A tensor's block comes from its own device (allocate_on, which Storage calls); a bare allocate()
// carries no device and takes the calling thread's current one. Frees find the owning device's
// cache by pointer.
class DeviceCachingAllocator final : public Allocator {
 public:
  DeviceCachingAllocator() {
    for (int d = 0; d < device_count(); ++d) {
      CachingAllocatorCore::RawOps ops;
      ops.alloc = [d](size_t n) -> void* {
        DeviceGuard g(d);
        void* p = nullptr;
        cudaError_t err = cudaMalloc(&p, n);
        if (err == cudaErrorMemoryAllocation) {
          cudaGetLastError();  // not sticky: clear it so later calls do not report it
          return nullptr;
        }
        MINIDL_CUDA_CHECK(err);
        return p;
      };
      ops.free = [d](void* p, size_t) {
        DeviceGuard g(d);
        MINIDL_CUDA_CHECK(cudaFree(p));
      };
      ops.describe = [d]() {
        DeviceGuard g(d);
        size_t free_b = 0, total_b = 0;
        if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
          cudaGetLastError();
          return std::string();
        }
        return detail::concat("the driver reports ", format_bytes(free_b), " free of ", format_bytes(total_b));
      };
      cores_.push_back(std::make_unique<CachingAllocatorCore>(std::move(ops), Device::cuda(d).str()));
    }
  }

  void* allocate(size_t nbytes) override { return core(get_current_device()).allocate(nbytes); }
  void* allocate_on(size_t nbytes, Device device) override { return core(device.index).allocate(nbytes); }

  void deallocate(void* p, size_t) override {
    if (!p) return;
    for (auto& c : cores_)
      if (c->deallocate(p)) return;
    std::ostringstream os;
    os << "cuda allocator: freeing " << p << ", which it did not allocate (ignored)";
    warn(os.str());
  }

  CachingAllocatorCore& core(int device) {
    MINIDL_CHECK(device >= 0 && device < static_cast<int>(cores_.size()), "cuda allocator", "device cuda:", device,
                 " is not available: this machine has ", cores_.size(), " CUDA device(s)");
    return *cores_[static_cast<size_t>(device)];
  }
  int count() const { return static_cast<int>(cores_.size()); }

 private:
  std::vector<std::unique_ptr<CachingAllocatorCore>> cores_;
};

// Built on first use and never destroyed: tensors freed during static destruction still find it.
DeviceCachingAllocator& device_allocator() {
  static DeviceCachingAllocator* a = new DeviceCachingAllocator();
  return *a;
}
}  // namespace

MemoryStats memory_stats(int device) {
  if (!is_available()) return {};
  return device_allocator().core(device).stats();
}

void reset_peak_memory_stats(int device) {
  if (!is_available()) return;
  device_allocator().core(device).reset_peak_stats();
}

Allocator* caching_allocator() { return is_available() ? &device_allocator() : nullptr; }

void empty_cache() {
  if (!is_available()) return;
  auto& a = device_allocator();
  for (int d = 0; d < a.count(); ++d) {
    // Queued kernels may still use blocks that were freed on the host side: wait for them.
    sync_stream(d);
    a.core(d).empty_cache();
  }
}

}  // namespace minidl::cuda
