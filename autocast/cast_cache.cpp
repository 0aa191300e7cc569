#include "autocast/cast_cache.h"

#include <unordered_map>

namespace minidl::amp {

namespace {
struct Entry {
  std::weak_ptr<TensorImpl> source;
  uint32_t version;
  std::shared_ptr<TensorImpl> cast;
};
struct Cache {
  std::unordered_map<const TensorImpl*, Entry> entries;
  CastCacheStats stats;
};
Cache& cache() {
  thread_local Cache c;
  return c;
}
}  // namespace

std::shared_ptr<TensorImpl> find_cached_cast(const TensorImpl& source, DType dtype) {
  Cache& c = cache();
  auto it = c.entries.find(&source);
  if (it != c.entries.end() && !it->second.source.expired() && it->second.version == source.storage->version() &&
      it->second.cast->dtype == dtype) {
    ++c.stats.hits;
    return it->second.cast;
  }
  ++c.stats.misses;
  return nullptr;
}

void store_cached_cast(const std::shared_ptr<TensorImpl>& source, std::shared_ptr<TensorImpl> cast) {
  cache().entries[source.get()] = {source, source->storage->version(), std::move(cast)};
}

void clear_autocast_cache() { cache().entries.clear(); }

CastCacheStats cast_cache_stats() {
  CastCacheStats st = cache().stats;
  st.entries = cache().entries.size();
  return st;
}

}  // namespace minidl::amp
