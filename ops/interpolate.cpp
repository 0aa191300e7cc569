// interpolate (torch.nn.functional.interpolate): nearest, nearest-exact, linear, bilinear,
// trilinear, bicubic and area resampling. Each spatial dim is resampled on its own, last dim first:
// nearest modes pick one source row per output row (index_select), linear modes blend two
// (w0 * x[i0] + w1 * x[i1]), which for bilinear gives PyTorch's h0 (w0 x00 + w1 x01) + h1 (w0 x10 +
// w1 x11) term for term (trilinear likewise), and bicubic blends four with the cubic convolution
// weights (A = -0.75), each row first and then the rows, as PyTorch's kernel. The source positions
// follow PyTorch's kernels (UpSample.h): nearest in float, linear and cubic in the compute type.
// Autocast policy: None (PyTorch's upsample ops are on no list).
#include <cmath>

#include "ops/common.h"

namespace minidl {

using namespace ops_detail;

namespace {
constexpr InterpolateMode kModes[] = {InterpolateMode::Nearest,  InterpolateMode::NearestExact, InterpolateMode::Linear,
                                      InterpolateMode::Bilinear, InterpolateMode::Trilinear,    InterpolateMode::Bicubic,
                                      InterpolateMode::Area};

bool is_linear(InterpolateMode m) {
  return m == InterpolateMode::Linear || m == InterpolateMode::Bilinear || m == InterpolateMode::Trilinear;
}
// The modes that take align_corners and compute in f32 for f16/bf16.
bool is_interpolating(InterpolateMode m) { return is_linear(m) || m == InterpolateMode::Bicubic; }

// One value per spatial dim from a list of one (every dim) or `spatial` values.
template <class T>
std::vector<T> per_dim(const std::vector<T>& given, size_t spatial, const char* what, const std::vector<int64_t>& in_sizes) {
  if (given.size() == 1) return std::vector<T>(spatial, given[0]);
  MINIDL_CHECK(given.size() == spatial, "interpolate", "Input and ", what,
               " must have the same number of spatial dimensions, but got input with spatial dimensions of ",
               shape_str(in_sizes), " and ", what, " of ", given.size(), " values");
  return given;
}

// PyTorch's compute_scales_value: 1 / the user's factor when one is passed on, else in / out.
template <class Acc>
Acc source_scale(std::optional<double> factor, int64_t in, int64_t out) {
  return factor && *factor > 0 ? static_cast<Acc>(1.0 / *factor) : static_cast<Acc>(in) / static_cast<Acc>(out);
}

// Source row of each output row for the nearest modes (scale in float, as PyTorch's nearest_idx).
std::vector<int64_t> nearest_rows(bool exact, int64_t in, int64_t out, std::optional<double> factor) {
  std::vector<int64_t> rows(out);
  const float scale = source_scale<float>(factor, in, out);
  for (int64_t i = 0; i < out; ++i) {
    const float src = exact ? (static_cast<float>(i) + 0.5f) * scale : static_cast<float>(i) * scale;
    rows[i] = std::min(static_cast<int64_t>(std::floor(src)), in - 1);
  }
  return rows;
}

// The source-to-output scale of the interpolating modes (PyTorch's area_pixel_compute_scale).
template <class Acc>
Acc interpolation_scale(int64_t in, int64_t out, bool align_corners, std::optional<double> factor) {
  if (!align_corners) return source_scale<Acc>(factor, in, out);
  return out > 1 ? static_cast<Acc>(in - 1) / static_cast<Acc>(out - 1) : Acc(0);
}

struct LinearTaps {
  std::vector<int64_t> i0, i1;
  std::vector<double> w0, w1;
};

// The two source rows and weights of each output row (PyTorch's compute_source_index_and_lambda),
// computed in Acc: float for f32/f16/bf16 inputs, double for f64.
template <class Acc>
LinearTaps linear_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> factor) {
  LinearTaps t;
  const Acc scale = interpolation_scale<Acc>(in, out, align_corners, factor);
  for (int64_t i = 0; i < out; ++i) {
    const Acc real = align_corners ? scale * static_cast<Acc>(i)
                                   : std::max(scale * (static_cast<Acc>(i) + Acc(0.5)) - Acc(0.5), Acc(0));
    const int64_t lo = static_cast<int64_t>(real), hi = lo + (lo < in - 1 ? 1 : 0);
    const Acc lambda = std::min(std::max(real - static_cast<Acc>(lo), Acc(0)), Acc(1));
    t.i0.push_back(lo);
    t.i1.push_back(hi);
    t.w0.push_back(static_cast<double>(Acc(1) - lambda));
    t.w1.push_back(static_cast<double>(lambda));
  }
  return t;
}

// The four source rows (clamped to the input) and weights of each output row for bicubic, as
// PyTorch's upsample_bicubic2d: source x = scale * (i + 0.5) - 0.5 (not clamped), or scale * i with
// align_corners; rows floor(x) - 1 .. floor(x) + 2; weights of the cubic convolution with A = -0.75
// at t = x - floor(x).
struct CubicTaps {
  std::vector<int64_t> rows[4];
  std::vector<double> w[4];
};
template <class Acc>
CubicTaps cubic_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> factor) {
  const Acc A = Acc(-0.75);
  auto near = [A](Acc x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };      // |x| <= 1
  auto far = [A](Acc x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };  // 1 < |x| < 2
  const Acc scale = interpolation_scale<Acc>(in, out, align_corners, factor);
  CubicTaps c;
  for (int64_t i = 0; i < out; ++i) {
    const Acc real = align_corners ? scale * static_cast<Acc>(i) : scale * (static_cast<Acc>(i) + Acc(0.5)) - Acc(0.5);
    const Acc floor_real = std::floor(real);
    const auto base = static_cast<int64_t>(floor_real);
    const Acc t = real - floor_real;
    const Acc w[4] = {far(t + 1), near(t), near(1 - t), far(2 - t)};
    for (int k = 0; k < 4; ++k) {
      c.rows[k].push_back(std::min(std::max(base - 1 + k, int64_t{0}), in - 1));
      c.w[k].push_back(static_cast<double>(w[k]));
    }
  }
  return c;
}

