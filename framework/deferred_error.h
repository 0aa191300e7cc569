// Deferred errors: how a CUDA kernel reports bad input (a class target or an index out of range)
// without making the host wait for it. The kernel writes one record into a slot that lives in its
// device's memory (the first error wins); the host reads the slot only where it waits for the
// device anyway (item(), copies to the host, cuda::synchronize(), GradScaler's found-inf read) and
// throws a minidl::Error naming the op and the problem, then clears the slot, so the device stays
// usable. PyTorch reports such input with a device-side assert, which leaves the context unusable.
// The CPU ops check the same input at once, with the same words.
//
// This header is free of CUDA headers and compiles in every build; the slot itself belongs to the
// CUDA runtime (framework/cuda/runtime.h) and the device-side write to framework/cuda/deferred_error.cuh.
#pragma once
#include <cstdint>
#include <string>

namespace minidl::cuda {

// The op whose kernel found the problem; each one's message says what was wrong in its own words.
enum class DeferredOp : int32_t {
  None = 0,      // the slot is empty
  CrossEntropy,  // a class target outside [0, classes) that is not ignore_index
  NllLoss,       // likewise
  IndexSelect,   // an index outside [0, size) of the indexed dimension
  Gather,        // likewise
  Embedding,     // an index outside the table's rows
  OneHot,        // a class value outside [0, num_classes)
};

// One slot per device. Plain data, written by the device and copied to the host as bytes.
struct DeferredErrorRecord {
  int32_t op = 0;       // a DeferredOp; claimed with an atomic compare-and-swap from None
  int32_t unused = 0;
  int64_t value = 0;    // the offending value
  int64_t bound = 0;    // the valid values are 0 .. bound - 1
  int64_t detail = 0;   // the dimension (index_select, gather) or ignore_index (cross_entropy, nll_loss)
};

// The message for a filled record found on cuda:`device`, e.g. "cross_entropy: target 12 is out of
// bounds for 10 classes (expected 0..9 or ignore_index -100); found on cuda:0 and reported at the
// next synchronisation". The part before the ';' is the CPU's message for the same input.
std::string describe(const DeferredErrorRecord& record, int device);

}  // namespace minidl::cuda
