// MNIST-format data sets (MNIST, Fashion-MNIST, anything stored as IDX u8 images + labels): the four
// files train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
// t10k-labels-idx1-ubyte, each raw or gzip (".gz"), in one directory. scripts/setup_data.sh puts
// Fashion-MNIST in data/fashion-mnist and a small real-MNIST set in data/mnist.
#pragma once
#include <string>

#include "data/dataset.h"

namespace minidl::data {

struct MNISTOptions {
  bool normalize_ = false;     // after scaling to [0, 1]: x = (x - mean) / std
  float mean_ = 0.0f;          //   e.g. MNIST 0.1307 / 0.3081, Fashion-MNIST 0.2860 / 0.3530
  float std_ = 1.0f;
  int64_t num_classes_ = 10;   // every label must be < num_classes (0: no check)
  int64_t limit_ = 0;          // keep only the first `limit` samples (0: all); for quick runs

  MNISTOptions& normalize(float mean, float std);  // std > 0
  MNISTOptions& num_classes(int64_t n) { num_classes_ = n; return *this; }
  MNISTOptions& limit(int64_t n) { limit_ = n; return *this; }
};

// Loads a split into memory as bytes (N x 28 x 28 for MNIST: 47 MB for the train split). Every
// problem (missing directory or file, bad magic number, zero dims, truncated or oversized file,
// image/label count mismatch, label out of range) is a minidl::Error naming the file.
class MNIST : public Dataset {
 public:
  explicit MNIST(const std::string& root, Split split = Split::Train, MNISTOptions options = {});

  int64_t size() const override { return images_.size(0); }
  // data f32 [1, H, W] in [0, 1] (normalized if asked), target i64 0-dim
  Example get(int64_t index) const override;
  // data f32 [B, 1, H, W], target i64 [B]
  Batch get_batch(const std::vector<int64_t>& indices) const override;

  const Tensor& images() const { return images_; }    // u8 [N, H, W], as stored
  const Tensor& targets() const { return targets_; }  // i64 [N]
  const std::string& images_path() const { return images_path_; }
  const std::string& labels_path() const { return labels_path_; }
  const MNISTOptions& options() const { return options_; }

 private:
  MNISTOptions options_;
  std::string images_path_, labels_path_;
  Tensor images_, targets_;
  float lut_[256];
};

}  // namespace minidl::data
