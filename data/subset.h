// Views of data sets (torch.utils.data's Subset, ConcatDataset and random_split): they hold a
// reference to the data sets they show, which must outlive them, and copy nothing.
//
//   auto parts = data::random_split_fractions(train_set, {0.9, 0.1}, /*seed=*/1);  // train and validation
//   data::DataLoader loader(parts[0], data::LoaderOptions().batch_size(128).shuffle(true));
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "data/dataset.h"

namespace minidl::data {

// The samples of `dataset` at `indices`, in that order.
class Subset : public Dataset {
 public:
  Subset(const Dataset& dataset, std::vector<int64_t> indices);  // every index within the dataset
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  Example get(int64_t index) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;  // the dataset's own batch copy
  const std::vector<int64_t>& indices() const { return indices_; }

 private:
  const Dataset& dataset_;
  std::vector<int64_t> indices_;
};

// Data sets one after another: index i of the whole is index i - (sizes before) of the set it falls in.
class ConcatDataset : public Dataset {
 public:
  explicit ConcatDataset(std::vector<std::reference_wrapper<const Dataset>> datasets);
  int64_t size() const override { return ends_.empty() ? 0 : ends_.back(); }
  Example get(int64_t index) const override;

 private:
  std::vector<std::reference_wrapper<const Dataset>> datasets_;
  std::vector<int64_t> ends_;  // running sizes
};

// The dataset's indices in one random order from `seed`, cut into consecutive Subsets of `lengths`
// (which must sum to its size). random_split_fractions: of fractions summing to 1, each
// floor(fraction * size) long, the remainder handed out one at a time from the first, as PyTorch's
// random_split with fractions (two names: a braced list of numbers would fit both).
std::vector<Subset> random_split(const Dataset& dataset, const std::vector<int64_t>& lengths, uint64_t seed = 0);
std::vector<Subset> random_split_fractions(const Dataset& dataset, const std::vector<double>& fractions, uint64_t seed = 0);

}  // namespace minidl::data
