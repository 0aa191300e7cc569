// CIFAR-10 and CIFAR-100 in their binary form. CIFAR-10 (cifar-10-batches-bin): data_batch_1.bin ..
// data_batch_5.bin (train) and test_batch.bin, each record 1 label byte + 3072 pixel bytes (planes
// R, G, B of 32x32, row-major). CIFAR-100 (cifar-100-binary): train.bin and test.bin, each record a
// coarse label byte, a fine label byte and the same 3072 pixel bytes.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace minidl::data {

struct CIFAROptions {
  bool cifar100_ = false;                // CIFAR-100 layout and files instead of CIFAR-10
  bool fine_labels_ = true;              // CIFAR-100: fine labels (100 classes), else coarse (20)
  bool normalize_ = false;               // after scaling to [0, 1]: x[c] = (x[c] - mean[c]) / std[c]
  std::array<float, 3> mean_{0, 0, 0};   //   e.g. CIFAR-10 {0.4914, 0.4822, 0.4465}
  std::array<float, 3> std_{1, 1, 1};    //        {0.2470, 0.2435, 0.2616}

  CIFAROptions& cifar100(bool on = true) { cifar100_ = on; return *this; }
  CIFAROptions& fine_labels(bool on = true) { fine_labels_ = on; return *this; }
  CIFAROptions& normalize(std::array<float, 3> mean, std::array<float, 3> std);  // std > 0
};

// Loads a split into memory as bytes (50000 x 3 x 32 x 32 = 154 MB for the train split). Every
// problem (missing directory or file, empty file, size not a multiple of the record size, label out
// of range) is a minidl::Error naming the file.
class CIFAR : public Dataset {
 public:
  explicit CIFAR(const std::string& root, Split split = Split::Train, CIFAROptions options = {});

  int64_t size() const override { return images_.size(0); }
  Example get(int64_t index) const override;                             // f32 [3, 32, 32], i64 0-dim
  Batch get_batch(const std::vector<int64_t>& indices) const override;  // f32 [B, 3, 32, 32], i64 [B]

  const Tensor& images() const { return images_; }    // u8 [N, 3, 32, 32]
  const Tensor& targets() const { return targets_; }  // i64 [N]: the label chosen by the options
  const Tensor& coarse_targets() const { return coarse_; }  // CIFAR-100 only: i64 [N] (else undefined)
  int64_t num_classes() const;
  const std::vector<std::string>& files() const { return files_; }

 private:
  CIFAROptions options_;
  std::vector<std::string> files_;
  Tensor images_, targets_, coarse_;
  float luts_[3 * 256];
};

}  // namespace minidl::data
