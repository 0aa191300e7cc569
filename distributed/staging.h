// What the process-group backends share about their buffers: a collective reads and writes one
// contiguous buffer per tensor, the tensor itself when it can, else a staging copy (f16/bf16 are
// summed in f32, so their sums round once, at the end); the result is written back afterwards.
#pragma once
#include <vector>

#include "ops/tensor.h"

namespace minidl::dist {

// The dtype a sum is taken in: f32 for f16 and bf16, the tensor's own otherwise.
DType reduction_dtype(DType t);

struct StagedTensor {
  Tensor dst;  // the caller's tensor
  Tensor buf;  // dst itself, or a contiguous copy of it in the buffer dtype
};
// A buffer for `t` in `buf_dtype`: `t` itself when it is contiguous and of that dtype.
StagedTensor stage(const Tensor& t, DType buf_dtype);
// Puts the collective's result into dst: a copy from the staging buffer, or (written in place)
// a version bump, so autograd sees that the tensor changed.
void write_back(const StagedTensor& s);
void write_back(const StagedTensor& s, const Tensor& result);

// allgather's outputs: filled with new tensors like `input` on its device when empty, else checked
// to be `size` tensors shaped and typed as `input`.
void prepare_gather_outputs(std::vector<Tensor>& outputs, const Tensor& input, int size, const char* op);
// allgather's receive buffer: `size` inputs end to end, flat, on the input's device.
Tensor gather_buffer(const Tensor& input, int size);
// Copies rank r's slice of the receive buffer into outputs[r].
void split_gathered(const std::vector<Tensor>& outputs, const Tensor& gathered);

}  // namespace minidl::dist
