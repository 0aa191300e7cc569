// Tests of the data layer: IDX/MNIST and CIFAR readers on generated files (contents and every error),
// TensorDataset, the DataLoader (order, determinism across worker counts, epochs, resume) and the
// batch transforms (exact results on small known images, determinism).
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

#include "data/cifar.h"
#include "data/dataloader.h"
#include "data/idx.h"
#include "data/mnist.h"
#include "data/tensor_dataset.h"
#include "data/transforms.h"
#include "framework/error.h"
#include "temp_dir.h"

using namespace minidl;
using namespace minidl::data;
namespace fs = std::filesystem;

namespace {

void put_u32(std::vector<uint8_t>& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
}

std::vector<uint8_t> idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& body) {
  std::vector<uint8_t> b;
  put_u32(b, magic);
  for (uint32_t d : dims) put_u32(b, d);
  b.insert(b.end(), body.begin(), body.end());
  return b;
}

void write_raw(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_gz(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

// n images of h x w with pixel (i, k) = (i * 31 + k * 7) % 256, labels i % 10.
std::vector<uint8_t> pixels(int n, int h, int w) {
  std::vector<uint8_t> p(static_cast<size_t>(n) * h * w);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < h * w; ++k) p[static_cast<size_t>(i) * h * w + k] = static_cast<uint8_t>((i * 31 + k * 7) % 256);
  return p;
}
std::vector<uint8_t> labels(int n) {
  std::vector<uint8_t> l(n);
  for (int i = 0; i < n; ++i) l[i] = static_cast<uint8_t>(i % 10);
  return l;
}

// Writes a split ("train" or "t10k") of n images h x w, raw or gzip.
void write_mnist(const TempDir& dir, const std::string& prefix, int n, int h, int w, bool gz) {
  auto write = gz ? write_gz : write_raw;
  const std::string ext = gz ? ".gz" : "";
  write(dir.file(prefix + "-images-idx3-ubyte" + ext), idx_bytes(2051, {uint32_t(n), uint32_t(h), uint32_t(w)}, pixels(n, h, w)));
  write(dir.file(prefix + "-labels-idx1-ubyte" + ext), idx_bytes(2049, {uint32_t(n)}, labels(n)));
}

// The message of the minidl::Error `f` throws (fails the test when it throws nothing).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("expected a minidl::Error");
  return "";
}

using Catch::Matchers::Contains;

}  // namespace

// ------------------------------------------------------------------------------------------------
// IDX / MNIST

