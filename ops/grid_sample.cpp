// torch.nn.functional.affine_grid and grid_sample (2-D: spatial transformer networks). affine_grid
// maps the output's normalized pixel centres (x, y, 1) through theta [N, 2, 3]; grid_sample reads
// the input at grid [N, Ho, Wo, 2] positions ((x, y) in [-1, 1] across the input's width and
// height), bilinearly or from the nearest pixel, with zeros, border or reflection padding, using
// PyTorch's unnormalization, clipping and reflection formulas. Compositions of floor, gather, where
// and arithmetic, so the gradients (to the input through gather's scatter, to the grid through the
// bilinear weights and the padding's clamps and reflections) come from those ops, to any order.
// Autocast: grid_sampler is on PyTorch's fp32 lists (CPU and CUDA); affine_grid on none.
#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using P = amp::CastPolicy;

namespace {
const amp::OpPolicy kGridSample{"grid_sample", P::FP32, P::FP32};

// PyTorch's grid_sampler_unnormalize: -1 and 1 are the corner pixels' centres (align_corners) or
// their outer edges.
Tensor unnormalize(const Tensor& coord, int64_t size, bool align_corners) {
  const double n = static_cast<double>(size);
  return align_corners ? mul(add(coord, 1.0), (n - 1.0) / 2.0) : div(sub(mul(add(coord, 1.0), n), 1.0), 2.0);
}

// PyTorch's reflect_coordinates: coord reflected into [twice_low / 2, twice_high / 2].
Tensor reflect(const Tensor& coord, double twice_low, double twice_high) {
  if (twice_low == twice_high) return mul(coord, 0.0);
  const double low = twice_low / 2.0, span = (twice_high - twice_low) / 2.0;
  const Tensor distance = abs(sub(coord, low));
  const Tensor extra = fmod(distance, span);
  const Tensor even = eq(remainder(floor(div(distance, span)), 2.0), 0.0);
  return where(even, add(extra, low), add(neg(extra), span + low));
}

// The source coordinate of one axis after padding's adjustments (PyTorch's compute_coordinates).
Tensor source_coordinate(const Tensor& coord, int64_t size, bool align_corners, GridPadding padding) {
  Tensor c = unnormalize(coord, size, align_corners);
  const double last = static_cast<double>(size - 1);
  if (padding == GridPadding::Border) return clamp(c, 0.0, last);
  if (padding == GridPadding::Reflection) {
    c = align_corners ? reflect(c, 0.0, 2.0 * last) : reflect(c, -1.0, 2.0 * static_cast<double>(size) - 1.0);
    return clamp(c, 0.0, last);
  }
  return c;
}

// x [N, C, H*W] read at integer positions (ix, iy) [N, 1, P]: values [N, C, P], 0 outside the input.
Tensor read_pixels(const Tensor& flat, const Tensor& ix, const Tensor& iy, int64_t h, int64_t w) {
  const Tensor inside = logical_and(logical_and(ge(ix, 0.0), le(ix, static_cast<double>(w - 1))),
                                    logical_and(ge(iy, 0.0), le(iy, static_cast<double>(h - 1))));
  const Tensor linear = cast(add(mul(clamp(iy, 0.0, static_cast<double>(h - 1)), static_cast<double>(w)),
                                 clamp(ix, 0.0, static_cast<double>(w - 1))),
                             DType::I64);
  const Tensor values = gather(flat, 2, linear.expand({flat.size(0), flat.size(1), linear.size(2)}));
  return where(inside, values, zeros({}, TensorOptions(flat.dtype()).device(flat.device())));
}
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::grid_sample_policies() { return {&kGridSample}; }

Tensor affine_grid(const Tensor& theta, const Shape& size, bool align_corners) {
  const char* op = "affine_grid";
  check_defined(theta, op, "theta");
  check_floating(op, theta);
  MINIDL_CHECK(size.size() == 4, op, "affine_grid only supports 4D sizes here (2-D images), got size ", shape_str(size));
  MINIDL_CHECK(theta.dim() == 3 && theta.size(0) == size[0] && theta.size(1) == 2 && theta.size(2) == 3, op,
               "Expected a batch of 2D affine matrices of shape Nx2x3 for size ", shape_str(size), ". Got ",
               shape_str(theta.shape()), ".");
  const int64_t n = size[0], h = size[2], w = size[3];
  MINIDL_CHECK(h > 0 && w > 0, op, "Expected non-zero, positive output size. Got ", shape_str(size));
  const TensorOptions options = TensorOptions(theta.dtype()).device(theta.device());
  // Normalized centres along one axis: -1 .. 1 (align_corners) or pulled in by (size - 1) / size.
  auto axis = [&](int64_t steps) {
    const Tensor t = linspace(-1.0, 1.0, steps, options);
    return steps > 1 && !align_corners ? mul(t, static_cast<double>(steps - 1) / static_cast<double>(steps)) : t;
  };
  const Tensor xs = axis(w).view({1, w, 1}).expand({h, w, 1});
  const Tensor ys = axis(h).view({h, 1, 1}).expand({h, w, 1});
  const Tensor base = cat({xs, ys, ones({h, w, 1}, options)}, 2).reshape({1, h * w, 3});
  return matmul(base.expand({n, h * w, 3}), theta.transpose(1, 2)).view({n, h, w, 2});
}

Tensor grid_sample(const Tensor& x_arg, const Tensor& grid_arg, GridSampleMode mode, GridPadding padding, bool align_corners) {
  const char* op = "grid_sample";
  check_defined(x_arg, op, "input");
  check_defined(grid_arg, op, "grid");
  amp::AutocastInputs in(kGridSample, {x_arg, grid_arg});
  const Tensor &x = in[0], &grid = in[1];
  check_floating(op, x);
  check_floating(op, grid);
  check_same_device(op, x, grid);
  MINIDL_CHECK(x.dtype() == grid.dtype(), op, "expected input and grid to have the same dtype, but input has ",
               dtype_name(x.dtype()), " and grid has ", dtype_name(grid.dtype()));
  MINIDL_CHECK(x.dim() == 4 && grid.dim() == 4, op, "grid_sample here supports 4-D input and grid (2-D images), got input ",
               x.meta_str(), " and grid ", grid.meta_str());
  MINIDL_CHECK(grid.size(0) == x.size(0), op, "expected grid and input to have same batch size, but got input with sizes ",
               shape_str(x.shape()), " and grid with sizes ", shape_str(grid.shape()));
  MINIDL_CHECK(grid.size(3) == 2, op, "expected grid to have size 2 in last dimension, but got grid with sizes ",
               shape_str(grid.shape()));
  MINIDL_CHECK(x.size(2) > 0 && x.size(3) > 0, op, "expected input to have non-empty spatial dimensions, but input has sizes ",
               shape_str(x.shape()));
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3), ho = grid.size(1), wo = grid.size(2);
  const Tensor flat = x.reshape({n, c, h * w});
  const Tensor gx = grid.narrow(3, 0, 1).reshape({n, 1, ho * wo}), gy = grid.narrow(3, 1, 1).reshape({n, 1, ho * wo});
  const Tensor sx = source_coordinate(gx, w, align_corners, padding);
  const Tensor sy = source_coordinate(gy, h, align_corners, padding);
  Tensor out;
  if (mode == GridSampleMode::Nearest) {
    // nearbyint, as PyTorch: halves round to even. The grid's gradient is 0, as PyTorch's (defined,
    // not absent: the output is connected to the grid by a node that passes it zeros).
    const Tensor read = read_pixels(flat, round(sx).detach(), round(sy).detach(), h, w);
    out = read.detach();
    const Shape grid_shape = grid.shape();
    const TensorOptions grid_options = TensorOptions(grid.dtype()).device(grid.device());
    autograd::record("GridSampleNearestBackward", {read, grid}, {out}, {},
                     [grid_shape, grid_options](const autograd::TensorList& g, const autograd::TensorList&) {
                       return autograd::TensorList{g[0], zeros(grid_shape, grid_options)};
                     });
  } else {
    const Tensor x0 = floor(sx).detach(), y0 = floor(sy).detach();
    const Tensor x1 = add(x0, 1.0), y1 = add(y0, 1.0);
    // The weight of each corner is the area of the opposite sub-rectangle, as PyTorch's.
    const Tensor wx1 = sub(sx, x0), wx0 = sub(x1, sx), wy1 = sub(sy, y0), wy0 = sub(y1, sy);
    out = add(add(mul(read_pixels(flat, x0, y0, h, w), mul(wx0, wy0)), mul(read_pixels(flat, x1, y0, h, w), mul(wx1, wy0))),
              add(mul(read_pixels(flat, x0, y1, h, w), mul(wx0, wy1)), mul(read_pixels(flat, x1, y1, h, w), mul(wx1, wy1))));
  }
  return out.view({n, c, ho, wo});
}

}  // namespace minidl
