// Subset, ConcatDataset, random_split, SubsetRandomSampler and WeightedRandomSampler: which samples
// they give, reproducibility per (seed, epoch), the draw frequencies against the weights, the
// DataLoader driving them, and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "minidl.h"

using namespace minidl;
using namespace minidl::data;
using Catch::Contains;

namespace {
// Sample i has data [i, i] (f32) and target i (i64).
TensorDataset numbered(int64_t n, double offset = 0) {
  std::vector<float> d;
  std::vector<int64_t> t;
  for (int64_t i = 0; i < n; ++i) {
    d.insert(d.end(), {static_cast<float>(i + offset), static_cast<float>(i + offset)});
    t.push_back(i + static_cast<int64_t>(offset));
  }
  return TensorDataset(from_vector<float>(d, {n, 2}), from_vector<int64_t>(t, {n}));
}

std::vector<int64_t> targets_of(const Dataset& ds) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < ds.size(); ++i) out.push_back(ds.get(i).target.item<int64_t>());
  return out;
}
}  // namespace

TEST_CASE("Subset and ConcatDataset show the samples they name, batches included", "[data]") {
  TensorDataset a = numbered(10), b = numbered(5, 100);
  Subset s(a, {7, 2, 2, 9});
  CHECK(s.size() == 4);
  CHECK(targets_of(s) == std::vector<int64_t>{7, 2, 2, 9});
  Batch batch = s.get_batch({3, 0});
  CHECK(batch.target.to_vector<int64_t>() == std::vector<int64_t>{9, 7});
  CHECK(batch.data.to_vector<float>() == std::vector<float>{9, 9, 7, 7});
  ConcatDataset both({a, b, s});
  CHECK(both.size() == 19);
  CHECK(targets_of(both) == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100, 101, 102, 103, 104, 7, 2, 2, 9});
  CHECK(ConcatDataset({}).size() == 0);
  CHECK_THROWS_WITH(Subset(a, {10}), Contains("Subset") && Contains("10"));
  CHECK_THROWS_WITH(s.get(4), Contains("Subset"));
  CHECK_THROWS_WITH(both.get(19), Contains("ConcatDataset"));
}

TEST_CASE("random_split: disjoint parts covering the dataset, by seed; fractions as PyTorch", "[data]") {
  TensorDataset ds = numbered(10);
  std::vector<Subset> parts = random_split(ds, {6, 3, 1}, 4);
  REQUIRE(parts.size() == 3);
  CHECK((parts[0].size() == 6 && parts[1].size() == 3 && parts[2].size() == 1));
  std::vector<int64_t> all;
  for (const Subset& p : parts) for (int64_t t : targets_of(p)) all.push_back(t);
  std::vector<int64_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> expected(10);
  std::iota(expected.begin(), expected.end(), 0);
  CHECK(sorted == expected);
  CHECK(all != expected);  // shuffled
  CHECK(targets_of(random_split(ds, {6, 3, 1}, 4)[0]) == targets_of(parts[0]));  // same seed, same split
  CHECK(targets_of(random_split(ds, {6, 3, 1}, 5)[0]) != targets_of(parts[0]));
  // Fractions: floor(10 * f) = 3, 3, 3, the remainder 1 to the first part.
  std::vector<Subset> thirds = random_split_fractions(ds, {1.0 / 3, 1.0 / 3, 1.0 / 3});
  CHECK((thirds[0].size() == 4 && thirds[1].size() == 3 && thirds[2].size() == 3));
  CHECK_THROWS_WITH(random_split(ds, {6, 3}), Contains("Sum of input lengths (9) does not equal the length of the input dataset (10)"));
  CHECK_THROWS_WITH(random_split_fractions(ds, {0.5, 0.6}), Contains("fractions must sum up to 1"));
  CHECK_THROWS_WITH(random_split_fractions(ds, {1.5, -0.5}), Contains("Fraction at index 0 is not between 0 and 1"));
}

