// DataLoader: epoch orders from (seed, epoch), in-order delivery of batches that worker threads load
// ahead into a bounded window, and the position bookkeeping that makes a checkpoint resumable.
#include "data/dataloader.h"

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>

#include "framework/error.h"

namespace minidl::data {

struct DataLoader::Run {
  struct Loaded {
    Batch batch;
    std::exception_ptr error;
  };

  DataLoader& loader;
  const int64_t epoch;
  const std::vector<int64_t> order;
  const int64_t num_batches;
  const int64_t window;  // batches claimed by workers but not yet taken by the consumer, at most

  std::mutex mu;
  std::condition_variable work_cv, ready_cv;
  int64_t next_claim = 0;  // the next batch a worker loads
  int64_t next_take = 0;   // the next batch the consumer takes
  std::map<int64_t, Loaded> ready;
  bool stop = false;
  std::vector<std::thread> threads;

  Run(DataLoader& l, int64_t e, int64_t first)
      : loader(l), epoch(e), order(l.epoch_order(e)), num_batches(l.size()),
        window(static_cast<int64_t>(l.options_.workers_) * l.options_.prefetch_),
        next_claim(first), next_take(first) {
    loader.active_ = this;
    try {
      for (int w = 0; w < loader.options_.workers_ && first < num_batches; ++w)
        threads.emplace_back([this] { work(); });
    } catch (...) {
      shutdown();
      loader.active_ = nullptr;
      throw;
    }
  }

  ~Run() {
    shutdown();
    loader.active_ = nullptr;
  }

  void shutdown() {
    {
      std::lock_guard<std::mutex> lk(mu);
      stop = true;
    }
    work_cv.notify_all();
    for (auto& t : threads) t.join();
    threads.clear();
  }

  // The user's collate over the samples at indices.
  Batch collate(const std::vector<int64_t>& indices) const {
    std::vector<Example> samples;
    samples.reserve(indices.size());
    for (int64_t i : indices) samples.push_back(loader.dataset_.get(i));
    return loader.options_.collate_(std::move(samples));
  }

  // Batch k of this epoch: the dataset's rows for its indices (or the collate hook's batch), then
  // the transform.
  Batch load(int64_t k) const {
    const int64_t bs = loader.options_.batch_size_;
    const int64_t begin = k * bs;
    const int64_t end = std::min<int64_t>(begin + bs, static_cast<int64_t>(order.size()));
    std::vector<int64_t> indices(order.begin() + begin, order.begin() + end);
    Batch b = loader.options_.collate_ ? collate(indices) : loader.dataset_.get_batch(indices);
    b.indices = std::move(indices);
    if (loader.transform_ && b.data.defined()) {
      TransformContext ctx;
      ctx.seed = loader.options_.seed_;
      ctx.epoch = epoch;
      ctx.indices = &b.indices;
      b.data = loader.transform_->apply(std::move(b.data), ctx);
    }
    return b;
  }

  void work() {
    std::unique_lock<std::mutex> lk(mu);
    for (;;) {
      work_cv.wait(lk, [&] { return stop || next_claim >= num_batches || next_claim < next_take + window; });
      if (stop || next_claim >= num_batches) return;
      const int64_t k = next_claim++;
      lk.unlock();
      Loaded r;
      try {
        r.batch = load(k);
      } catch (...) {
        r.error = std::current_exception();
      }
      lk.lock();
      ready.emplace(k, std::move(r));
      ready_cv.notify_all();
    }
  }

