// unfold (im2col) and fold (col2im), as torch.nn.functional's: sliding blocks of an image as columns,
// and the sum of columns back into an image. Both are composites of differentiable view and
// joining ops (strided slices; zero interleaving and padding), so they are exact (no products with
// zero, so an inf or NaN stays in its own block), each is the other's gradient, second order
// included, and every device with those ops runs them. Autocast None (on no list).
#include "ops/common.h"
#include "ops/nn_ops.h"

namespace minidl {

using namespace ops_detail;

namespace {
// The sliding-block geometry along one spatial dim.
struct Blocks {
  int64_t size, kernel, dilation, padding, stride, count;
};

int64_t block_count(int64_t size, int64_t kernel, int64_t dilation, int64_t padding, int64_t stride) {
  return (size + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1;
}

void check_window(const char* op, Size2 kernel, Size2 dilation, Size2 padding, Size2 stride) {
  MINIDL_CHECK(kernel[0] > 0 && kernel[1] > 0, op, "kernel size should be greater than zero, but got kernel_height: ",
               kernel[0], " kernel_width: ", kernel[1]);
  MINIDL_CHECK(dilation[0] > 0 && dilation[1] > 0, op, "dilation should be greater than zero, but got dilation_height: ",
               dilation[0], " dilation_width: ", dilation[1]);
  MINIDL_CHECK(padding[0] >= 0 && padding[1] >= 0, op, "padding should be non-negative, but got pad_height: ", padding[0],
               " pad_width: ", padding[1]);
  MINIDL_CHECK(stride[0] > 0 && stride[1] > 0, op, "stride should be greater than zero, but got stride_height: ",
               stride[0], " stride_width: ", stride[1]);
}

std::string pair_str(Size2 v) { return detail::concat("(", v[0], ", ", v[1], ")"); }

// v [..., n] placed at positions offset + i * stride of a zero dim of length `length` (the adjoint of
// x.slice(dim, offset, ..., stride)): zeros interleaved after each element, then padded.
Tensor place_strided(const Tensor& v, int64_t dim, int64_t offset, int64_t stride, int64_t length) {
  const int64_t n = v.size(dim);
  Tensor spread = v;
  if (stride > 1) {
    std::vector<Tensor> parts{v};
    for (int64_t s = 1; s < stride; ++s) parts.push_back(zeros_like(v));
    Shape shape = v.shape();
    shape[static_cast<size_t>(dim)] = n * stride;
    spread = stack(parts, dim + 1).reshape(shape).narrow(dim, 0, (n - 1) * stride + 1);
  }
  const int64_t after = length - offset - spread.size(dim);
  // pad() takes (before, after) pairs from the last dim backwards.
  std::vector<int64_t> pads(static_cast<size_t>(2 * (v.dim() - dim)), 0);
  pads[pads.size() - 2] = offset;
  pads[pads.size() - 1] = after;
  return pad(spread, pads);
}
}  // namespace

Tensor unfold(const Tensor& x_in, Size2 kernel, Size2 dilation, Size2 padding, Size2 stride) {
  const char* op = "unfold";
  check_defined(x_in, op, "input");
  MINIDL_CHECK(x_in.dim() == 3 || x_in.dim() == 4, op, "Input Error: Only 3D or 4D input Tensors are supported (got ",
               x_in.dim(), "D)");
  check_window(op, kernel, dilation, padding, stride);
  const bool batched = x_in.dim() == 4;
  const Tensor x = batched ? x_in : x_in.unsqueeze(0);
  const int64_t N = x.size(0), C = x.size(1);
  const int64_t OH = block_count(x.size(2), kernel[0], dilation[0], padding[0], stride[0]);
  const int64_t OW = block_count(x.size(3), kernel[1], dilation[1], padding[1], stride[1]);
  MINIDL_CHECK(OH >= 1 && OW >= 1, op, "Given input with spatial size (", x.size(2), ", ", x.size(3), "), kernel_size=",
               pair_str(kernel), ", dilation=", pair_str(dilation), ", padding=", pair_str(padding),
               ", calculated shape of the array of sliding blocks as (", OH, ", ", OW,
               "), but its components must be at least one.");
  const Tensor xp = (padding[0] || padding[1]) ? pad(x, {padding[1], padding[1], padding[0], padding[0]}) : x;
  // One strided slice per kernel position: [N, C, OH, OW] each, stacked after the channels.
  std::vector<Tensor> blocks;
  for (int64_t i = 0; i < kernel[0]; ++i)
    for (int64_t j = 0; j < kernel[1]; ++j) {
      const int64_t top = i * dilation[0], left = j * dilation[1];
      blocks.push_back(xp.slice(2, top, top + (OH - 1) * stride[0] + 1, stride[0])
                           .slice(3, left, left + (OW - 1) * stride[1] + 1, stride[1]));
    }
  Tensor cols = stack(blocks, 2).reshape({N, C * kernel[0] * kernel[1], OH * OW});
  return batched ? cols : cols.squeeze(0);
}

Tensor fold(const Tensor& x_in, Size2 output_size, Size2 kernel, Size2 dilation, Size2 padding, Size2 stride) {
  const char* op = "fold";
  check_defined(x_in, op, "input");
  MINIDL_CHECK(x_in.dim() == 2 || x_in.dim() == 3, op, "Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
               "batch size and non-zero dimensions for input, but got: ", shape_str(x_in.shape()));
  check_window(op, kernel, dilation, padding, stride);
  MINIDL_CHECK(output_size[0] > 0 && output_size[1] > 0, op, "output size should be greater than zero, but got "
               "output_height: ", output_size[0], " output_width: ", output_size[1]);
  const bool batched = x_in.dim() == 3;
  const Tensor x = batched ? x_in : x_in.unsqueeze(0);
  const int64_t K = kernel[0] * kernel[1];
  MINIDL_CHECK(x.size(1) % K == 0, op, "Expected size of input's dimension 1 to be divisible by the product of "
               "kernel_size, but got input.size(1)=", x.size(1), " and kernel_size=", pair_str(kernel), ".");
  const int64_t OH = block_count(output_size[0], kernel[0], dilation[0], padding[0], stride[0]);
  const int64_t OW = block_count(output_size[1], kernel[1], dilation[1], padding[1], stride[1]);
  MINIDL_CHECK(OH >= 1 && OW >= 1 && x.size(2) == OH * OW, op, "Given output_size=", pair_str(output_size),
               ", kernel_size=", pair_str(kernel), ", dilation=", pair_str(dilation), ", padding=", pair_str(padding),
               ", stride=", pair_str(stride), ", expected size of input's dimension 2 to match the calculated number of "
               "sliding blocks ", OH, " * ", OW, " = ", OH * OW, ", but got input.size(2)=", x.size(2), ".");
  const int64_t N = x.size(0), C = x.size(1) / K;
  const int64_t HP = output_size[0] + 2 * padding[0], WP = output_size[1] + 2 * padding[1];
  const Tensor blocks = x.reshape({N, C, K, OH, OW});
  // Each kernel position's block placed where unfold read it, summed over the positions.
  Tensor image;
  for (int64_t i = 0; i < kernel[0]; ++i)
    for (int64_t j = 0; j < kernel[1]; ++j) {
      const Tensor b = blocks.select(2, i * kernel[1] + j);
      const Tensor placed = place_strided(place_strided(b, 2, i * dilation[0], stride[0], HP), 3, j * dilation[1],
                                          stride[1], WP);
      image = image.defined() ? add(image, placed) : placed;
    }
  image = image.narrow(2, padding[0], output_size[0]).narrow(3, padding[1], output_size[1]);
  return batched ? image : image.squeeze(0);
}

}  // namespace minidl
