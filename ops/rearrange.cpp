// Rearranging elements: flip (reversed along dims), repeat (tiled), roll (shifted with wrap-around)
// pixel_shuffle / pixel_unshuffle (channels to and from space) and channel_shuffle (channels
// interleaved across groups), as compositions of index_select,
// cat, reshape, permute and expand, so they run on every backend and differentiate to any order
// through those ops' backward passes. Each returns a new tensor, as PyTorch's. Autocast: none.
#include <set>

#include "ops/common.h"

namespace minidl {

using namespace ops_detail;

Tensor flip(const Tensor& x, const std::vector<int64_t>& dims) {
  const char* name = "flip";
  check_defined(x, name, "self");
  std::set<int64_t> seen;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, x.dim(), name);
    MINIDL_CHECK(seen.insert(w).second, name, "dim ", w, " appears multiple times in the list of dims");
  }
  if (x.dim() == 0) seen.clear();  // a 0-dim tensor has nothing to reverse (dim 0 and -1 are accepted)
  Tensor out = x;
  for (int64_t d : seen) {
    const int64_t n = x.shape()[d];
    const Tensor reversed = arange(static_cast<double>(n - 1), -1.0, -1.0, TensorOptions(DType::I64).device(x.device()));
    out = index_select(out, d, reversed);
  }
  return out.is_same(x) ? x.clone() : out;
}

Tensor repeat(const Tensor& x, const std::vector<int64_t>& repeats) {
  const char* name = "repeat";
  check_defined(x, name, "self");
  const int64_t n = static_cast<int64_t>(repeats.size());
  MINIDL_CHECK(n >= x.dim(), name, "the number of repeats (", n, ") can not be smaller than the number of dimensions of ",
               x.meta_str());
  for (int64_t r : repeats) MINIDL_CHECK(r >= 0, name, "repeats must be non-negative, got ", r);
  // x as [1, s0, 1, s1, ...] (leading dims of size 1 where repeats has more), expanded to
  // [r0, s0, r1, s1, ...], then merged pairwise.
  Shape interleaved, expanded, merged;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t s = i < n - x.dim() ? 1 : x.shape()[i - (n - x.dim())];
    interleaved.insert(interleaved.end(), {1, s});
    expanded.insert(expanded.end(), {repeats[i], s});
    merged.push_back(repeats[i] * s);
  }
  // clone: a copy even where the expand is no wider than x (all repeats 1), as PyTorch's.
  return x.reshape(interleaved).expand(expanded).clone(MemoryFormat::Contiguous).reshape(merged);
}


Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims) {
  ops_detail::check_defined(x, "roll", "self");
  MINIDL_CHECK(!shifts.empty(), "roll", "`shifts` required");
  if (dims.empty()) {
    // Rolls the flattened tensor, then restores the shape.
    MINIDL_CHECK(shifts.size() == 1, "roll", "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:0");
    return roll(x.reshape({-1}), shifts, {0}).reshape(x.shape());
  }
  MINIDL_CHECK(shifts.size() == dims.size(), "roll", "shifts and dimensions must align. shifts: ", shifts.size(),
               ", dims:", dims.size());
  MINIDL_CHECK(x.dim() > 0, "roll", "a 0-dim tensor has no dim ", dims[0], " to roll along (pass no dims to roll it)");
  Tensor out = x;
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t d = wrap_dim(dims[k], x.dim(), "roll");
    const int64_t n = out.size(d);
    if (n == 0) continue;
    const int64_t s = ((shifts[k] % n) + n) % n;  // elements move s places toward the end
    if (s != 0) out = cat({out.narrow(d, n - s, s), out.narrow(d, 0, n - s)}, d);
  }
  return out.is_same(x) ? x.clone() : out;
}


Tensor pixel_shuffle(const Tensor& x, int64_t r) {
  ops_detail::check_defined(x, "pixel_shuffle", "self");
  MINIDL_CHECK(x.dim() >= 3, "pixel_shuffle", "pixel_shuffle expects input to have at least 3 dimensions, but got input with ",
               x.dim(), " dimension(s)");
  MINIDL_CHECK(r > 0, "pixel_shuffle", "pixel_shuffle expects a positive upscale_factor, but got ", r);
  const int64_t c = x.size(-3), h = x.size(-2), w = x.size(-1);
  MINIDL_CHECK(c % (r * r) == 0, "pixel_shuffle",
               "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but "
               "input.size(-3)=", c, " is not divisible by ", r * r);
  // [*, C r r, H, W] -> [*, C, r, r, H, W] -> [*, C, H, r, W, r] -> [*, C, H r, W r]
  const Shape lead(x.shape().begin(), x.shape().end() - 3);
  const int64_t k = static_cast<int64_t>(lead.size());
  Shape split = lead;
  split.insert(split.end(), {c / (r * r), r, r, h, w});
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < k; ++d) perm.push_back(d);
  perm.insert(perm.end(), {k, k + 3, k + 1, k + 4, k + 2});
  Shape out = lead;
  out.insert(out.end(), {c / (r * r), h * r, w * r});
  return x.reshape(split).permute(perm).reshape(out);
}

Tensor pixel_unshuffle(const Tensor& x, int64_t r) {
  ops_detail::check_defined(x, "pixel_unshuffle", "self");
  MINIDL_CHECK(x.dim() >= 3, "pixel_unshuffle", "pixel_unshuffle expects input to have at least 3 dimensions, but got input with ",
               x.dim(), " dimension(s)");
  MINIDL_CHECK(r > 0, "pixel_unshuffle", "pixel_unshuffle expects a positive downscale_factor, but got ", r);
  const int64_t c = x.size(-3), h = x.size(-2), w = x.size(-1);
  MINIDL_CHECK(h % r == 0, "pixel_unshuffle", "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=",
               h, " is not divisible by ", r);
  MINIDL_CHECK(w % r == 0, "pixel_unshuffle", "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=",
               w, " is not divisible by ", r);
  // [*, C, H r, W r] -> [*, C, H, r, W, r] -> [*, C, r, r, H, W] -> [*, C r r, H, W]
  const Shape lead(x.shape().begin(), x.shape().end() - 3);
  const int64_t k = static_cast<int64_t>(lead.size());
  Shape split = lead;
  split.insert(split.end(), {c, h / r, r, w / r, r});
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < k; ++d) perm.push_back(d);
  perm.insert(perm.end(), {k, k + 2, k + 4, k + 1, k + 3});
  Shape out = lead;
  out.insert(out.end(), {c * r * r, h / r, w / r});
  return x.reshape(split).permute(perm).reshape(out);
}

// torch.nn.functional.channel_shuffle: [N, C, *] viewed as [N, g, C/g, *], the two group dims
// swapped, back to [N, C, *]: channel j of group i moves to position j * g + i.
Tensor channel_shuffle(const Tensor& x, int64_t groups) {
  const char* name = "channel_shuffle";
  check_defined(x, name, "input");
  MINIDL_CHECK(x.dim() > 2, name, "channel_shuffle expects input with > 2 dims, but got input with sizes ",
               shape_str(x.shape()));
  MINIDL_CHECK(groups > 0, name, "Number of groups to divide channels in must be positive. Value of groups:", groups);
  const int64_t c = x.size(1);
  MINIDL_CHECK(c % groups == 0, name, "Number of channels must be divisible by groups. Got ", c, " channels and ", groups,
               " groups.");
  Shape split{x.size(0), groups, c / groups};
  for (int64_t d = 2; d < x.dim(); ++d) split.push_back(x.size(d));
  return x.reshape(split).transpose(1, 2).reshape(x.shape());
}

}  // namespace minidl