TEST_CASE("MNIST reads raw and gzip IDX files exactly", "[data][mnist]") {
  const bool gz = GENERATE(false, true);
  TempDir dir;
  write_mnist(dir, "train", 5, 4, 3, gz);
  write_mnist(dir, "t10k", 2, 4, 3, gz);
  MNIST train(dir.path.string(), Split::Train);
  MNIST test(dir.path.string(), Split::Test);
  REQUIRE(train.size() == 5);
  REQUIRE(test.size() == 2);
  CHECK(train.images().dtype() == DType::U8);
  CHECK(train.images().shape() == Shape{5, 4, 3});
  CHECK(train.images().to_vector<uint8_t>() == pixels(5, 4, 3));
  CHECK(train.targets().dtype() == DType::I64);
  CHECK(train.targets().to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK_THAT(train.images_path(), Contains(gz ? "train-images-idx3-ubyte.gz" : "train-images-idx3-ubyte"));

  Batch b = train.get_batch({4, 1});
  REQUIRE(b.data.shape() == Shape{2, 1, 4, 3});
  REQUIRE(b.target.shape() == Shape{2});
  const auto all = pixels(5, 4, 3);
  const auto got = b.data.to_vector<float>();
  for (int k = 0; k < 12; ++k) {
    CHECK(got[k] == static_cast<float>(all[4 * 12 + k]) / 255.0f);
    CHECK(got[12 + k] == static_cast<float>(all[1 * 12 + k]) / 255.0f);
  }
  CHECK(b.target.to_vector<int64_t>() == std::vector<int64_t>{4, 1});

  Example e = train.get(3);
  CHECK(e.data.shape() == Shape{1, 4, 3});
  CHECK(e.target.item<int64_t>() == 3);
  const auto ev = e.data.to_vector<float>();
  for (int k = 0; k < 12; ++k) CHECK(ev[k] == static_cast<float>(all[3 * 12 + k]) / 255.0f);
  CHECK_THAT(error_of([&] { train.get(5); }), Contains("out of range"));
  CHECK_THAT(error_of([&] { train.get_batch({0, -1}); }), Contains("out of range"));
}

TEST_CASE("MNIST options: normalize and limit", "[data][mnist]") {
  TempDir dir;
  write_mnist(dir, "train", 6, 2, 2, false);
  MNIST m(dir.path.string(), Split::Train, MNISTOptions().normalize(0.5f, 0.25f).limit(4));
  REQUIRE(m.size() == 4);
  const auto got = m.get_batch({2}).data.to_vector<float>();
  const auto all = pixels(6, 2, 2);
  for (int k = 0; k < 4; ++k) CHECK(got[k] == Approx((all[8 + k] / 255.0 - 0.5) / 0.25).margin(1e-6));
  CHECK_THAT(error_of([] { MNISTOptions().normalize(0.1f, 0.0f); }), Contains("std must be > 0"));
}

TEST_CASE("MNIST errors name the file and the problem", "[data][mnist]") {
  TempDir dir;
  const std::string img = dir.file("train-images-idx3-ubyte"), lbl = dir.file("train-labels-idx1-ubyte");
  auto load = [&] { MNIST m(dir.path.string(), Split::Train); };

  SECTION("missing directory") {
    CHECK_THAT(error_of([&] { MNIST m(dir.file("nope"), Split::Train); }), Contains("nope") && Contains("does not exist"));
  }
  SECTION("missing file") {
    write_raw(img, idx_bytes(2051, {2, 2, 2}, pixels(2, 2, 2)));
    CHECK_THAT(error_of(load), Contains("train-labels-idx1-ubyte") && Contains(dir.path.string()));
  }
  SECTION("wrong magic in the label file") {
    write_raw(img, idx_bytes(2051, {2, 2, 2}, pixels(2, 2, 2)));
    write_raw(lbl, idx_bytes(2051, {2}, labels(2)));
    CHECK_THAT(error_of(load), Contains(lbl) && Contains("bad magic number 2051") && Contains("expected 2049"));
  }
  SECTION("wrong magic in the image file (gzip)") {
    write_gz(img + ".gz", idx_bytes(0x12345678, {2, 2, 2}, pixels(2, 2, 2)));
    write_raw(lbl, idx_bytes(2049, {2}, labels(2)));
    CHECK_THAT(error_of(load), Contains(img + ".gz") && Contains("bad magic number") && Contains("expected 2051"));
  }
  SECTION("truncated raw image file") {
    auto bytes = idx_bytes(2051, {3, 4, 4}, pixels(3, 4, 4));
    bytes.resize(bytes.size() - 5);
    write_raw(img, bytes);
    write_raw(lbl, idx_bytes(2049, {3}, labels(3)));
    CHECK_THAT(error_of(load), Contains(img) && Contains("truncated") && Contains("48 data bytes") && Contains("only 43"));
  }
  SECTION("truncated gzip image file") {
    write_gz(img + ".gz", idx_bytes(2051, {3, 4, 4}, pixels(2, 4, 4)));  // header says 3, data for 2
    write_raw(lbl, idx_bytes(2049, {3}, labels(3)));
    CHECK_THAT(error_of(load), Contains(img + ".gz") && Contains("truncated"));
  }
  SECTION("cut gzip stream") {
    const std::string gz = img + ".gz";
    write_gz(gz, idx_bytes(2051, {50, 28, 28}, pixels(50, 28, 28)));
    fs::resize_file(gz, fs::file_size(gz) / 2);
    write_raw(lbl, idx_bytes(2049, {50}, labels(50)));
    CHECK_THAT(error_of(load), Contains(gz) && Contains("truncated"));
  }
  SECTION("truncated header") {
    write_raw(img, {0, 0, 8, 3, 0, 0});
    write_raw(lbl, idx_bytes(2049, {2}, labels(2)));
    CHECK_THAT(error_of(load), Contains(img) && Contains("truncated"));
  }
  SECTION("bytes beyond the header's size") {
    auto bytes = idx_bytes(2049, {2}, labels(3));
    write_raw(img, idx_bytes(2051, {2, 2, 2}, pixels(2, 2, 2)));
    write_raw(lbl, bytes);
    CHECK_THAT(error_of(load), Contains(lbl) && Contains("does not match the header"));
  }
  SECTION("zero-sized image dim") {
    write_raw(img, idx_bytes(2051, {2, 0, 2}, {}));
    write_raw(lbl, idx_bytes(2049, {2}, labels(2)));
    CHECK_THAT(error_of(load), Contains(img) && Contains("dim 1 is 0"));
  }
  SECTION("image/label count mismatch") {
    write_raw(img, idx_bytes(2051, {5, 2, 2}, pixels(5, 2, 2)));
    write_raw(lbl, idx_bytes(2049, {4}, labels(4)));
    CHECK_THAT(error_of(load), Contains(img) && Contains(lbl) && Contains("5 images") && Contains("4 labels") &&
                                   Contains("mismatch"));
  }
  SECTION("label out of range") {
    write_raw(img, idx_bytes(2051, {2, 2, 2}, pixels(2, 2, 2)));
    write_raw(lbl, idx_bytes(2049, {2}, {3, 10}));
    CHECK_THAT(error_of(load), Contains(lbl) && Contains("label 10 at index 1"));
  }
  SECTION("garbage instead of gzip data") {
    std::vector<uint8_t> junk = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
    for (int i = 0; i < 100; ++i) junk.push_back(static_cast<uint8_t>(i * 37));
    write_raw(img + ".gz", junk);
    write_raw(lbl, idx_bytes(2049, {2}, labels(2)));
    CHECK_THAT(error_of(load), Contains(img + ".gz"));
  }
}

TEST_CASE("read_idx_u8 round-trips write_idx_u8", "[data][mnist]") {
  TempDir dir;
  const auto p = pixels(3, 5, 2);
  write_idx_u8(dir.file("x"), {3, 5, 2}, p.data());
  IdxData d = read_idx_u8(dir.file("x"), 3);
  CHECK(d.dims == std::vector<int64_t>{3, 5, 2});
  CHECK(d.values == p);
  CHECK_FALSE(fs::exists(dir.file("x.tmp")));
}

TEST_CASE("Fashion-MNIST from scripts/setup_data.sh loads, when present", "[data][mnist][real]") {
  const fs::path root = fs::path(__FILE__).parent_path().parent_path() / "data" / "fashion-mnist";
  if (!fs::exists(root / "t10k-images-idx3-ubyte.gz")) {
    WARN("skipped: " << root << " missing (run scripts/setup_data.sh)");
    return;
  }
  MNIST test(root.string(), Split::Test);
  REQUIRE(test.size() == 10000);
  CHECK(test.images().shape() == Shape{10000, 28, 28});
  std::vector<int64_t> count(10, 0);
  for (int64_t t : test.targets().to_vector<int64_t>()) ++count.at(t);
  CHECK(count == std::vector<int64_t>(10, 1000));  // Fashion-MNIST's test split is balanced
}

// ------------------------------------------------------------------------------------------------
// TensorDataset

TEST_CASE("TensorDataset indexes rows and validates lengths", "[data]") {
  std::vector<float> v(10);
  for (int i = 0; i < 10; ++i) v[i] = static_cast<float>(i);
  TensorDataset ds(from_vector(v, {5, 2}), from_vector(std::vector<int64_t>{10, 11, 12, 13, 14}, {5}));
  REQUIRE(ds.size() == 5);
  Example e = ds.get(3);
  CHECK(e.data.to_vector<float>() == std::vector<float>{6, 7});
  CHECK(e.target.item<int64_t>() == 13);
  Batch b = ds.get_batch({4, 0, 4});
  CHECK(b.data.shape() == Shape{3, 2});
  CHECK(b.data.to_vector<float>() == std::vector<float>{8, 9, 0, 1, 8, 9});
  CHECK(b.target.to_vector<int64_t>() == std::vector<int64_t>{14, 10, 14});
  CHECK_THAT(error_of([&] { ds.get(5); }), Contains("index 5 is out of range"));
  CHECK_THAT(error_of([&] { ds.get_batch({-1}); }), Contains("out of range"));
  CHECK_THAT(error_of([&] { TensorDataset bad(zeros({4, 2}), zeros({3}, DType::I64)); }),
             Contains("same number of samples") && Contains("[4, 2]") && Contains("[3]"));
  CHECK_THAT(error_of([&] { TensorDataset bad(scalar_tensor(1.0), zeros({1})); }), Contains("sample dim"));
}

TEST_CASE("Dataset::get_batch default stacks get()", "[data]") {
  struct Squares : Dataset {
    int64_t size() const override { return 4; }
    Example get(int64_t i) const override {
      return {from_vector(std::vector<float>{float(i * i), float(i)}, {2}), scalar_tensor(double(i), DType::I64)};
    }
  } ds;
  Batch b = ds.get_batch({3, 1});
  CHECK(b.data.shape() == Shape{2, 2});
  CHECK(b.data.to_vector<float>() == std::vector<float>{9, 3, 1, 1});
  CHECK(b.target.to_vector<int64_t>() == std::vector<int64_t>{3, 1});
}

// ------------------------------------------------------------------------------------------------
// DataLoader

namespace {

// Row i holds the value i (data [N, 2] = {i, -i}), target i.
TensorDataset counting_dataset(int64_t n) {
  std::vector<float> v;
  std::vector<int64_t> t;
  for (int64_t i = 0; i < n; ++i) {
    v.push_back(static_cast<float>(i));
    v.push_back(-static_cast<float>(i));
    t.push_back(i);
  }
  return TensorDataset(from_vector(v, {n, 2}), from_vector(t, {n}));
}

// One epoch as the list of each batch's targets, checking data matches targets.
std::vector<std::vector<int64_t>> run_epoch(DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (auto& batch : loader) {
    auto t = batch.target.to_vector<int64_t>();
    auto d = batch.data.to_vector<float>();
    REQUIRE(d.size() == 2 * t.size());
    for (size_t i = 0; i < t.size(); ++i) REQUIRE(d[2 * i] == static_cast<float>(t[i]));
    REQUIRE(batch.indices == t);
    out.push_back(t);
  }
  return out;
}

std::vector<int64_t> flatten(const std::vector<std::vector<int64_t>>& b) {
  std::vector<int64_t> f;
  for (auto& x : b) f.insert(f.end(), x.begin(), x.end());
  return f;
}

}  // namespace

TEST_CASE("DataLoader batches in order without shuffle, size and drop_last", "[data][loader]") {
  TensorDataset ds = counting_dataset(10);
  DataLoader plain(ds, LoaderOptions().batch_size(3));
  CHECK(plain.size() == 4);
  auto e = run_epoch(plain);
  CHECK(e == std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9}});
  CHECK(run_epoch(plain) == e);  // no shuffle: every epoch the same

  DataLoader dropping(ds, LoaderOptions().batch_size(3).drop_last(true).workers(2));
  CHECK(dropping.size() == 3);
  CHECK(run_epoch(dropping) == std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}});

  DataLoader exact(ds, LoaderOptions().batch_size(5).drop_last(true));
  CHECK(exact.size() == 2);
  DataLoader too_big(ds, LoaderOptions().batch_size(11).drop_last(true).workers(1));
  CHECK(too_big.size() == 0);
  CHECK(run_epoch(too_big).empty());
  CHECK(too_big.state().epoch == 1);

  CHECK_THAT(error_of([&] { DataLoader bad(ds, LoaderOptions().batch_size(0)); }), Contains("batch_size"));
  CHECK_THAT(error_of([&] { DataLoader bad(ds, LoaderOptions().workers(-1)); }), Contains("workers"));
}

