// Batch transforms on raw f32 buffers: one pass per batch, a row memcpy where the data only moves.
#include "data/transforms.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "framework/error.h"

namespace minidl::data {

namespace {
constexpr uint64_t kCropSalt = 0x63726f70ull;  // "crop"
constexpr uint64_t kFlipSalt = 0x666c6970ull;  // "flip"
constexpr uint64_t kVerticalFlipSalt = 0x76666c70ull;  // "vflp"
constexpr uint64_t kEraseSalt = 0x65726173ull;  // "eras"

// Checks the batch and returns a contiguous copy for the transform to write: as torchvision's
// transforms, they return new tensors and never touch their input (writing in place transformed a
// dataset again every epoch when a collate hook or get_batch handed out a view of it or the stored
// tensor itself; a copy of one batch costs little beside loading it).
Tensor prepare(const Tensor& batch, const char* who, int64_t min_dim, int64_t max_dim) {
  MINIDL_CHECK(batch.defined(), who, "batch is undefined");
  MINIDL_CHECK(batch.dtype() == DType::F32 && batch.device().is_cpu(), who,
               "expected an f32 CPU batch, got ", batch.meta_str());
  MINIDL_CHECK(batch.dim() >= min_dim && batch.dim() <= max_dim, who, "expected a batch with ", min_dim,
               max_dim > min_dim ? " to " + std::to_string(max_dim) : std::string(), " dims ([B, C, H, W] or [B, H, W]), got ",
               batch.meta_str());
  Tensor dense = batch.contiguous();  // a copy already unless the batch was contiguous
  return dense.is_same(batch) ? batch.clone() : dense;
}
}  // namespace

// ---- Normalize

Normalize::Normalize(std::vector<float> mean, std::vector<float> std) : mean_(std::move(mean)), std_(std::move(std)) {
  MINIDL_CHECK(!mean_.empty() && mean_.size() == std_.size(), "Normalize",
               "mean and std must be non-empty and of equal length, got ", mean_.size(), " and ", std_.size());
  for (float s : std_) MINIDL_CHECK(s > 0.0f, "Normalize", "std must be > 0, got ", s);
}

Tensor Normalize::apply(Tensor batch, const TransformContext&) const {
  Tensor x = prepare(batch, "Normalize", 2, 16);
  const int64_t b = x.size(0), c = x.size(1);
  MINIDL_CHECK(mean_.size() == 1 || static_cast<int64_t>(mean_.size()) == c, "Normalize", "has ",
               mean_.size(), " means but the batch has ", c, " channels (dim 1 of ", x.meta_str(), ")");
  const int64_t plane = (b * c) == 0 ? 0 : x.numel() / (b * c);
  float* p = x.data_ptr<float>();
  for (int64_t i = 0; i < b; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float m = mean_.size() == 1 ? mean_[0] : mean_[ch];
      const float s = std_.size() == 1 ? std_[0] : std_[ch];
      float* q = p + (i * c + ch) * plane;
      for (int64_t k = 0; k < plane; ++k) q[k] = (q[k] - m) / s;
    }
  x.bump_version();
  return x;
}

std::string Normalize::repr() const {
  std::ostringstream os;
  os << "Normalize(mean=[";
  for (size_t i = 0; i < mean_.size(); ++i) os << (i ? ", " : "") << mean_[i];
  os << "], std=[";
  for (size_t i = 0; i < std_.size(); ++i) os << (i ? ", " : "") << std_[i];
  os << "])";
  return os.str();
}

// ---- RandomCrop

RandomCrop::RandomCrop(int64_t size, int64_t padding, std::vector<float> fill)
    : size_(size), padding_(padding), fill_(std::move(fill)) {
  MINIDL_CHECK(size > 0 && padding >= 0, "RandomCrop", "needs size > 0 and padding >= 0, got size ", size,
               " and padding ", padding);
  MINIDL_CHECK(!fill_.empty(), "RandomCrop", "fill needs one value or one per channel, got none");
}

std::vector<float> normalized_fill(const std::vector<float>& mean, const std::vector<float>& std, float value) {
  MINIDL_CHECK(!mean.empty() && mean.size() == std.size(), "normalized_fill",
               "mean and std must be non-empty and of equal length, got ", mean.size(), " and ", std.size());
  std::vector<float> out(mean.size());
  for (size_t c = 0; c < mean.size(); ++c) {
    MINIDL_CHECK(std[c] > 0.0f, "normalized_fill", "std must be > 0, got ", std[c]);
    out[c] = (value - mean[c]) / std[c];
  }
  return out;
}

Tensor RandomCrop::apply(Tensor batch, const TransformContext& ctx) const {
  Tensor x = prepare(batch, "RandomCrop", 3, 4);
  const int64_t b = x.size(0), c = x.dim() == 4 ? x.size(1) : 1;
  const int64_t h = x.size(x.dim() - 2), w = x.size(x.dim() - 1);
  const int64_t ph = h + 2 * padding_, pw = w + 2 * padding_;
  MINIDL_CHECK(fill_.size() == 1 || static_cast<int64_t>(fill_.size()) == c, "RandomCrop", "has ", fill_.size(),
               " fill values but the batch has ", c, " channels (", x.meta_str(), ")");
  MINIDL_CHECK(size_ <= ph && size_ <= pw, "RandomCrop", "crop size ", size_, " is larger than the padded image ",
               ph, "x", pw, " (", x.meta_str(), ", padding ", padding_, ")");
  Shape out_shape = x.shape();
  out_shape[x.dim() - 2] = size_;
  out_shape[x.dim() - 1] = size_;
  Tensor out = empty(out_shape, DType::F32);
  const float* src = x.data_ptr<float>();
  float* dst = out.data_ptr<float>();
  for (int64_t i = 0; i < b; ++i) {
    DataRng rng = ctx.rng(i, kCropSalt);
    const int64_t oy = static_cast<int64_t>(rng.below(static_cast<uint64_t>(ph - size_ + 1)));
    const int64_t ox = static_cast<int64_t>(rng.below(static_cast<uint64_t>(pw - size_ + 1)));
    // Output column j reads source column ox + j - padding: valid for j in [j0, j1).
    const int64_t j0 = std::clamp<int64_t>(padding_ - ox, 0, size_);
    const int64_t j1 = std::clamp<int64_t>(w + padding_ - ox, j0, size_);
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* s = src + (i * c + ch) * h * w;
      float* d = dst + (i * c + ch) * size_ * size_;
      const float fv = fill_.size() == 1 ? fill_[0] : fill_[ch];
      for (int64_t r = 0; r < size_; ++r, d += size_) {
        const int64_t sy = oy + r - padding_;
        if (sy < 0 || sy >= h) {
          std::fill(d, d + size_, fv);
          continue;
        }
        std::fill(d, d + j0, fv);
        std::memcpy(d + j0, s + sy * w + (ox + j0 - padding_), sizeof(float) * (j1 - j0));
        std::fill(d + j1, d + size_, fv);
      }
    }
  }
  return out;
}

