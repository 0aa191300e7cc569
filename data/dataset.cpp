// Dataset defaults: stacking get() results into a batch, index checks and row gathering.
#include "data/dataset.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "framework/error.h"
#include "ops/ops.h"

namespace minidl::data {

int64_t Batch::size() const {
  if (data.defined()) return data.dim() > 0 ? data.size(0) : 0;
  if (!fields.empty() && fields.begin()->second.defined()) return fields.begin()->second.size(0);
  return 0;
}

namespace {
// One part of every sample, stacked; undefined when the part is undefined in all of them.
Tensor collate_part(const std::vector<Example>& samples, const std::string& part,
                    const std::function<const Tensor&(const Example&)>& get) {
  const Tensor& first = get(samples[0]);
  std::vector<Tensor> parts;
  parts.reserve(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    const Tensor& t = get(samples[i]);
    MINIDL_CHECK(t.defined() == first.defined(), "default_collate", part, " is defined in sample 0 but not in sample ", i,
                 " (or the other way round)");
    if (!t.defined()) continue;
    MINIDL_CHECK(t.shape() == first.shape() && t.dtype() == first.dtype(), "default_collate", part, " of sample ", i,
                 " is ", t.meta_str(), " but of sample 0 ", first.meta_str(), "; every sample must match to be stacked");
    parts.push_back(t);
  }
  return parts.empty() ? Tensor() : stack(parts);
}
}  // namespace

Batch default_collate(const std::vector<Example>& samples) {
  MINIDL_CHECK(!samples.empty(), "default_collate", "no samples given");
  Batch b;
  b.data = collate_part(samples, "data", [](const Example& e) -> const Tensor& { return e.data; });
  b.target = collate_part(samples, "target", [](const Example& e) -> const Tensor& { return e.target; });
  for (size_t i = 1; i < samples.size(); ++i)
    MINIDL_CHECK(samples[i].fields.size() == samples[0].fields.size() &&
                     std::equal(samples[i].fields.begin(), samples[i].fields.end(), samples[0].fields.begin(),
                                [](const auto& a, const auto& c) { return a.first == c.first; }),
                 "default_collate", "sample ", i, " has other field names than sample 0");
  for (const auto& field : samples[0].fields) {
    const std::string& name = field.first;  // a plain reference: clang 14 cannot capture a structured binding
    b.fields[name] = collate_part(samples, "field '" + name + "'",
                                  [&name](const Example& e) -> const Tensor& { return e.fields.at(name); });
  }
  return b;
}

Batch Dataset::get_batch(const std::vector<int64_t>& indices) const {
  MINIDL_CHECK(!indices.empty(), "Dataset::get_batch", "no indices given");
  std::vector<Example> samples;
  samples.reserve(indices.size());
  for (int64_t i : indices) samples.push_back(get(i));
  Batch b = default_collate(samples);
  b.indices = indices;
  return b;
}

void check_index(int64_t index, int64_t size, const char* who) {
  MINIDL_CHECK(index >= 0 && index < size, who, "index ", index, " is out of range for a data set of ", size,
               " samples");
}

Tensor gather_rows(const Tensor& source, const std::vector<int64_t>& indices, const char* who) {
  MINIDL_CHECK(source.dim() >= 1, who, "cannot gather rows of a 0-dim tensor");
  MINIDL_CHECK(source.device().is_cpu() && source.is_contiguous(), who,
               "gather_rows needs a contiguous CPU tensor, got ", source.meta_str());
  Shape shape = source.shape();
  const int64_t n = shape[0];
  shape[0] = static_cast<int64_t>(indices.size());
  Tensor out = empty(shape, source.dtype());
  const size_t row_bytes = n == 0 ? 0 : source.nbytes() / static_cast<size_t>(n);
  const auto* src = static_cast<const uint8_t*>(source.raw_data());
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  for (size_t r = 0; r < indices.size(); ++r) {
    check_index(indices[r], n, who);
    std::memcpy(dst + r * row_bytes, src + static_cast<size_t>(indices[r]) * row_bytes, row_bytes);
  }
  return out;
}

Tensor gather_rows_u8_to_f32(const Tensor& images, int64_t channels, const float* luts,
                             const std::vector<int64_t>& indices, const char* who) {
  MINIDL_CHECK(images.dtype() == DType::U8 && images.dim() >= 2 && images.device().is_cpu() &&
                   images.is_contiguous(), who, "expected a contiguous CPU u8 image tensor, got ",
               images.meta_str());
  Shape shape = images.shape();
  const int64_t n = shape[0];
  shape[0] = static_cast<int64_t>(indices.size());
  Tensor out = empty(shape, DType::F32);
  const int64_t row = n == 0 ? 0 : images.numel() / n;
  const int64_t plane = row / channels;
  const uint8_t* src = images.data_ptr<uint8_t>();
  float* dst = out.data_ptr<float>();
  for (size_t r = 0; r < indices.size(); ++r) {
    check_index(indices[r], n, who);
    const uint8_t* s = src + indices[r] * row;
    float* d = dst + static_cast<int64_t>(r) * row;
    for (int64_t c = 0; c < channels; ++c) {
      const float* lut = luts + c * 256;
      for (int64_t i = 0; i < plane; ++i) d[c * plane + i] = lut[s[c * plane + i]];
    }
  }
  return out;
}

void fill_byte_lut(float* lut, float mean, float std) {
  for (int v = 0; v < 256; ++v) lut[v] = (static_cast<float>(v) / 255.0f - mean) / std;
}

}  // namespace minidl::data
