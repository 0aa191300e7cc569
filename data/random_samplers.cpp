// SubsetRandomSampler and WeightedRandomSampler.
#include "data/random_samplers.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "data/rng.h"
#include "framework/error.h"

namespace minidl::data {

namespace {
constexpr uint64_t kSubsetSalt = 0x7375627365747273ull;    // "subsetrs"
constexpr uint64_t kWeightedSalt = 0x7765696768746564ull;  // "weighted"
}  // namespace

SubsetRandomSampler::SubsetRandomSampler(std::vector<int64_t> indices, uint64_t seed)
    : indices_(std::move(indices)), seed_(seed) {
  for (int64_t i : indices_) MINIDL_CHECK(i >= 0, "SubsetRandomSampler", "indices must be non-negative, got ", i);
}

std::vector<int64_t> SubsetRandomSampler::indices(int64_t epoch) const {
  std::vector<int64_t> order = indices_;
  DataRng rng(mix_key(seed_, static_cast<uint64_t>(epoch), kSubsetSalt));
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

void SubsetRandomSampler::check_dataset_size(int64_t size) const {
  for (int64_t i : indices_)
    MINIDL_CHECK(i < size, "SubsetRandomSampler", "index ", i, " is out of range for a dataset of ", size, " samples");
}

WeightedRandomSampler::WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement, uint64_t seed)
    : weights_(std::move(weights)), num_samples_(num_samples), replacement_(replacement), seed_(seed) {
  const char* who = "WeightedRandomSampler";
  MINIDL_CHECK(num_samples_ > 0, who, "num_samples should be a positive integer value, but got num_samples=", num_samples_);
  double total = 0;
  int64_t positive = 0;
  for (double w : weights_) {
    MINIDL_CHECK(std::isfinite(w) && w >= 0, who, "weights must be finite and non-negative, got ", w);
    total += w;
    positive += w > 0;
    cumulative_.push_back(total);
  }
  MINIDL_CHECK(total > 0, who, "the weights must have a positive sum");
  MINIDL_CHECK(replacement_ || num_samples_ <= positive, who, "cannot draw ", num_samples_,
               " samples without replacement from ", positive, " positive weights");
}

std::vector<int64_t> WeightedRandomSampler::indices(int64_t epoch) const {
  DataRng rng(mix_key(seed_, static_cast<uint64_t>(epoch), kWeightedSalt));
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(num_samples_));
  if (replacement_) {
    // Inverse of the cumulative distribution: the first index whose running sum exceeds u * total.
    const double total = cumulative_.back();
    // A zero weight repeats the running sum before it, so upper_bound never lands on one.
    for (int64_t k = 0; k < num_samples_; ++k) {
      const double u = std::min(rng.uniform() * total, std::nextafter(total, 0.0));  // the product may round up to total
      out.push_back(std::upper_bound(cumulative_.begin(), cumulative_.end(), u) - cumulative_.begin());
    }
    return out;
  }
  // Without replacement: Efraimidis and Spirakis' keys log(u) / w, largest first, give the order of
  // successive weighted draws among the remaining indices. Zero weights never come up.
  std::vector<std::pair<double, int64_t>> keys;
  for (size_t i = 0; i < weights_.size(); ++i) {
    const double u = 1.0 - rng.uniform();  // (0, 1]
    if (weights_[i] > 0) keys.emplace_back(std::log(u) / weights_[i], static_cast<int64_t>(i));
  }
  std::partial_sort(keys.begin(), keys.begin() + num_samples_, keys.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int64_t k = 0; k < num_samples_; ++k) out.push_back(keys[static_cast<size_t>(k)].second);
  return out;
}

void WeightedRandomSampler::check_dataset_size(int64_t size) const {
  MINIDL_CHECK(static_cast<int64_t>(weights_.size()) == size, "WeightedRandomSampler", "has ", weights_.size(),
               " weights, the dataset has ", size, " samples");
}

}  // namespace minidl::data