std::string RandomCrop::repr() const {
  std::ostringstream os;
  os << "RandomCrop(size=" << size_ << ", padding=" << padding_;
  if (fill_.size() > 1 || fill_[0] != 0.0f) {
    os << ", fill=[";
    for (size_t i = 0; i < fill_.size(); ++i) os << (i ? ", " : "") << fill_[i];
    os << "]";
  }
  os << ")";
  return os.str();
}

// ---- RandomHorizontalFlip

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
  MINIDL_CHECK(p >= 0.0 && p <= 1.0, "RandomHorizontalFlip", "p must be in [0, 1], got ", p);
}

Tensor RandomHorizontalFlip::apply(Tensor batch, const TransformContext& ctx) const {
  Tensor x = prepare(batch, "RandomHorizontalFlip", 2, 16);
  const int64_t b = x.size(0);
  const int64_t w = x.dim() >= 3 ? x.size(x.dim() - 1) : x.size(1);
  const int64_t rows_per_sample = (b == 0 || w == 0) ? 0 : x.numel() / (b * w);
  float* p = x.data_ptr<float>();
  for (int64_t i = 0; i < b; ++i) {
    if (!(ctx.rng(i, kFlipSalt).uniform() < p_)) continue;
    float* row = p + i * rows_per_sample * w;
    for (int64_t r = 0; r < rows_per_sample; ++r, row += w) std::reverse(row, row + w);
  }
  x.bump_version();
  return x;
}

std::string RandomHorizontalFlip::repr() const {
  std::ostringstream os;
  os << "RandomHorizontalFlip(p=" << p_ << ")";
  return os.str();
}

// ---- RandomVerticalFlip

RandomVerticalFlip::RandomVerticalFlip(double p) : p_(p) {
  MINIDL_CHECK(p >= 0.0 && p <= 1.0, "RandomVerticalFlip", "p must be in [0, 1], got ", p);
}

Tensor RandomVerticalFlip::apply(Tensor batch, const TransformContext& ctx) const {
  Tensor x = prepare(batch, "RandomVerticalFlip", 3, 4);
  const int64_t b = x.size(0), h = x.size(-2), w = x.size(-1);
  const int64_t planes = (b * h * w) == 0 ? 0 : x.numel() / (b * h * w);  // channels per image
  float* p = x.data_ptr<float>();
  for (int64_t i = 0; i < b; ++i) {
    if (!(ctx.rng(i, kVerticalFlipSalt).uniform() < p_)) continue;
    for (int64_t c = 0; c < planes; ++c) {
      float* plane = p + (i * planes + c) * h * w;
      for (int64_t r = 0; r < h / 2; ++r) std::swap_ranges(plane + r * w, plane + (r + 1) * w, plane + (h - 1 - r) * w);
    }
  }
  x.bump_version();
  return x;
}