TEST_CASE("DataLoader shuffles per epoch, identically for any worker count", "[data][loader]") {
  TensorDataset ds = counting_dataset(103);
  auto epochs = [&](int workers, uint64_t seed) {
    DataLoader loader(ds, LoaderOptions().batch_size(8).shuffle(true).seed(seed).workers(workers).prefetch(1));
    std::vector<std::vector<std::vector<int64_t>>> out;
    for (int e = 0; e < 3; ++e) out.push_back(run_epoch(loader));
    return out;
  };
  const auto ref = epochs(0, 42);
  REQUIRE(ref.size() == 3);
  for (const auto& e : ref) {
    REQUIRE(e.size() == 13);
    CHECK(e.back().size() == 103 % 8);
    auto all = flatten(e);
    std::sort(all.begin(), all.end());
    std::vector<int64_t> iota(103);
    for (int i = 0; i < 103; ++i) iota[i] = i;
    CHECK(all == iota);  // each epoch is a permutation
  }
  CHECK(flatten(ref[0]) != flatten(ref[1]));  // a new order each epoch
  CHECK(flatten(ref[1]) != flatten(ref[2]));
  CHECK(epochs(1, 42) == ref);
  CHECK(epochs(3, 42) == ref);
  CHECK(epochs(0, 43) != ref);  // the seed matters

  DataLoader loader(ds, LoaderOptions().batch_size(8).shuffle(true).seed(42));
  CHECK(loader.epoch_order(2) == flatten(ref[2]));
}