  // Hands out batch next_take (waiting for a worker when there are some) and advances the loader's
  // position past it. Rethrows a worker's exception for that batch.
  Batch take() {
    const int64_t k = next_take;
    Batch b;
    if (threads.empty()) {
      b = load(k);
      next_take = k + 1;
    } else {
      Loaded r;
      {
        std::unique_lock<std::mutex> lk(mu);
        ready_cv.wait(lk, [&] { return ready.count(k) > 0; });
        auto it = ready.find(k);
        r = std::move(it->second);
        ready.erase(it);
        next_take = k + 1;
      }
      work_cv.notify_all();
      if (r.error) std::rethrow_exception(r.error);
      b = std::move(r.batch);
    }
    loader.advance_to(epoch, k + 1);
    return b;
  }
};

// ---- Iterator

DataLoader::Iterator::Iterator(std::unique_ptr<Run> run) : run_(std::move(run)) {
  done_ = run_->next_take >= run_->num_batches;
  if (done_) {
    run_->loader.advance_to(run_->epoch, run_->num_batches);
    run_.reset();
  } else {
    current_ = run_->take();
  }
}

DataLoader::Iterator::Iterator(Iterator&&) noexcept = default;
DataLoader::Iterator& DataLoader::Iterator::operator=(Iterator&&) noexcept = default;
DataLoader::Iterator::~Iterator() = default;

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  MINIDL_CHECK(!done_, "DataLoader", "iterator incremented past the end of the epoch");
  if (run_->next_take >= run_->num_batches) {
    done_ = true;
    current_ = Batch{};
    run_.reset();  // joins the workers
  } else {
    current_ = run_->take();
  }
  return *this;
}

// ---- DataLoader

DataLoader::DataLoader(const Dataset& dataset, LoaderOptions options, std::shared_ptr<Transform> transform)
    : dataset_(dataset), options_(options), transform_(std::move(transform)) {
  MINIDL_CHECK(options_.batch_size_ > 0, "DataLoader", "batch_size must be > 0, got ", options_.batch_size_);
  MINIDL_CHECK(options_.workers_ >= 0, "DataLoader", "workers must be >= 0, got ", options_.workers_);
  MINIDL_CHECK(options_.prefetch_ >= 1, "DataLoader", "prefetch must be >= 1, got ", options_.prefetch_);
  MINIDL_CHECK(!options_.sampler_ || !options_.shuffle_, "DataLoader",
               "sampler option is mutually exclusive with shuffle (the sampler shuffles)");
  if (options_.sampler_) options_.sampler_->check_dataset_size(dataset_.size());
  // PyTorch's RandomSampler refuses an empty dataset: an epoch of no batches would pass unseen.
  MINIDL_CHECK(!options_.shuffle_ || dataset_.size() > 0, "DataLoader",
               "num_samples should be a positive integer value, but got num_samples=0 (shuffle over an empty dataset)");
}

DataLoader::~DataLoader() = default;

int64_t DataLoader::size() const {
  const int64_t n = options_.sampler_ ? options_.sampler_->num_samples() : dataset_.size();
  const int64_t b = options_.batch_size_;
  return options_.drop_last_ ? n / b : (n + b - 1) / b;
}

std::vector<int64_t> DataLoader::epoch_order(int64_t epoch) const {
  if (options_.sampler_) return options_.sampler_->indices(epoch);
  return data::epoch_order(dataset_.size(), options_.shuffle_, options_.seed_, epoch);
}

void DataLoader::load_state(int64_t epoch, int64_t batch_index) {
  MINIDL_CHECK(active_ == nullptr, "DataLoader", "load_state/set_epoch called while an iteration is alive");
  MINIDL_CHECK(epoch >= 0, "DataLoader", "epoch must be >= 0, got ", epoch);
  MINIDL_CHECK(batch_index >= 0 && batch_index <= size(), "DataLoader", "batch index ", batch_index,
               " is out of range for an epoch of ", size(), " batches");
  pos_ = batch_index == size() ? LoaderState{epoch + 1, 0} : LoaderState{epoch, batch_index};
  resume_ = true;
}

void DataLoader::advance_to(int64_t epoch, int64_t next_batch) {
  if (next_batch >= size()) {
    pos_ = {epoch + 1, 0};
    resume_ = true;
  } else {
    pos_ = {epoch, next_batch};
    resume_ = false;
  }
}

DataLoader::Iterator DataLoader::begin() {
  MINIDL_CHECK(active_ == nullptr, "DataLoader",
               "begin() while an earlier iteration over this loader is alive; finish or destroy it first");
  if (!resume_) {  // the last loop stopped early: drop the rest of its epoch
    pos_ = {pos_.epoch + 1, 0};
    resume_ = true;   // until a batch is handed out, so a failing first batch is not skipped
  }
  return Iterator(std::make_unique<Run>(*this, pos_.epoch, pos_.batch));
}

}  // namespace minidl::data