std::string RandomVerticalFlip::repr() const {
  std::ostringstream os;
  os << "RandomVerticalFlip(p=" << p_ << ")";
  return os.str();
}

// ---- RandomErasing

RandomErasing::RandomErasing(double p, std::pair<double, double> scale, std::pair<double, double> ratio,
                             std::vector<float> value)
    : p_(p), scale_(scale), ratio_(ratio), value_(std::move(value)) {
  const char* who = "RandomErasing";
  MINIDL_CHECK(p >= 0.0 && p <= 1.0, who, "Random erasing probability should be between 0 and 1, got ", p);
  MINIDL_CHECK(scale.first >= 0.0 && scale.second <= 1.0, who, "Scale should be between 0 and 1, got (", scale.first,
               ", ", scale.second, ")");
  MINIDL_CHECK(scale.first <= scale.second && ratio.first <= ratio.second, who,
               "Scale and ratio should be of kind (min, max)");
  MINIDL_CHECK(ratio.first > 0.0, who, "ratio must be positive, got (", ratio.first, ", ", ratio.second, ")");
  MINIDL_CHECK(!value_.empty(), who, "value must hold one value or one per channel");
}

Tensor RandomErasing::apply(Tensor batch, const TransformContext& ctx) const {
  const char* who = "RandomErasing";
  Tensor x = prepare(batch, who, 3, 4);
  const int64_t b = x.size(0), h = x.size(-2), w = x.size(-1);
  const int64_t channels = x.dim() == 4 ? x.size(1) : 1;
  MINIDL_CHECK(value_.size() == 1 || static_cast<int64_t>(value_.size()) == channels, who, "has ", value_.size(),
               " values but the batch has ", channels, " channels (", x.meta_str(), ")");
  const double area = static_cast<double>(h * w);
  const double log_lo = std::log(ratio_.first), log_hi = std::log(ratio_.second);
  float* p = x.data_ptr<float>();
  for (int64_t i = 0; i < b; ++i) {
    DataRng rng = ctx.rng(i, kEraseSalt);
    if (!(rng.uniform() < p_)) continue;
    // torchvision's get_params: 10 tries for a rectangle strictly inside the image.
    for (int attempt = 0; attempt < 10; ++attempt) {
      const double erase_area = area * (scale_.first + (scale_.second - scale_.first) * rng.uniform());
      const double aspect = std::exp(log_lo + (log_hi - log_lo) * rng.uniform());
      const auto eh = static_cast<int64_t>(std::lround(std::sqrt(erase_area * aspect)));
      const auto ew = static_cast<int64_t>(std::lround(std::sqrt(erase_area / aspect)));
      if (!(eh < h && ew < w)) continue;
      const auto top = static_cast<int64_t>(rng.below(static_cast<uint64_t>(h - eh + 1)));
      const auto left = static_cast<int64_t>(rng.below(static_cast<uint64_t>(w - ew + 1)));
      for (int64_t c = 0; c < channels; ++c) {
        const float v = value_.size() == 1 ? value_[0] : value_[static_cast<size_t>(c)];
        float* plane = p + (i * channels + c) * h * w;
        for (int64_t r = top; r < top + eh; ++r) std::fill(plane + r * w + left, plane + r * w + left + ew, v);
      }
      break;
    }
  }
  x.bump_version();
  return x;
}

std::string RandomErasing::repr() const {
  std::ostringstream os;
  os << "RandomErasing(p=" << p_ << ", scale=(" << scale_.first << ", " << scale_.second << "), ratio=(" << ratio_.first
     << ", " << ratio_.second << "), value=";
  if (value_.size() == 1) {
    os << value_[0];
  } else {
    os << "[";
    for (size_t k = 0; k < value_.size(); ++k) os << (k ? ", " : "") << value_[k];
    os << "]";
  }
  os << ")";
  return os.str();
}

// ---- Compose

Compose::Compose(std::vector<std::shared_ptr<Transform>> transforms) : transforms_(std::move(transforms)) {
  for (size_t i = 0; i < transforms_.size(); ++i)
    MINIDL_CHECK(transforms_[i] != nullptr, "Compose", "transform ", i, " is null");
}

Tensor Compose::apply(Tensor batch, const TransformContext& ctx) const {
  for (size_t i = 0; i < transforms_.size(); ++i) {
    TransformContext sub = ctx;
    sub.stream = mix_key(ctx.stream, i + 1);
    batch = transforms_[i]->apply(std::move(batch), sub);
  }
  return batch;
}

std::string Compose::repr() const {
  std::string s = "Compose(";
  for (size_t i = 0; i < transforms_.size(); ++i) s += (i ? ", " : "") + transforms_[i]->repr();
  return s + ")";
}

}  // namespace minidl::data