TEST_CASE("DataLoader resumes mid-epoch from a saved state", "[data][loader]") {
  TensorDataset ds = counting_dataset(50);
  const auto opts = LoaderOptions().batch_size(4).shuffle(true).seed(7);
  DataLoader ref_loader(ds, opts);
  std::vector<std::vector<int64_t>> stream;  // epochs 0..2 back to back
  for (int e = 0; e < 3; ++e) {
    auto b = run_epoch(ref_loader);
    stream.insert(stream.end(), b.begin(), b.end());
  }
  const int64_t per_epoch = ref_loader.size();
  REQUIRE(per_epoch == 13);

  const int workers = GENERATE(0, 2);
  DataLoader a(ds, LoaderOptions(opts).workers(workers));
  run_epoch(a);
  LoaderState saved;
  int taken = 0;
  for (auto& batch : a) {  // stop after 5 batches of epoch 1, as a crash would
    (void)batch;
    if (++taken == 5) {
      saved = a.state();
      break;
    }
  }
  CHECK(saved.epoch == 1);
  CHECK(saved.batch == 5);

  DataLoader b(ds, LoaderOptions(opts).workers(workers));
  b.load_state(saved);
  auto rest = run_epoch(b);
  REQUIRE(rest.size() == 8);
  for (size_t i = 0; i < rest.size(); ++i) CHECK(rest[i] == stream[per_epoch + 5 + i]);
  CHECK(b.state().epoch == 2);
  CHECK(b.state().batch == 0);
  auto next = run_epoch(b);
  CHECK(next == std::vector<std::vector<int64_t>>(stream.begin() + 2 * per_epoch, stream.end()));

  // After an early break, the next loop starts the next epoch from its first batch.
  CHECK(run_epoch(a) == std::vector<std::vector<int64_t>>(stream.begin() + 2 * per_epoch, stream.end()));

  // set_epoch / load_state at the end of an epoch, and invalid positions.
  b.set_epoch(0);
  CHECK(run_epoch(b) == std::vector<std::vector<int64_t>>(stream.begin(), stream.begin() + per_epoch));
  b.load_state(0, per_epoch);
  CHECK(b.state().epoch == 1);
  CHECK(b.state().batch == 0);
  CHECK_THAT(error_of([&] { b.load_state(0, per_epoch + 1); }), Contains("out of range"));
  {
    auto it = b.begin();
    CHECK_THAT(error_of([&] { b.set_epoch(3); }), Contains("while an iteration is alive"));
    CHECK_THAT(error_of([&] { b.begin(); }), Contains("alive"));
  }
  b.set_epoch(3);  // allowed again once the iterator is gone
}

TEST_CASE("DataLoader passes a worker's exception to the consumer", "[data][loader]") {
  struct Faulty : Dataset {
    int64_t size() const override { return 40; }
    Example get(int64_t i) const override {
      MINIDL_CHECK(i != 29, "Faulty", "sample ", i, " is broken");
      return {full({2}, double(i)), scalar_tensor(double(i), DType::I64)};
    }
  } ds;
  const int workers = GENERATE(0, 1, 3);
  DataLoader loader(ds, LoaderOptions().batch_size(4).workers(workers));
  int seen = 0;
  const std::string msg = error_of([&] {
    for (auto& batch : loader) seen += static_cast<int>(batch.size());
  });
  CHECK_THAT(msg, Contains("sample 29 is broken"));
  CHECK(seen == 28);
  CHECK(loader.state().epoch == 0);
  CHECK(loader.state().batch == 7);
}

TEST_CASE("DataLoader with many workers delivers every batch once and stops cleanly", "[data][loader]") {
  TensorDataset ds = counting_dataset(1000);
  DataLoader loader(ds, LoaderOptions().batch_size(7).shuffle(true).workers(4).prefetch(3));
  for (int e = 0; e < 3; ++e) {
    auto all = flatten(run_epoch(loader));
    std::sort(all.begin(), all.end());
    REQUIRE(all.size() == 1000);
    CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
  }
  for (int i = 0; i < 5; ++i)
    for (auto& batch : loader) { (void)batch; break; }  // early breaks join the workers
  SUCCEED();
}

// ------------------------------------------------------------------------------------------------
// CIFAR

namespace {
// n CIFAR records: label byte j of record r is (first[j] + r) % mod[j], then pixel byte
// k = (r * 13 + k * 5 + salt) % 256, appended to *pixels_out.
std::vector<uint8_t> cifar_records(int n, std::vector<int> first, std::vector<int> mod, int salt,
                                   std::vector<uint8_t>* pixels_out) {
  std::vector<uint8_t> out;
  for (int r = 0; r < n; ++r) {
    for (size_t j = 0; j < first.size(); ++j) out.push_back(static_cast<uint8_t>((first[j] + r) % mod[j]));
    for (int k = 0; k < 3072; ++k) {
      const auto v = static_cast<uint8_t>((r * 13 + k * 5 + salt) % 256);
      out.push_back(v);
      pixels_out->push_back(v);
    }
  }
  return out;
}
}  // namespace

TEST_CASE("CIFAR-10 binary files are read exactly", "[data][cifar]") {
  TempDir dir;
  std::vector<uint8_t> train_pixels, test_pixels;
  std::vector<int64_t> train_labels;
  for (int f = 1; f <= 5; ++f) {
    write_raw(dir.file("data_batch_" + std::to_string(f) + ".bin"), cifar_records(2, {f}, {10}, f, &train_pixels));
    for (int r = 0; r < 2; ++r) train_labels.push_back((f + r) % 10);
  }
  write_raw(dir.file("test_batch.bin"), cifar_records(3, {7}, {10}, 100, &test_pixels));

  CIFAR train(dir.path.string(), Split::Train);
  REQUIRE(train.size() == 10);
  CHECK(train.num_classes() == 10);
  CHECK(train.images().shape() == Shape{10, 3, 32, 32});
  CHECK(train.images().to_vector<uint8_t>() == train_pixels);
  CHECK(train.targets().to_vector<int64_t>() == train_labels);
  CHECK_FALSE(train.coarse_targets().defined());

  Batch b = train.get_batch({9, 0});
  REQUIRE(b.data.shape() == Shape{2, 3, 32, 32});
  const auto d = b.data.to_vector<float>();
  for (int k = 0; k < 3072; k += 97) {
    CHECK(d[k] == train_pixels[9 * 3072 + k] / 255.0f);
    CHECK(d[3072 + k] == train_pixels[k] / 255.0f);
  }
  CHECK(b.target.to_vector<int64_t>() == std::vector<int64_t>{train_labels[9], train_labels[0]});
  // Channel planes: pixel (c, y, x) is byte c * 1024 + y * 32 + x of the record.
  Example e = train.get(4);
  CHECK(e.data.shape() == Shape{3, 32, 32});
  CHECK(e.data.select(0, 2).select(0, 5).select(0, 7).item<float>() == train_pixels[4 * 3072 + 2048 + 5 * 32 + 7] / 255.0f);

  CIFAR test(dir.path.string(), Split::Test, CIFAROptions().normalize({0.5f, 0.5f, 0.5f}, {0.5f, 0.25f, 0.125f}));
  REQUIRE(test.size() == 3);
  CHECK(test.targets().to_vector<int64_t>() == std::vector<int64_t>{7, 8, 9});
  const auto t = test.get_batch({1}).data.to_vector<float>();
  CHECK(t[1024 + 3] == Approx((test_pixels[3072 + 1024 + 3] / 255.0 - 0.5) / 0.25).margin(1e-6));
}