Tensor rows_tensor(const std::vector<int64_t>& rows, const Tensor& like) {
  return from_vector<int64_t>(rows, {static_cast<int64_t>(rows.size())}, TensorOptions(DType::I64).device(like.device()));
}

// Weights shaped to broadcast along `dim` of x: [out, 1, ..., 1].
Tensor weights_along(const std::vector<double>& w, const Tensor& x, int64_t dim) {
  Shape s(x.dim() - dim, 1);
  s[0] = static_cast<int64_t>(w.size());
  return from_vector<double>(w, s, TensorOptions(x.dtype()).device(x.device()));
}
}  // namespace

const char* interpolate_mode_name(InterpolateMode m) {
  switch (m) {
    case InterpolateMode::Nearest: return "nearest";
    case InterpolateMode::NearestExact: return "nearest-exact";
    case InterpolateMode::Linear: return "linear";
    case InterpolateMode::Bilinear: return "bilinear";
    case InterpolateMode::Trilinear: return "trilinear";
    case InterpolateMode::Bicubic: return "bicubic";
    case InterpolateMode::Area: return "area";
  }
  return "?";
}

InterpolateMode interpolate_mode_from_string(const std::string& name) {
  for (InterpolateMode m : kModes)
    if (name == interpolate_mode_name(m)) return m;
  MINIDL_FAIL("interpolate", "unsupported mode '", name,
              "' (expected nearest, nearest-exact, linear, bilinear, trilinear, bicubic or area)");
}

