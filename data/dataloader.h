// DataLoader: iterates a Dataset in batches, one epoch per range-for loop, with a per-epoch shuffle
// derived from (seed, epoch), optional worker threads that prefetch batches into a bounded queue,
// and a resumable position (epoch, batch) for checkpoints. The batches, their order and their random
// transforms are the same for any worker count.
//
//   data::DataLoader loader(train_set, data::LoaderOptions().batch_size(128).shuffle(true).workers(2));
//   for (int epoch = 0; epoch < 3; ++epoch)
//     for (auto& batch : loader) { ... batch.data ... batch.target ... }
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "data/dataset.h"
#include "data/distributed_sampler.h"
#include "data/random_samplers.h"
#include "data/sampler.h"
#include "data/transforms.h"

namespace minidl::data {

// Turns a batch's samples into the batch (PyTorch's collate_fn). It runs on the loader's worker
// threads, so it must be safe to call concurrently.
using CollateFn = std::function<Batch(std::vector<Example>&& samples)>;

struct LoaderOptions {
  int64_t batch_size_ = 1;   // samples per batch
  bool shuffle_ = false;     // a new order every epoch, from (seed, epoch); else dataset order
  bool drop_last_ = false;   // drop the last batch of an epoch when it is short
  int workers_ = 0;          // loading threads; 0: load in the calling thread, when asked
  uint64_t seed_ = 0;        // seeds the shuffle and the random transforms
  int prefetch_ = 2;         // batches each worker may load ahead of the consumer
  // Which samples each epoch loads, in order (a DistributedSampler: this rank's share in
  // data-parallel training; a WeightedRandomSampler, ...); the sampler shuffles, so shuffle must
  // stay off. The loader passes its epoch to the sampler.
  std::shared_ptr<const Sampler> sampler_;
  // When set, every sample of a batch is read with Dataset::get() and the batch is collate(samples)
  // (then the transform, on its data); unset, the batch is Dataset::get_batch() (default_collate's
  // result, or a data set's faster copy of rows).
  CollateFn collate_;

  LoaderOptions& batch_size(int64_t n) { batch_size_ = n; return *this; }
  LoaderOptions& shuffle(bool on = true) { shuffle_ = on; return *this; }
  LoaderOptions& drop_last(bool on = true) { drop_last_ = on; return *this; }
  LoaderOptions& workers(int n) { workers_ = n; return *this; }
  LoaderOptions& seed(uint64_t s) { seed_ = s; return *this; }
  LoaderOptions& prefetch(int n) { prefetch_ = n; return *this; }
  LoaderOptions& sampler(std::shared_ptr<const Sampler> s) { sampler_ = std::move(s); return *this; }
  LoaderOptions& collate(CollateFn fn) { collate_ = std::move(fn); return *this; }
};

// A position in the stream of batches: the next batch to be handed out is batch `batch` of epoch
// `epoch`. Saved in a checkpoint, it resumes the data exactly where training stopped.
struct LoaderState {
  int64_t epoch = 0;
  int64_t batch = 0;
};

class DataLoader {
  struct Run;  // one epoch in progress: its order, worker threads and queue

 public:
  struct Sentinel {};
  // Walks one epoch. Owns the epoch's workers: destroying it (end of the loop, or a break) stops
  // and joins them. Move-only.
  class Iterator {
   public:
    Iterator(Iterator&&) noexcept;
    Iterator& operator=(Iterator&&) noexcept;
    ~Iterator();
    Batch& operator*() { return current_; }
    Batch* operator->() { return &current_; }
    Iterator& operator++();
    bool operator==(Sentinel) const { return done_; }
    bool operator!=(Sentinel) const { return !done_; }

   private:
    friend class DataLoader;
    explicit Iterator(std::unique_ptr<Run> run);
    std::unique_ptr<Run> run_;
    Batch current_;
    bool done_ = true;
  };

  // The dataset (and transform) must outlive the loader. Throws on invalid options.
  DataLoader(const Dataset& dataset, LoaderOptions options = {}, std::shared_ptr<Transform> transform = nullptr);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Starts an epoch: the one state() names when the last epoch was finished or a state was loaded,
  // else (the last loop stopped early) the next epoch from its first batch. One iteration at a time.
  Iterator begin();
  Sentinel end() const { return {}; }

  int64_t size() const;  // batches per epoch
  int64_t dataset_size() const { return dataset_.size(); }
  LoaderState state() const { return pos_; }
  // The next begin() runs `epoch` from batch `batch_index` (0 <= batch_index <= size()), without
  // loading the batches before it. Not allowed while an iteration is alive.
  void load_state(int64_t epoch, int64_t batch_index);
  void load_state(const LoaderState& s) { load_state(s.epoch, s.batch); }
  void set_epoch(int64_t epoch) { load_state(epoch, 0); }
  // The sample order of an epoch (a permutation of 0..N-1 when shuffling, else the identity; with
  // a sampler, this rank's share).
  std::vector<int64_t> epoch_order(int64_t epoch) const;
  const LoaderOptions& options() const { return options_; }

 private:
  void advance_to(int64_t epoch, int64_t next_batch);  // batch next_batch - 1 was handed out

  const Dataset& dataset_;
  LoaderOptions options_;
  std::shared_ptr<Transform> transform_;
  LoaderState pos_;
  bool resume_ = true;     // begin() starts exactly at pos_ (else at the epoch after pos_.epoch)
  Run* active_ = nullptr;  // the live iteration, if any
};

}  // namespace minidl::data
