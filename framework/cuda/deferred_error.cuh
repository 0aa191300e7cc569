// The device side of deferred errors (framework/deferred_error.h): a kernel that finds bad input
// records it in its device's slot (from a DeferredErrorSlot, framework/cuda/runtime.h) and goes on
// without touching memory the bad value points to; the host reports it at its next wait.
#pragma once
#include <cstdint>

#include "framework/deferred_error.h"

namespace minidl::cuda {

// Whether v is a valid index into [0, bound).
__device__ __forceinline__ bool in_bounds(int64_t v, int64_t bound) { return v >= 0 && v < bound; }

// Claims the slot for this error unless an earlier one holds it (the first error wins, so the op
// that consumed the bad input first is the one named). Only the claiming thread writes the rest;
// the host reads the record after the kernel has finished.
__device__ __forceinline__ void record_deferred_error(DeferredErrorRecord* slot, DeferredOp op, int64_t value,
                                                      int64_t bound, int64_t detail) {
  if (atomicCAS(reinterpret_cast<int*>(&slot->op), 0, static_cast<int>(op)) != 0) return;
  slot->value = value;
  slot->bound = bound;
  slot->detail = detail;
}

}  // namespace minidl::cuda
