// A scratch buffer owned by one thread and kept between calls, grown when a call needs more and
// never shrunk: for kernels whose temporaries would otherwise be fresh allocations every call. A
// fresh allocation of more than glibc's mmap threshold is fresh pages, and every first touch of a
// page is a fault: a 128x16x32x32 reorder into new memory took 11.7 ms (0.7 GB/s), and on a
// paravirtualised VM faults took 31% of an MLP step (bench/README.md, performance log 16).
#pragma once
#include <cstddef>
#include <cstdlib>
#include <new>

namespace minidl::kernels::cpu {

class ThreadBuffer {
 public:
  ThreadBuffer() = default;
  ThreadBuffer(const ThreadBuffer&) = delete;
  ThreadBuffer& operator=(const ThreadBuffer&) = delete;
  ~ThreadBuffer() { std::free(data_); }

  // At least `bytes` bytes, 64-byte aligned; the contents are not kept when it grows.
  void* reserve(size_t bytes) {
    if (capacity_ < bytes) {
      std::free(data_);
      data_ = nullptr;
      capacity_ = 0;
      const size_t rounded = (bytes + 63) / 64 * 64;
      data_ = std::aligned_alloc(64, rounded);
      if (!data_) throw std::bad_alloc();
      capacity_ = rounded;
    }
    return data_;
  }

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace minidl::kernels::cpu