TEST_CASE("SubsetRandomSampler: its indices, a new order per epoch, through a DataLoader", "[data]") {
  TensorDataset ds = numbered(20);
  auto sampler = std::make_shared<SubsetRandomSampler>(std::vector<int64_t>{3, 5, 7, 11, 13}, 9);
  std::vector<int64_t> e0 = sampler->indices(0), e1 = sampler->indices(1);
  CHECK(std::multiset<int64_t>(e0.begin(), e0.end()) == std::multiset<int64_t>{3, 5, 7, 11, 13});
  CHECK(e0 == sampler->indices(0));
  CHECK(e0 != e1);
  DataLoader loader(ds, LoaderOptions().batch_size(2).sampler(sampler));
  CHECK(loader.size() == 3);
  std::vector<int64_t> seen;
  for (auto& batch : loader) for (int64_t t : batch.target.to_vector<int64_t>()) seen.push_back(t);
  CHECK(seen == e0);
  CHECK_THROWS_WITH(DataLoader(numbered(12), LoaderOptions().sampler(sampler)),
                    Contains("SubsetRandomSampler: index 13 is out of range for a dataset of 12 samples"));
  CHECK_THROWS_WITH(DataLoader(ds, LoaderOptions().sampler(sampler).shuffle(true)), Contains("mutually exclusive with shuffle"));
}

TEST_CASE("WeightedRandomSampler: frequencies follow the weights; without replacement, distinct draws", "[data]") {
  // With replacement: 200000 draws over weights 1, 2, 0, 5; each count within 6 standard deviations
  // of its binomial mean (the draws are fixed by the seed, so this cannot flake).
  const std::vector<double> w{1, 2, 0, 5};
  const int64_t n = 200000;
  WeightedRandomSampler sampler(w, n, true, 3);
  std::map<int64_t, int64_t> count;
  for (int64_t i : sampler.indices(0)) ++count[i];
  CHECK(count[2] == 0);
  for (int64_t i : {0, 1, 3}) {
    const double p = w[static_cast<size_t>(i)] / 8.0, mean = p * n, sd = std::sqrt(n * p * (1 - p));
    INFO("index " << i << ": " << count[i] << " draws, expected " << mean);
    CHECK(std::abs(static_cast<double>(count[i]) - mean) < 6 * sd);
  }
  CHECK(sampler.indices(0) == sampler.indices(0));
  CHECK(sampler.indices(0) != sampler.indices(1));
  // Without replacement: distinct, zero weights never; the heaviest comes first most often.
  WeightedRandomSampler distinct(std::vector<double>{1, 0, 1, 20, 1}, 4, false, 5);
  std::map<int64_t, int64_t> first;
  for (int64_t epoch = 0; epoch < 2000; ++epoch) {
    std::vector<int64_t> draw = distinct.indices(epoch);
    REQUIRE(std::set<int64_t>(draw.begin(), draw.end()) == std::set<int64_t>{0, 2, 3, 4});
    ++first[draw[0]];
  }
  // P(index 3 first) = 20 / 23; its count within 6 standard deviations.
  const double p = 20.0 / 23, sd = std::sqrt(2000 * p * (1 - p));
  CHECK(std::abs(static_cast<double>(first[3]) - 2000 * p) < 6 * sd);
  // Class balancing through a DataLoader: a 90 / 10 imbalance drawn about evenly.
  TensorDataset ds = numbered(100);
  std::vector<double> balance(100, 1.0 / 90);
  for (size_t i = 90; i < 100; ++i) balance[i] = 1.0 / 10;
  DataLoader loader(ds, LoaderOptions().batch_size(1000).sampler(std::make_shared<WeightedRandomSampler>(balance, 10000, true, 1)));
  int64_t minority = 0;
  for (auto& batch : loader) for (int64_t t : batch.target.to_vector<int64_t>()) minority += t >= 90;
  CHECK(std::abs(static_cast<double>(minority) - 5000) < 6 * 50);
  CHECK_THROWS_WITH(WeightedRandomSampler(std::vector<double>{1, -1}, 2), Contains("weights must be finite and non-negative"));
  CHECK_THROWS_WITH(WeightedRandomSampler(std::vector<double>{0, 0}, 2), Contains("positive sum"));
  CHECK_THROWS_WITH(WeightedRandomSampler(std::vector<double>{1, 0, 1}, 3, false), Contains("cannot draw 3 samples without replacement from 2 positive weights"));
  CHECK_THROWS_WITH(WeightedRandomSampler(std::vector<double>{1}, 0), Contains("num_samples should be a positive integer value"));
  CHECK_THROWS_WITH(DataLoader(numbered(5), LoaderOptions().sampler(std::make_shared<WeightedRandomSampler>(std::vector<double>{1, 1}, 2))),
                    Contains("WeightedRandomSampler: has 2 weights, the dataset has 5 samples"));
}