TEST_CASE("CIFAR-100 binary files: coarse and fine labels", "[data][cifar]") {
  TempDir dir;
  std::vector<uint8_t> px, px_test;
  write_raw(dir.file("train.bin"), cifar_records(4, {3, 97}, {20, 100}, 1, &px));
  write_raw(dir.file("test.bin"), cifar_records(1, {0, 0}, {20, 100}, 2, &px_test));
  CIFAR fine(dir.path.string(), Split::Train, CIFAROptions().cifar100(true).fine_labels(true));
  REQUIRE(fine.size() == 4);
  CHECK(fine.num_classes() == 100);
  CHECK(fine.images().to_vector<uint8_t>() == px);
  CHECK(fine.targets().to_vector<int64_t>() == std::vector<int64_t>{97, 98, 99, 0});
  CHECK(fine.coarse_targets().to_vector<int64_t>() == std::vector<int64_t>{3, 4, 5, 6});
  CIFAR coarse(dir.path.string(), Split::Train, CIFAROptions().cifar100(true).fine_labels(false));
  CHECK(coarse.num_classes() == 20);
  CHECK(coarse.targets().to_vector<int64_t>() == std::vector<int64_t>{3, 4, 5, 6});
  CHECK(CIFAR(dir.path.string(), Split::Test, CIFAROptions().cifar100()).size() == 1);
}

TEST_CASE("CIFAR errors name the file and the problem", "[data][cifar]") {
  TempDir dir;
  std::vector<uint8_t> px;
  auto test10 = [&] { CIFAR c(dir.path.string(), Split::Test); };
  SECTION("missing train batch") {
    for (int f = 1; f <= 4; ++f) write_raw(dir.file("data_batch_" + std::to_string(f) + ".bin"), cifar_records(1, {0}, {10}, 0, &px));
    CHECK_THAT(error_of([&] { CIFAR c(dir.path.string(), Split::Train); }),
               Contains("data_batch_5.bin") && Contains("not found"));
  }
  SECTION("size not a multiple of the record") {
    auto bytes = cifar_records(2, {1}, {10}, 0, &px);
    bytes.pop_back();
    write_raw(dir.file("test_batch.bin"), bytes);
    CHECK_THAT(error_of(test10), Contains("test_batch.bin") && Contains("6145") && Contains("3073-byte record"));
  }
  SECTION("CIFAR-100 file read as CIFAR-10") {
    write_raw(dir.file("test_batch.bin"), cifar_records(3, {1, 1}, {20, 100}, 0, &px));
    CHECK_THAT(error_of(test10), Contains("not a multiple"));
  }
  SECTION("empty file") {
    write_raw(dir.file("test_batch.bin"), {});
    CHECK_THAT(error_of(test10), Contains("test_batch.bin") && Contains("empty"));
  }
  SECTION("label out of range") {
    auto bytes = cifar_records(3, {0}, {10}, 0, &px);
    bytes[2 * 3073] = 10;
    write_raw(dir.file("test_batch.bin"), bytes);
    CHECK_THAT(error_of(test10), Contains("test_batch.bin") && Contains("record 2 has label 10"));
  }
  SECTION("CIFAR-100 fine label out of range") {
    auto bytes = cifar_records(2, {0, 0}, {20, 100}, 0, &px);
    bytes[3074 + 1] = 100;
    write_raw(dir.file("test.bin"), bytes);
    CHECK_THAT(error_of([&] { CIFAR c(dir.path.string(), Split::Test, CIFAROptions().cifar100()); }),
               Contains("test.bin") && Contains("record 1 has fine label 100"));
  }
  SECTION("missing directory") {
    CHECK_THAT(error_of([&] { CIFAR c(dir.file("none"), Split::Test); }), Contains("none") && Contains("does not exist"));
  }
}

// ------------------------------------------------------------------------------------------------
// Transforms

namespace {
// [b, c, h, w] with value sample*1000 + channel*100 + y*10 + x.
Tensor coded_batch(int64_t b, int64_t c, int64_t h, int64_t w) {
  std::vector<float> v;
  for (int64_t i = 0; i < b; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) v.push_back(static_cast<float>(i * 1000 + ch * 100 + y * 10 + x));
  return from_vector(v, {b, c, h, w});
}
float at(const std::vector<float>& v, const Shape& s, int64_t i, int64_t c, int64_t y, int64_t x) {
  return v[((i * s[1] + c) * s[2] + y) * s[3] + x];
}
TransformContext context(uint64_t seed, int64_t epoch, const std::vector<int64_t>& idx) {
  TransformContext ctx;
  ctx.seed = seed;
  ctx.epoch = epoch;
  ctx.indices = &idx;
  return ctx;
}
}  // namespace