Tensor interpolate(const Tensor& x, const InterpolateOptions& o) {
  const char* op = "interpolate";
  check_defined(x, op, "input");
  check_floating(op, x);
  const InterpolateMode mode = o.mode_;
  MINIDL_CHECK(!o.size_.empty() || !o.scale_factor_.empty(), op, "either size or scale_factor should be defined");
  MINIDL_CHECK(o.size_.empty() || o.scale_factor_.empty(), op, "only one of size or scale_factor should be defined");
  MINIDL_CHECK(!o.align_corners_ || is_interpolating(mode), op,
               "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear");
  const int64_t want_dims = mode == InterpolateMode::Linear                                       ? 3
                            : mode == InterpolateMode::Bilinear || mode == InterpolateMode::Bicubic ? 4
                            : mode == InterpolateMode::Trilinear                                    ? 5
                                                                                                    : 0;
  if (want_dims)
    MINIDL_CHECK(x.dim() == want_dims, op, "Got ", x.dim(), "D input, but ", interpolate_mode_name(mode), " mode needs ",
                 want_dims, "D input");
  const int64_t max_dims = mode == InterpolateMode::Area ? 4 : 5;
  MINIDL_CHECK(x.dim() >= 3 && x.dim() <= max_dims, op, interpolate_mode_name(mode), " mode takes a [N, C, ...] input with 1 to ",
               max_dims - 2, " spatial dims, got ", x.meta_str());
  const size_t spatial = static_cast<size_t>(x.dim() - 2);
  const std::vector<int64_t> in_sizes(x.shape().begin() + 2, x.shape().end());
  std::vector<int64_t> out_sizes;
  std::vector<std::optional<double>> factors(spatial);
  if (!o.size_.empty()) {
    out_sizes = per_dim(o.size_, spatial, "output size", in_sizes);
  } else {
    const std::vector<double> f = per_dim(o.scale_factor_, spatial, "scale_factor", in_sizes);
    for (size_t d = 0; d < spatial; ++d) {
      out_sizes.push_back(static_cast<int64_t>(std::floor(static_cast<double>(in_sizes[d]) * f[d])));
      if (!o.recompute_scale_factor_) factors[d] = f[d];
    }
  }
  for (size_t d = 0; d < spatial; ++d)
    MINIDL_CHECK(in_sizes[d] > 0 && out_sizes[d] > 0, op, "Input and output sizes should be greater than 0, but got input ",
                 shape_str(in_sizes), " and output ", shape_str(out_sizes));

  if (mode == InterpolateMode::Area) {  // adaptive average pooling, as PyTorch's
    if (spatial == 2) return adaptive_avg_pool2d(x, {out_sizes[0], out_sizes[1]});
    return adaptive_avg_pool2d(x.unsqueeze(2), {1, out_sizes[0]}).squeeze(2);
  }
  const bool low = x.dtype() == DType::F16 || x.dtype() == DType::BF16;
  Tensor y = is_interpolating(mode) && low ? cast(x, DType::F32) : x;
  const bool same_size = in_sizes == out_sizes;
  for (int64_t d = static_cast<int64_t>(spatial) - 1; d >= 0; --d) {
    const int64_t dim = 2 + d, in = in_sizes[d], out = out_sizes[d];
    // PyTorch copies a dim whose size does not change (bicubic only when no dim changes: its kernel
    // blends every dim then).
    if (in == out && (mode != InterpolateMode::Bicubic || same_size)) continue;
    if (mode == InterpolateMode::Bicubic) {
      const bool align = o.align_corners_.value_or(false);
      const CubicTaps c = y.dtype() == DType::F64 ? cubic_taps<double>(in, out, align, factors[d])
                                                  : cubic_taps<float>(in, out, align, factors[d]);
      Tensor sum_of_taps;
      for (int k = 0; k < 4; ++k) {
        Tensor term = mul(index_select(y, dim, rows_tensor(c.rows[k], y)), weights_along(c.w[k], y, dim));
        sum_of_taps = k == 0 ? term : add(sum_of_taps, term);
      }
      y = sum_of_taps;
      continue;
    }
    if (!is_linear(mode)) {
      y = index_select(y, dim, rows_tensor(nearest_rows(mode == InterpolateMode::NearestExact, in, out, factors[d]), y));
      continue;
    }
    const bool align = o.align_corners_.value_or(false);
    const LinearTaps t = y.dtype() == DType::F64 ? linear_taps<double>(in, out, align, factors[d])
                                                 : linear_taps<float>(in, out, align, factors[d]);
    y = add(mul(index_select(y, dim, rows_tensor(t.i0, y)), weights_along(t.w0, y, dim)),
            mul(index_select(y, dim, rows_tensor(t.i1, y)), weights_along(t.w1, y, dim)));
  }
  if (y.dtype() != x.dtype()) y = cast(y, x.dtype());
  // A new tensor even when no dim changed size, as PyTorch's.
  return y.impl()->storage == x.impl()->storage ? y.clone() : y;
}

}  // namespace minidl
