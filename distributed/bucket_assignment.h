// How DistributedDataParallel groups gradients into buckets (torch's
// compute_bucket_assignment_by_size): parameters are walked in reverse registration order, since
// backward produces the last layers' gradients first; each dtype fills its own buckets; a bucket is
// closed once it holds at least its limit (the first bucket of each dtype a small one, so the first
// allreduce starts early, then `bucket_cap_bytes`). A parameter is never split.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "framework/dtype.h"

namespace minidl::dist {

struct BucketParam {
  int64_t numel = 0;
  DType dtype = DType::F32;
};

// Returns the buckets as lists of parameter indices (into params), each in reverse registration
// order, the buckets sorted by their smallest index, descending: the order in which backward is
// expected to complete them, and so the order their allreduces are launched in. Deterministic, so
// every rank computes the same buckets.
std::vector<std::vector<size_t>> compute_bucket_assignment(const std::vector<BucketParam>& params,
                                                           size_t first_bucket_bytes, size_t bucket_cap_bytes);

}  // namespace minidl::dist
