// DistributedSampler and the shared epoch order: see distributed_sampler.h.
#include "data/distributed_sampler.h"

#include <numeric>

#include "data/rng.h"
#include "framework/error.h"

namespace minidl::data {

namespace {
constexpr uint64_t kShuffleSalt = 0x73687566666c65ull;  // "shuffle"
}

std::vector<int64_t> epoch_order(int64_t n, bool shuffle, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (shuffle) {
    DataRng rng(mix_key(seed, static_cast<uint64_t>(epoch), kShuffleSalt));
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  }
  return order;
}

DistributedSampler::DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options)
    : dataset_size_(dataset_size), options_(options) {
  const int64_t w = options_.num_replicas_;
  MINIDL_CHECK(w >= 1, "DistributedSampler", "num_replicas must be >= 1, got ", w);
  MINIDL_CHECK(options_.rank_ >= 0 && options_.rank_ < w, "DistributedSampler", "invalid rank ", options_.rank_,
               ", rank should be in the interval [0, ", w - 1, "]");
  MINIDL_CHECK(dataset_size >= 0, "DistributedSampler", "dataset size must be >= 0, got ", dataset_size);
  total_ = options_.drop_last_ ? dataset_size / w * w : (dataset_size + w - 1) / w * w;
}

void DistributedSampler::set_epoch(int64_t epoch) {
  MINIDL_CHECK(epoch >= 0, "DistributedSampler", "epoch must be >= 0, got ", epoch);
  epoch_ = epoch;
}

std::vector<int64_t> DistributedSampler::global_order(int64_t epoch) const {
  std::vector<int64_t> order = epoch_order(dataset_size_, options_.shuffle_, options_.seed_, epoch);
  if (order.empty()) return order;
  const size_t n = order.size();
  order.resize(static_cast<size_t>(total_));
  for (size_t i = n; i < order.size(); ++i) order[i] = order[i - n];  // pad cyclically
  return order;
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  const std::vector<int64_t> order = global_order(epoch);
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(num_samples()));
  for (size_t i = static_cast<size_t>(options_.rank_); i < order.size(); i += static_cast<size_t>(options_.num_replicas_))
    mine.push_back(order[i]);
  return mine;
}

void DistributedSampler::check_dataset_size(int64_t size) const {
  MINIDL_CHECK(size == dataset_size_, "DistributedSampler", "was made for ", dataset_size_, " samples, the dataset has ", size);
}

}  // namespace minidl::data
