// The autocast weight-cast cache of this thread: casts of f32 parameters to a lower precision,
// kept for one autocast region (cleared when the outermost scope exits) so that each weight is
// cast once per region. It stores tensor data only; the ops layer makes the casts
// (ops/autocast_hook.cpp). Deviation from PyTorch: an entry is invalid once its source's version
// changed (PyTorch returns a stale cast after an in-place update inside the region).
#pragma once
#include <cstdint>
#include <memory>

#include "framework/tensor_impl.h"

namespace minidl::amp {

// The cached cast of `source` to `dtype`, or null (never cached, source modified since, or cast to
// another dtype). Counts a hit or a miss.
std::shared_ptr<TensorImpl> find_cached_cast(const TensorImpl& source, DType dtype);
void store_cached_cast(const std::shared_ptr<TensorImpl>& source, std::shared_ptr<TensorImpl> cast);
void clear_autocast_cache();

struct CastCacheStats {
  size_t entries = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
};
CastCacheStats cast_cache_stats();  // this thread's cache

}  // namespace minidl::amp