TEST_CASE("RandomHorizontalFlip: exact mirror, per-sample and deterministic", "[data][transforms]") {
  const Shape s{2, 2, 2, 3};
  std::vector<int64_t> idx{0, 1};
  auto flipped = RandomHorizontalFlip(1.0).apply(coded_batch(2, 2, 2, 3), context(1, 0, idx)).to_vector<float>();
  const auto orig = coded_batch(2, 2, 2, 3).to_vector<float>();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t y = 0; y < 2; ++y)
        for (int64_t x = 0; x < 3; ++x) CHECK(at(flipped, s, i, c, y, x) == at(orig, s, i, c, y, 2 - x));
  CHECK(RandomHorizontalFlip(0.0).apply(coded_batch(2, 2, 2, 3), context(1, 0, idx)).to_vector<float>() == orig);

  // p = 0.5 on 64 samples: each one is either untouched or mirrored, both happen, and the choice
  // depends on (seed, epoch, index) only.
  std::vector<int64_t> many(64);
  for (int i = 0; i < 64; ++i) many[i] = 1000 + i;
  auto flips = [&](uint64_t seed, int64_t epoch) {
    auto out = RandomHorizontalFlip(0.5).apply(coded_batch(64, 1, 1, 2), context(seed, epoch, many)).to_vector<float>();
    std::vector<bool> f;
    for (int i = 0; i < 64; ++i) {
      REQUIRE(((out[2 * i] == i * 1000 && out[2 * i + 1] == i * 1000 + 1) ||
               (out[2 * i] == i * 1000 + 1 && out[2 * i + 1] == i * 1000)));
      f.push_back(out[2 * i] != i * 1000);
    }
    return f;
  };
  const auto f0 = flips(5, 0);
  const auto n = std::count(f0.begin(), f0.end(), true);
  CHECK(n > 10);
  CHECK(n < 54);
  CHECK(flips(5, 0) == f0);
  CHECK(flips(5, 1) != f0);
  CHECK(flips(6, 0) != f0);
  // Batch composition does not matter: sample 1005 alone gets the same choice.
  std::vector<int64_t> one{1005};
  auto single = RandomHorizontalFlip(0.5).apply(coded_batch(1, 1, 1, 2), context(5, 0, one)).to_vector<float>();
  CHECK((single[0] == 1.0f) == f0[5]);
}

TEST_CASE("RandomCrop: zero padding and windows, exact", "[data][transforms]") {
  std::vector<int64_t> idx{0, 1, 2};
  // Crop size = padded size: the one window is the whole zero-padded image.
  const Shape s{3, 2, 2, 2};
  const auto orig = coded_batch(3, 2, 2, 2).to_vector<float>();
  auto whole = RandomCrop(4, 1).apply(coded_batch(3, 2, 2, 2), context(0, 0, idx));
  REQUIRE(whole.shape() == Shape{3, 2, 4, 4});
  const auto w = whole.to_vector<float>();
  const Shape ws{3, 2, 4, 4};
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t y = 0; y < 4; ++y)
        for (int64_t x = 0; x < 4; ++x) {
          const bool inside = y >= 1 && y <= 2 && x >= 1 && x <= 2;
          CHECK(at(w, ws, i, c, y, x) == (inside ? at(orig, s, i, c, y - 1, x - 1) : 0.0f));
        }
  CHECK_THAT(error_of([&] { RandomCrop(7, 1).apply(coded_batch(1, 1, 4, 4), context(0, 0, idx)); }),
             Contains("larger than the padded image"));
  CHECK_THAT(error_of([&] { RandomCrop(3, 1).apply(coded_batch(1, 1, 4, 4).to(DType::F64), context(0, 0, idx)); }),
             Contains("f32"));

  // Square 3x3 image, padding 1, crop 3: every output is one of the 9 windows of the padded 5x5.
  const int64_t b = 200;
  std::vector<int64_t> many(b);
  for (int64_t i = 0; i < b; ++i) many[i] = i;
  const Shape in_s{b, 1, 3, 3};
  const auto in = coded_batch(b, 1, 3, 3).to_vector<float>();
  auto padded = [&](int64_t i, int64_t y, int64_t x) -> float {
    return (y < 1 || y > 3 || x < 1 || x > 3) ? 0.0f : at(in, in_s, i, 0, y - 1, x - 1);
  };
  auto out_t = RandomCrop(3, 1).apply(coded_batch(b, 1, 3, 3), context(9, 2, many));
  REQUIRE(out_t.shape() == Shape{b, 1, 3, 3});
  const auto out = out_t.to_vector<float>();
  std::set<int> offsets;
  for (int64_t i = 0; i < b; ++i) {
    int match = -1;
    for (int oy = 0; oy < 3 && match < 0; ++oy)
      for (int ox = 0; ox < 3 && match < 0; ++ox) {
        bool ok = true;
        for (int y = 0; y < 3; ++y)
          for (int x = 0; x < 3; ++x) ok = ok && at(out, in_s, i, 0, y, x) == padded(i, oy + y, ox + x);
        if (ok) match = oy * 3 + ox;
      }
    REQUIRE(match >= 0);
    offsets.insert(match);
  }
  CHECK(offsets.size() == 9);  // every window position occurs
  CHECK(RandomCrop(3, 1).apply(coded_batch(b, 1, 3, 3), context(9, 2, many)).to_vector<float>() == out);
  CHECK(RandomCrop(3, 1).apply(coded_batch(b, 1, 3, 3), context(9, 3, many)).to_vector<float>() != out);

  // Exact small case: padding 2 around a 1x1 image, crop 5: the pixel sits in the centre.
  auto centre = RandomCrop(5, 2).apply(full_like(zeros({1, 1, 1, 1}), 7.0), context(0, 0, idx)).to_vector<float>();
  std::vector<float> expect(25, 0.0f);
  expect[12] = 7.0f;
  CHECK(centre == expect);
}

TEST_CASE("Normalize per channel and Compose", "[data][transforms]") {
  std::vector<int64_t> idx{0, 1};
  const Shape s{2, 3, 1, 2};
  const auto orig = coded_batch(2, 3, 1, 2).to_vector<float>();
  const std::vector<float> m{1.0f, 2.0f, 3.0f}, sd{2.0f, 4.0f, 0.5f};
  auto out = Normalize(m, sd).apply(coded_batch(2, 3, 1, 2), context(0, 0, idx)).to_vector<float>();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t x = 0; x < 2; ++x)
        CHECK(at(out, s, i, c, 0, x) == Approx((at(orig, s, i, c, 0, x) - m[c]) / sd[c]).epsilon(1e-7));
  CHECK_THAT(error_of([&] { Normalize({0.f, 0.f}, {1.f, 1.f}).apply(coded_batch(1, 3, 1, 1), context(0, 0, idx)); }),
             Contains("2 means") && Contains("3 channels"));
  CHECK_THAT(error_of([] { Normalize({0.f}, {0.f}); }), Contains("std must be > 0"));

  auto pipeline = std::make_shared<Compose>(std::vector<std::shared_ptr<Transform>>{
      std::make_shared<RandomCrop>(2, 1), std::make_shared<RandomHorizontalFlip>(0.5),
      std::make_shared<Normalize>(std::vector<float>{0.5f}, std::vector<float>{0.25f})});
  CHECK(pipeline->repr() == "Compose(RandomCrop(size=2, padding=1), RandomHorizontalFlip(p=0.5), Normalize(mean=[0.5], std=[0.25]))");

  // Through a DataLoader: the same augmented batches for any worker count.
  std::vector<float> v(40 * 4);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  std::vector<int64_t> t(40, 0);
  TensorDataset ds(from_vector(v, {40, 1, 2, 2}), from_vector(t, {40}));
  auto run = [&](int workers) {
    DataLoader loader(ds, LoaderOptions().batch_size(6).shuffle(true).seed(3).workers(workers), pipeline);
    std::vector<float> all;
    for (int e = 0; e < 2; ++e)
      for (auto& batch : loader) {
        REQUIRE(batch.data.shape()[1] == 1);
        auto d = batch.data.to_vector<float>();
        all.insert(all.end(), d.begin(), d.end());
      }
    return all;
  };
  const auto ref = run(0);
  CHECK(ref.size() == 2 * 40 * 4);
  CHECK(run(1) == ref);
  CHECK(run(3) == ref);
}

