// Sampler: which dataset indices a DataLoader loads in one epoch, and in what order
// (torch.utils.data.Sampler). Set one with LoaderOptions::sampler (shuffle then stays off); the
// loader asks it for each epoch's indices. DistributedSampler (data/distributed_sampler.h),
// SubsetRandomSampler and WeightedRandomSampler (data/random_samplers.h) are the ones here; a
// program may write its own.
#pragma once
#include <cstdint>
#include <vector>

namespace minidl::data {

class Sampler {
 public:
  virtual ~Sampler() = default;
  // The epoch's indices in loading order; the same epoch gives the same indices.
  virtual std::vector<int64_t> indices(int64_t epoch) const = 0;
  // How many indices each epoch has.
  virtual int64_t num_samples() const = 0;
  // Throws minidl::Error, naming the sampler, when it cannot serve a data set of `size` samples.
  virtual void check_dataset_size(int64_t size) const = 0;
};

}  // namespace minidl::data
