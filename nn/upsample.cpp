#include "nn/upsample.h"

#include "framework/error.h"
#include "nn/python_repr.h"
#include "ops/ops.h"

namespace minidl::nn {

namespace {
using detail::python_float;

// One value as itself, several as a Python tuple.
template <class T, class Format>
std::string value_or_tuple(const std::vector<T>& v, Format format) {
  if (v.size() == 1) return format(v[0]);
  std::string out = "(";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + format(v[i]);
  return out + ")";
}
}  // namespace

Upsample::Upsample(const InterpolateOptions& o) : options(o) {
  MINIDL_CHECK(o.size_.empty() != o.scale_factor_.empty(), "Upsample", "give exactly one of size and scale_factor");
  const InterpolateMode m = o.mode_;
  MINIDL_CHECK(!o.align_corners_ || m == InterpolateMode::Linear || m == InterpolateMode::Bilinear ||
                   m == InterpolateMode::Trilinear || m == InterpolateMode::Bicubic,
               "Upsample", "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear");
}

Tensor Upsample::forward(const Tensor& input) {
  auto scope = forward_scope();
  return interpolate(input, options);
}

std::string Upsample::describe() const {
  const std::string what =
      options.scale_factor_.empty()
          ? "size=" + value_or_tuple(options.size_, [](int64_t v) { return std::to_string(v); })
          : "scale_factor=" + value_or_tuple(options.scale_factor_, python_float);
  return detail::concat("Upsample(", what, ", mode=", interpolate_mode_name(options.mode_), ")");
}

Tensor PixelShuffle::forward(const Tensor& input) {
  auto scope = forward_scope();
  return pixel_shuffle(input, upscale_factor);
}
std::string PixelShuffle::describe() const { return detail::concat("PixelShuffle(upscale_factor=", upscale_factor, ")"); }

Tensor PixelUnshuffle::forward(const Tensor& input) {
  auto scope = forward_scope();
  return pixel_unshuffle(input, downscale_factor);
}
std::string PixelUnshuffle::describe() const { return detail::concat("PixelUnshuffle(downscale_factor=", downscale_factor, ")"); }

}  // namespace minidl::nn