// A collate hook that returns a view into the dataset: the in-place transforms work on a copy, so
// every epoch sees the stored values (they normalized the dataset itself again each epoch).
TEST_CASE("transforms never write into the dataset through a batch that views it", "[data][transforms]") {
  TensorDataset ds(arange(0, 16, 1, DType::F32).reshape({4, 1, 2, 2}), zeros({4}, DType::I64));
  auto norm = std::make_shared<Normalize>(std::vector<float>{0.25f}, std::vector<float>{0.5f});
  auto flip = std::make_shared<RandomHorizontalFlip>(1.0);
  for (const std::shared_ptr<Transform>& transform : std::vector<std::shared_ptr<Transform>>{norm, flip}) {
    DataLoader loader(ds, LoaderOptions().batch_size(1).collate([](std::vector<Example>&& samples) {
                        return Batch{samples[0].data.unsqueeze(0), samples[0].target.unsqueeze(0)};
                      }),
                      transform);
    for (int epoch = 0; epoch < 3; ++epoch)
      for (auto& batch : loader) {  // sample 0 comes first (no shuffle): normalized -0.5, flipped [1, 0, 3, 2]
        CHECK(batch.data.to_vector<float>()[0] == (transform == norm ? -0.5f : 1.0f));
        break;
      }
    CHECK(ds.get(0).data.to_vector<float>() == std::vector<float>{0, 1, 2, 3});
  }
  // As PyTorch's RandomSampler, shuffling an empty dataset is an error; without shuffle, no batches.
  TensorDataset empty(zeros({0, 2}), zeros({0}, DType::I64));
  CHECK_THAT(error_of([&] { DataLoader(empty, LoaderOptions().batch_size(4).shuffle(true)); }),
             Contains("DataLoader") && Contains("num_samples=0"));
  CHECK(DataLoader(empty, LoaderOptions().batch_size(4)).size() == 0);
  // A transform returns a new tensor and leaves its input alone, as torchvision's.
  Tensor own = ones({2, 1, 2, 2});
  std::vector<int64_t> idx{0, 1};
  CHECK(norm->apply(own, context(0, 0, idx)).to_vector<float>()[0] == 1.5f);
  CHECK(flip->apply(own, context(0, 0, idx)).shape() == own.shape());
  CHECK(own.to_vector<float>() == std::vector<float>(8, 1.0f));
}

namespace {
// Samples with two inputs and a dict-like field: a sequence (of per-sample length) and a mask.
class PairsDataset : public data::Dataset {
 public:
  int64_t size() const override { return 6; }
  data::Example get(int64_t i) const override {
    data::check_index(i, size(), "PairsDataset");
    data::Example e;
    e.data = full({2}, static_cast<double>(i));
    e.target = full({}, static_cast<double>(i % 2), DType::I64);
    e.fields["second_input"] = full({3}, 10.0 * static_cast<double>(i));
    e.fields["length"] = full({}, static_cast<double>(i + 1), DType::I64);
    return e;
  }
};
}  // namespace

TEST_CASE("default_collate stacks data, target and every named field", "[data][collate]") {
  PairsDataset ds;
  data::DataLoader loader(ds, data::LoaderOptions().batch_size(4));
  auto it = loader.begin();
  data::Batch& b = *it;
  CHECK(b.size() == 4);
  CHECK(b.data.shape() == Shape{4, 2});
  CHECK(b.target.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 0, 1});
  REQUIRE(b.fields.count("second_input") == 1);
  CHECK(b.fields.at("second_input").shape() == Shape{4, 3});
  CHECK(b.fields.at("length").to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3, 4});
  // Mismatched samples: the error names the part.
  data::Example a = ds.get(0), c = ds.get(1);
  c.fields["second_input"] = zeros({5});
  CHECK_THROWS_WITH(data::default_collate({a, c}), Catch::Contains("default_collate") && Catch::Contains("second_input"));
  c.fields.erase("second_input");
  CHECK_THROWS_WITH(data::default_collate({a, c}), Catch::Contains("other field names"));
}

TEST_CASE("a collate hook batches samples its own way, on workers too", "[data][collate]") {
  PairsDataset ds;
  // Pads nothing but shows the hook's freedom: the batch's data is the sum of both inputs' firsts,
  // and a field keeps the per-sample lengths as a list-like i64 tensor.
  data::CollateFn collate = [](std::vector<data::Example>&& samples) {
    std::vector<double> firsts;
    for (const data::Example& e : samples) firsts.push_back(e.data.to_vector<float>()[0] + e.fields.at("second_input").to_vector<float>()[0]);
    data::Batch b;
    b.data = from_vector(firsts);
    b.fields["count"] = full({}, static_cast<double>(samples.size()), DType::I64);
    return b;
  };
  for (int workers : {0, 2}) {
    data::DataLoader loader(ds, data::LoaderOptions().batch_size(4).workers(workers).collate(collate));
    std::vector<std::vector<double>> seen;
    for (auto& b : loader) {
      seen.push_back(b.data.to_vector<double>());
      CHECK(b.fields.at("count").item_int() == static_cast<int64_t>(b.indices.size()));
    }
    CHECK(seen == std::vector<std::vector<double>>{{0, 11, 22, 33}, {44, 55}});
  }
}

