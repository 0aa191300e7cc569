// Subset, ConcatDataset and random_split.
#include "data/subset.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "data/rng.h"
#include "framework/error.h"

namespace minidl::data {

namespace {
constexpr uint64_t kSplitSalt = 0x73706c6974ull;  // "split"
}  // namespace

Subset::Subset(const Dataset& dataset, std::vector<int64_t> indices) : dataset_(dataset), indices_(std::move(indices)) {
  const int64_t n = dataset_.size();
  for (int64_t i : indices_) check_index(i, n, "Subset");
}

Example Subset::get(int64_t index) const {
  check_index(index, size(), "Subset");
  return dataset_.get(indices_[static_cast<size_t>(index)]);
}

Batch Subset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<int64_t> mapped;
  mapped.reserve(indices.size());
  for (int64_t i : indices) {
    check_index(i, size(), "Subset");
    mapped.push_back(indices_[static_cast<size_t>(i)]);
  }
  return dataset_.get_batch(mapped);
}

ConcatDataset::ConcatDataset(std::vector<std::reference_wrapper<const Dataset>> datasets) : datasets_(std::move(datasets)) {
  int64_t total = 0;
  for (const Dataset& d : datasets_) ends_.push_back(total += d.size());
}

Example ConcatDataset::get(int64_t index) const {
  check_index(index, size(), "ConcatDataset");
  const size_t k = static_cast<size_t>(std::upper_bound(ends_.begin(), ends_.end(), index) - ends_.begin());
  const int64_t start = k == 0 ? 0 : ends_[k - 1];
  return datasets_[k].get().get(index - start);
}

std::vector<Subset> random_split(const Dataset& dataset, const std::vector<int64_t>& lengths, uint64_t seed) {
  const int64_t n = dataset.size();
  int64_t total = 0;
  for (int64_t l : lengths) {
    MINIDL_CHECK(l >= 0, "random_split", "lengths must be non-negative, got ", l);
    total += l;
  }
  MINIDL_CHECK(total == n, "random_split", "Sum of input lengths (", total, ") does not equal the length of the input dataset (", n, ")");
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  DataRng rng(mix_key(seed, kSplitSalt));
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  std::vector<Subset> parts;
  auto begin = order.begin();
  for (int64_t l : lengths) {
    parts.emplace_back(dataset, std::vector<int64_t>(begin, begin + l));
    begin += l;
  }
  return parts;
}

std::vector<Subset> random_split_fractions(const Dataset& dataset, const std::vector<double>& fractions, uint64_t seed) {
  double sum = 0;
  for (size_t i = 0; i < fractions.size(); ++i) {
    MINIDL_CHECK(fractions[i] >= 0 && fractions[i] <= 1, "random_split", "Fraction at index ", i, " is not between 0 and 1");
    sum += fractions[i];
  }
  MINIDL_CHECK(std::abs(sum - 1) < 1e-9, "random_split", "fractions must sum up to 1, got ", sum);
  const int64_t n = dataset.size();
  std::vector<int64_t> lengths;
  int64_t assigned = 0;
  for (double f : fractions) {
    lengths.push_back(static_cast<int64_t>(std::floor(f * static_cast<double>(n))));
    assigned += lengths.back();
  }
  for (size_t i = 0; assigned < n && !lengths.empty(); i = (i + 1) % lengths.size(), ++assigned) ++lengths[i];
  return random_split(dataset, lengths, seed);
}

}  // namespace minidl::data
