// DistributedSampler: which samples of an epoch each of W data-parallel ranks loads
// (torch.utils.data.DistributedSampler), needing only the rank and world size, not the process
// group. Precisely, for a dataset of N samples:
//   order  = the epoch's order, the very permutation a DataLoader with the same (shuffle, seed)
//            uses for that epoch (data::epoch_order);
//   total  = drop_last ? floor(N / W) * W : ceil(N / W) * W; order is cut to `total`, or padded by
//            repeating its beginning (cyclically) up to `total`;
//   rank r = order[r], order[r + W], order[r + 2W], ...   (total / W samples).
// So with B samples per rank per batch, batch k of rank r holds global positions
// k*B*W + j*W + r (j < B, positions below `total`): the W rank batches of step k together are
// exactly positions [k*B*W, (k+1)*B*W) of the order. Wherever those positions are below N, that is
// the single-process batch k of batch size B*W with the same seed, element for element (position
// k*B*W + j*W + r is rank r's j-th sample); only the last step can differ, by the padding (a repeat
// of the order's start) or by what drop_last cut.
#pragma once
#include <cstdint>
#include <vector>

#include "data/sampler.h"

namespace minidl::data {

struct DistributedSamplerOptions {
  int64_t num_replicas_ = 1;  // W, the world size
  int64_t rank_ = 0;          // r in [0, W)
  bool shuffle_ = true;       // a new permutation every epoch from (seed, epoch), as PyTorch's default
  uint64_t seed_ = 0;         // the same on every rank
  bool drop_last_ = false;    // cut the order to a multiple of W; else pad it by repeating its start

  DistributedSamplerOptions& num_replicas(int64_t v) { num_replicas_ = v; return *this; }
  DistributedSamplerOptions& rank(int64_t v) { rank_ = v; return *this; }
  DistributedSamplerOptions& shuffle(bool v = true) { shuffle_ = v; return *this; }
  DistributedSamplerOptions& seed(uint64_t v) { seed_ = v; return *this; }
  DistributedSamplerOptions& drop_last(bool v = true) { drop_last_ = v; return *this; }
};

// The sample order of one epoch: a permutation of 0..n-1 from (seed, epoch) when shuffling, else
// the identity. What DataLoader and DistributedSampler share.
std::vector<int64_t> epoch_order(int64_t n, bool shuffle, uint64_t seed, int64_t epoch);

class DistributedSampler : public Sampler {
 public:
  // Throws unless 0 <= rank < num_replicas and dataset_size >= 0.
  DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options = {});

  void set_epoch(int64_t epoch);  // the epoch indices() uses (a DataLoader passes its own)
  int64_t epoch() const { return epoch_; }
  std::vector<int64_t> indices() const { return indices(epoch_); }
  std::vector<int64_t> indices(int64_t epoch) const override;  // this rank's samples, in order
  std::vector<int64_t> global_order(int64_t epoch) const;  // the cut or padded order, `total` long
  int64_t num_samples() const override { return total_ / options_.num_replicas_; }  // per rank
  void check_dataset_size(int64_t size) const override;  // the size it was made for
  int64_t total_size() const { return total_; }
  int64_t dataset_size() const { return dataset_size_; }
  const DistributedSamplerOptions& options() const { return options_; }

 private:
  int64_t dataset_size_;
  DistributedSamplerOptions options_;
  int64_t total_;
  int64_t epoch_ = 0;
};

}  // namespace minidl::data
