// SubsetRandomSampler and WeightedRandomSampler (torch.utils.data's): the epoch's indices drawn
// from (seed, epoch) with the data layer's own random numbers (data/rng.h), so a run's order is
// reproducible and resumable; the values differ from PyTorch's generator.
//
//   // Class-balanced batches: each sample weighted by 1 / (its class's count).
//   auto sampler = std::make_shared<data::WeightedRandomSampler>(weights, train.size());
//   data::DataLoader loader(train, data::LoaderOptions().batch_size(64).sampler(sampler));
#pragma once
#include <cstdint>
#include <vector>

#include "data/sampler.h"

namespace minidl::data {

// The given indices in a new random order every epoch (a held-out part of a data set, say).
class SubsetRandomSampler : public Sampler {
 public:
  explicit SubsetRandomSampler(std::vector<int64_t> indices, uint64_t seed = 0);
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t num_samples() const override { return static_cast<int64_t>(indices_.size()); }
  void check_dataset_size(int64_t size) const override;  // every index below size

 private:
  std::vector<int64_t> indices_;
  uint64_t seed_;
};

// num_samples indices, index i drawn with probability weights[i] / sum(weights): with replacement
// (each draw independent), or without (successive draws among those not yet drawn, as
// torch.multinomial). Weights must be finite and non-negative with a positive sum; without
// replacement num_samples may not exceed the number of positive weights.
class WeightedRandomSampler : public Sampler {
 public:
  WeightedRandomSampler(std::vector<double> weights, int64_t num_samples, bool replacement = true, uint64_t seed = 0);
  std::vector<int64_t> indices(int64_t epoch) const override;
  int64_t num_samples() const override { return num_samples_; }
  void check_dataset_size(int64_t size) const override;  // one weight per sample

 private:
  std::vector<double> weights_;
  std::vector<double> cumulative_;  // running sums, for draws with replacement
  int64_t num_samples_;
  bool replacement_;
  uint64_t seed_;
};

}  // namespace minidl::data