TEST_CASE("RandomVerticalFlip: exact top-bottom mirror, per sample, input untouched", "[data][transforms]") {
  const Shape s{2, 2, 3, 2};
  std::vector<int64_t> idx{0, 1};
  const Tensor input = coded_batch(2, 2, 3, 2);
  const auto orig = input.to_vector<float>();
  auto flipped = RandomVerticalFlip(1.0).apply(input, context(1, 0, idx)).to_vector<float>();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t y = 0; y < 3; ++y)
        for (int64_t x = 0; x < 2; ++x) CHECK(at(flipped, s, i, c, y, x) == at(orig, s, i, c, 2 - y, x));
  CHECK(input.to_vector<float>() == orig);
  CHECK(RandomVerticalFlip(0.0).apply(input, context(1, 0, idx)).to_vector<float>() == orig);
  // Its own random stream: at p = 0.5 over 64 samples, not the horizontal flip's choices.
  std::vector<int64_t> many(64);
  for (int i = 0; i < 64; ++i) many[i] = i;
  const auto v = RandomVerticalFlip(0.5).apply(coded_batch(64, 1, 2, 1), context(3, 0, many)).to_vector<float>();
  const auto hz = RandomHorizontalFlip(0.5).apply(coded_batch(64, 1, 1, 2), context(3, 0, many)).to_vector<float>();
  int flips = 0, same_as_horizontal = 0;
  for (int i = 0; i < 64; ++i) {
    const bool vf = v[2 * i] != i * 1000.0f, hf = hz[2 * i] != i * 1000.0f;
    flips += vf;
    same_as_horizontal += vf == hf;
  }
  CHECK(flips > 10);
  CHECK(flips < 54);
  CHECK(same_as_horizontal < 64);
  CHECK(RandomVerticalFlip(0.25).repr() == "RandomVerticalFlip(p=0.25)");
  CHECK_THROWS_WITH(RandomVerticalFlip(1.5), Catch::Contains("p must be in [0, 1]"));
}

TEST_CASE("RandomErasing: one rectangle within scale and ratio, every channel, deterministic", "[data][transforms]") {
  const int64_t B = 200, C = 3, H = 16, W = 20;
  std::vector<int64_t> idx(B);
  for (int64_t i = 0; i < B; ++i) idx[static_cast<size_t>(i)] = 50 + i;
  const Tensor input = coded_batch(B, C, H, W);  // no pixel is negative before erasing
  const std::pair<double, double> scale{0.05, 0.3}, ratio{0.5, 2.0};
  const RandomErasing erase(0.5, scale, ratio, {-7.0f});
  const auto out = erase.apply(input, context(7, 2, idx)).to_vector<float>();
  const auto orig = input.to_vector<float>();
  const Shape s{B, C, H, W};
  int erased = 0;
  for (int64_t i = 0; i < B; ++i) {
    // The erased (-7) pixels of channel 0 form one rectangle, the same in every channel; the rest is untouched.
    int64_t top = H, bottom = -1, left = W, right = -1, zeros = 0;
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x)
        if (at(out, s, i, 0, y, x) == -7.0f) {
          ++zeros;
          top = std::min(top, y), bottom = std::max(bottom, y), left = std::min(left, x), right = std::max(right, x);
        }
    int64_t wrong = 0;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
          const bool inside = zeros > 0 && y >= top && y <= bottom && x >= left && x <= right;
          wrong += at(out, s, i, c, y, x) != (inside ? -7.0f : at(orig, s, i, c, y, x));
        }
    INFO("image " << i);
    REQUIRE(wrong == 0);
    if (zeros == 0) continue;
    ++erased;
    const double h = static_cast<double>(bottom - top + 1), w = static_cast<double>(right - left + 1);
    CHECK(zeros == static_cast<int64_t>(h * w));
    CHECK(h < H);
    CHECK(w < W);
    // Rounding h and w moves the area and ratio a little past the drawn ones: half a pixel each way.
    CHECK(h * w >= scale.first * H * W * (1 - 1.0 / h) * (1 - 1.0 / w) - 1e-9);
    CHECK(h * w <= scale.second * H * W * (1 + 1.0 / h) * (1 + 1.0 / w) + 1e-9);
    CHECK(h / w >= ratio.first * (h - 0.5) / (h + 0.5) * (w - 0.5) / (w + 0.5) - 1e-9);
    CHECK(h / w <= ratio.second * (h + 0.5) / (h - 0.5) * (w + 0.5) / (w - 0.5) + 1e-9);
  }
  // p = 0.5 over 200 images: about half erased (never all nor none), and the same again for the
  // same (seed, epoch, indices).
  CHECK(erased > 60);
  CHECK(erased < 140);
  CHECK(erase.apply(input, context(7, 2, idx)).to_vector<float>() == out);
  CHECK(erase.apply(input, context(7, 3, idx)).to_vector<float>() != out);
  CHECK(input.to_vector<float>() == orig);
  // A value per channel; reprs and errors as torchvision's.
  const auto per_channel = RandomErasing(1.0, scale, ratio, {-1.0f, -2.0f, -3.0f}).apply(input, context(7, 2, idx)).to_vector<float>();
  int64_t minus_two = 0;
  for (int64_t y = 0; y < H; ++y)
    for (int64_t x = 0; x < W; ++x) minus_two += at(per_channel, s, 0, 1, y, x) == -2.0f;
  CHECK(minus_two > 0);
  CHECK(RandomErasing().repr() == "RandomErasing(p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0)");
  CHECK_THROWS_WITH(RandomErasing(0.5, {0.1, 1.5}), Catch::Contains("Scale should be between 0 and 1"));
  CHECK_THROWS_WITH(RandomErasing(0.5, {0.3, 0.1}), Catch::Contains("Scale and ratio should be of kind (min, max)"));
  CHECK_THROWS_WITH(RandomErasing(0.5, scale, ratio, {0.0f, 1.0f}).apply(input, context(7, 2, idx)),
                    Catch::Contains("has 2 values but the batch has 3 channels"));
}
