// Eigen's GEMM blocking (the panel sizes it picks from the caches) with the packed panels in
// per-thread buffers kept between products. Eigen's own blocking puts a panel of up to 128 KiB on
// the stack and a larger one in a fresh heap block per product; past glibc's mmap threshold that is
// fresh pages, faulted in on every product while they are packed (31% of an MLP b128 step on a
// paravirtualised Zen 5 VM; bench/README.md, performance log 16). Only for the kernel sets' GEMM
// loops (gemm.cpp, widening_gemm.h), which run one product at a time per thread.
#pragma once
#include <Eigen/Core>

#include "ops/cpu/thread_buffer.h"

namespace minidl::kernels::cpu {

// One buffer per operand panel, shared by every element type a thread multiplies in.
inline void* packing_buffer(int panel, size_t bytes) {
  thread_local ThreadBuffer panels[2];
  return panels[panel].reserve(bytes);
}

template <int COrder, class T>
class ReusedBlocking
    : public Eigen::internal::gemm_blocking_space<COrder, T, T, Eigen::Dynamic, Eigen::Dynamic, Eigen::Dynamic> {
  using Base = Eigen::internal::gemm_blocking_space<COrder, T, T, Eigen::Dynamic, Eigen::Dynamic, Eigen::Dynamic>;

 public:
  // The blocking of a sequential product (one thread, L3 blocking as Matrix::operator* uses).
  ReusedBlocking(Eigen::Index rows, Eigen::Index cols, Eigen::Index depth) : Base(rows, cols, depth, 1, true) {
    const size_t a = static_cast<size_t>(this->mc() * this->kc()), b = static_cast<size_t>(this->kc() * this->nc());
    this->m_blockA = static_cast<T*>(packing_buffer(0, a * sizeof(T)));
    this->m_blockB = static_cast<T*>(packing_buffer(1, b * sizeof(T)));
  }
  // The buffers are the thread's: Eigen's destructor must not free them.
  ~ReusedBlocking() {
    this->m_blockA = nullptr;
    this->m_blockB = nullptr;
  }
  ReusedBlocking(const ReusedBlocking&) = delete;
  ReusedBlocking& operator=(const ReusedBlocking&) = delete;
};

}  // namespace minidl::kernels::cpu
