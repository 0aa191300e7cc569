// DistributedSampler: the rank shards of each global batch are the single-process batch with the
// same seed, padding and drop_last follow torch.utils.data.DistributedSampler, and a DataLoader
// with a sampler walks exactly its rank's share.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "data/dataloader.h"
#include "data/distributed_sampler.h"
#include "data/tensor_dataset.h"
#include "ops/ops.h"

using namespace minidl;
using namespace minidl::data;

namespace {
TensorDataset make_dataset(int64_t n) {
  return TensorDataset(arange(0, static_cast<double>(n), 1, DType::F32).view({n, 1}), arange(n));
}

std::vector<std::vector<int64_t>> batches(DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (auto& b : loader) out.push_back(b.indices);
  return out;
}
}  // namespace

TEST_CASE("DistributedSampler: rank shards of every global batch are the single-process batch", "[data][dist]") {
  const int64_t n = 24, world = 3, per_rank = 2;
  for (bool shuffle : {false, true}) {
    TensorDataset ds = make_dataset(n);
    DataLoader single(ds, LoaderOptions().batch_size(per_rank * world).shuffle(shuffle).seed(7));
    std::vector<std::vector<std::vector<int64_t>>> ranks;
    for (int64_t r = 0; r < world; ++r) {
      auto sampler = std::make_shared<DistributedSampler>(
          n, DistributedSamplerOptions().num_replicas(world).rank(r).shuffle(shuffle).seed(7));
      DataLoader loader(ds, LoaderOptions().batch_size(per_rank).sampler(sampler).seed(7));
      loader.set_epoch(2);
      ranks.push_back(batches(loader));
    }
    single.set_epoch(2);
    auto global = batches(single);
    REQUIRE(global.size() == 4);
    for (size_t k = 0; k < global.size(); ++k) {
      // Position j*W + r of global batch k is rank r's j-th sample of its batch k.
      std::vector<int64_t> merged(global[k].size());
      for (int64_t r = 0; r < world; ++r) {
        REQUIRE(ranks[r][k].size() == static_cast<size_t>(per_rank));
        for (int64_t j = 0; j < per_rank; ++j) merged[j * world + r] = ranks[r][k][j];
      }
      CHECK(merged == global[k]);
    }
  }
}

TEST_CASE("DistributedSampler: exact indices, padding and drop_last", "[data][dist]") {
  // Unshuffled, 10 samples over 4 ranks: total 12, padded with the first two samples.
  auto idx = [](int64_t n, int64_t r, bool drop) {
    return DistributedSampler(n, DistributedSamplerOptions().num_replicas(4).rank(r).shuffle(false).drop_last(drop))
        .indices(0);
  };
  CHECK(idx(10, 0, false) == std::vector<int64_t>{0, 4, 8});
  CHECK(idx(10, 1, false) == std::vector<int64_t>{1, 5, 9});
  CHECK(idx(10, 2, false) == std::vector<int64_t>{2, 6, 0});
  CHECK(idx(10, 3, false) == std::vector<int64_t>{3, 7, 1});
  CHECK(idx(10, 2, true) == std::vector<int64_t>{2, 6});
  CHECK(idx(10, 3, true) == std::vector<int64_t>{3, 7});
  DistributedSampler s(10, DistributedSamplerOptions().num_replicas(4).rank(0));
  CHECK(s.num_samples() == 3);
  CHECK(s.total_size() == 12);
  // Fewer samples than ranks: padding repeats the order cyclically.
  CHECK(idx(3, 3, false) == std::vector<int64_t>{0});
  CHECK(idx(3, 3, true).empty());
}

TEST_CASE("DistributedSampler: shuffled shards partition the epoch, differ per epoch, agree with the loader", "[data][dist]") {
  const int64_t n = 20;
  std::vector<int64_t> all;
  for (int64_t r = 0; r < 4; ++r) {
    DistributedSampler s(n, DistributedSamplerOptions().num_replicas(4).rank(r).seed(3));
    s.set_epoch(5);
    auto mine = s.indices();
    CHECK(mine == s.indices(5));
    CHECK(mine != s.indices(6));
    all.insert(all.end(), mine.begin(), mine.end());
  }
  std::sort(all.begin(), all.end());
  std::vector<int64_t> expect(n);
  for (int64_t i = 0; i < n; ++i) expect[i] = i;
  CHECK(all == expect);
  // The order is the DataLoader's own shuffle for (seed, epoch).
  TensorDataset ds = make_dataset(n);
  DataLoader single(ds, LoaderOptions().shuffle(true).seed(3));
  DistributedSampler one(n, DistributedSamplerOptions().seed(3));
  CHECK(one.indices(5) == single.epoch_order(5));
}

TEST_CASE("DistributedSampler and DataLoader: errors", "[data][dist]") {
  CHECK_THROWS_WITH(DistributedSampler(10, DistributedSamplerOptions().num_replicas(2).rank(2)),
                    Catch::Contains("DistributedSampler") && Catch::Contains("invalid rank 2"));
  CHECK_THROWS_WITH(DistributedSampler(10, DistributedSamplerOptions().num_replicas(0)),
                    Catch::Contains("num_replicas must be >= 1"));
  TensorDataset ds = make_dataset(10);
  auto sampler = std::make_shared<DistributedSampler>(10, DistributedSamplerOptions().num_replicas(2));
  CHECK_THROWS_WITH(DataLoader(ds, LoaderOptions().sampler(sampler).shuffle(true)),
                    Catch::Contains("mutually exclusive with shuffle"));
  auto wrong = std::make_shared<DistributedSampler>(11, DistributedSamplerOptions().num_replicas(2));
  CHECK_THROWS_WITH(DataLoader(ds, LoaderOptions().sampler(wrong)), Catch::Contains("made for 11 samples"));
  DataLoader loader(ds, LoaderOptions().sampler(sampler).batch_size(2));
  CHECK(loader.size() == 3);  // 5 samples on this rank
}
