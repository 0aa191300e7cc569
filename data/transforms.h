// Batch transforms (torchvision.transforms on whole batches): Normalize, RandomCrop,
// RandomHorizontalFlip, RandomVerticalFlip, RandomErasing and Compose. They work on the contiguous f32 buffer of a batch [B, C, H, W]
// directly. Random choices for a sample depend only on (seed, epoch, the sample's dataset index, the
// transform's place in a Compose), never on batch composition or thread count.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/rng.h"
#include "ops/tensor.h"

namespace minidl::data {

// What a transform may draw its random numbers from. The DataLoader fills it for each batch.
struct TransformContext {
  uint64_t seed = 0;
  int64_t epoch = 0;
  const std::vector<int64_t>* indices = nullptr;  // dataset index of each row (null: the row number)
  uint64_t stream = 0;                            // set by Compose: one stream per member

  int64_t index(int64_t row) const { return indices ? (*indices)[row] : row; }
  // The generator for one row, `salt` distinguishing kinds of transform.
  DataRng rng(int64_t row, uint64_t salt) const {
    return DataRng(mix_key(seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index(row)), salt ^ stream));
  }
};

class Transform {
 public:
  virtual ~Transform() = default;
  // Requires an f32 CPU batch whose first dim is the sample dim. Returns a new tensor and leaves
  // `batch` as it was (as torchvision's transforms).
  virtual Tensor apply(Tensor batch, const TransformContext& ctx) const = 0;
  virtual std::string repr() const = 0;  // "RandomCrop(size=32, padding=4)"
};

// x[:, c] = (x[:, c] - mean[c]) / std[c]; mean and std have one value (all channels) or one per
// channel (dim 1 of the batch). In place.
class Normalize : public Transform {
 public:
  Normalize(std::vector<float> mean, std::vector<float> std);
  Tensor apply(Tensor batch, const TransformContext& ctx) const override;
  std::string repr() const override;

 private:
  std::vector<float> mean_, std_;
};

// Pads each image [C, H, W] (or [H, W]) with `padding` pixels of value `fill` on every side (one
// value, or one per channel), then cuts a size x size window at a random offset (uniform over all
// positions). Returns a new [B, C, size, size] tensor. torchvision pads with 0 before Normalize
// (ToTensor -> RandomCrop -> Normalize); on a batch that is already normalized, as the datasets'
// normalize options produce, the same pixels are fill = normalized_fill(mean, std), i.e. -mean/std.
class RandomCrop : public Transform {
 public:
  explicit RandomCrop(int64_t size, int64_t padding = 0, std::vector<float> fill = {0.0f});
  Tensor apply(Tensor batch, const TransformContext& ctx) const override;
  std::string repr() const override;

 private:
  int64_t size_, padding_;
  std::vector<float> fill_;
};

// (value - mean[c]) / std[c] per channel: the padding value `value` of raw [0, 1] images after
// Normalize(mean, std), for RandomCrop's fill on normalized batches.
std::vector<float> normalized_fill(const std::vector<float>& mean, const std::vector<float>& std, float value = 0.0f);

// Mirrors each image left-right with probability p. In place.
class RandomHorizontalFlip : public Transform {
 public:
  explicit RandomHorizontalFlip(double p = 0.5);
  Tensor apply(Tensor batch, const TransformContext& ctx) const override;
  std::string repr() const override;

 private:
  double p_;
};

// Mirrors each image top-bottom with probability p. Returns a new tensor.
class RandomVerticalFlip : public Transform {
 public:
  explicit RandomVerticalFlip(double p = 0.5);
  Tensor apply(Tensor batch, const TransformContext& ctx) const override;
  std::string repr() const override;

 private:
  double p_;
};

// torchvision's RandomErasing (cutout) on [B, C, H, W] or [B, H, W]: with probability p, one
// rectangle of each image, its area a uniform fraction in `scale` of the image's and its aspect
// ratio h / w log-uniform in `ratio` (up to 10 tries for one that fits, else none), is set to
// `value` (one value, or one per channel; on normalized batches use normalized_fill for a raw
// pixel value). Returns a new tensor.
class RandomErasing : public Transform {
 public:
  explicit RandomErasing(double p = 0.5, std::pair<double, double> scale = {0.02, 0.33},
                         std::pair<double, double> ratio = {0.3, 3.3}, std::vector<float> value = {0.0f});
  Tensor apply(Tensor batch, const TransformContext& ctx) const override;
  std::string repr() const override;  // "RandomErasing(p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0)"

 private:
  double p_;
  std::pair<double, double> scale_, ratio_;
  std::vector<float> value_;
};

// Applies its members in order, each with its own random stream.
class Compose : public Transform {
 public:
  explicit Compose(std::vector<std::shared_ptr<Transform>> transforms);
  Tensor apply(Tensor batch, const TransformContext& ctx) const override;
  std::string repr() const override;  // "Compose(RandomCrop(...), RandomHorizontalFlip(p=0.5))"

 private:
  std::vector<std::shared_ptr<Transform>> transforms_;
};

}  // namespace minidl::data
