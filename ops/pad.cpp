// pad (torch.nn.functional.pad): constant, reflect, replicate and circular padding as a composite of
// narrow (crops), cat (the pieces) and index_select (reflect's mirrored rows), so every gradient,
// second order included, comes from those ops. Autocast policy: PyTorch's CPU fp32 list has
// reflection_pad1d/2d and replication_pad1d/2d/3d (so those run in f32 under CPU autocast); constant,
// circular and 3-dim reflect padding are on no list, and neither is any pad on CUDA.
#include <optional>

#include "ops/common.h"

namespace minidl {

using namespace ops_detail;

namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kReflectionPad1d{"reflection_pad1d", P::FP32, P::None};
const amp::OpPolicy kReflectionPad2d{"reflection_pad2d", P::FP32, P::None};
const amp::OpPolicy kReplicationPad1d{"replication_pad1d", P::FP32, P::None};
const amp::OpPolicy kReplicationPad2d{"replication_pad2d", P::FP32, P::None};
const amp::OpPolicy kReplicationPad3d{"replication_pad3d", P::FP32, P::None};

// The row PyTorch's kernel of this mode and number of padded dims has, if any.
const amp::OpPolicy* autocast_row(PadMode mode, int64_t dims) {
  if (mode == PadMode::Reflect) return dims == 1 ? &kReflectionPad1d : dims == 2 ? &kReflectionPad2d : nullptr;
  if (mode == PadMode::Replicate)
    return dims == 1 ? &kReplicationPad1d : dims == 2 ? &kReplicationPad2d : dims == 3 ? &kReplicationPad3d : nullptr;
  return nullptr;
}

const char* mode_name(PadMode m) {
  switch (m) {
    case PadMode::Constant: return "constant";
    case PadMode::Reflect: return "reflect";
    case PadMode::Replicate: return "replicate";
    case PadMode::Circular: return "circular";
  }
  return "?";
}

// Row `at` of x along dim, repeated count times (a broadcast view; cat copies it).
Tensor edge(const Tensor& x, int64_t dim, int64_t at, int64_t count) {
  Shape s = x.shape();
  s[dim] = count;
  return x.narrow(dim, at, 1).expand(s);
}

// x padded along dim by before/after (both >= 0) in mode; constant pads with value.
Tensor pad_dim(const Tensor& x, int64_t dim, int64_t before, int64_t after, PadMode mode, double value) {
  const int64_t n = x.size(dim);
  auto mirrored = [&](int64_t first, int64_t count) {  // x[first], x[first - 1], ... (count rows)
    Tensor index = arange(static_cast<double>(first), static_cast<double>(first - count), -1.0,
                          TensorOptions(DType::I64).device(x.device()));
    return index_select(x, dim, index);
  };
  auto filled = [&](int64_t count) {
    Shape s = x.shape();
    s[dim] = count;
    return full(s, value, TensorOptions(x.dtype()).device(x.device()));
  };
  // The piece before x (at_start) or after it, of count rows.
  auto piece = [&](bool at_start, int64_t count) {
    switch (mode) {
      case PadMode::Constant: return filled(count);
      case PadMode::Reflect: return at_start ? mirrored(count, count) : mirrored(n - 2, count);
      case PadMode::Replicate: return edge(x, dim, at_start ? 0 : n - 1, count);
      case PadMode::Circular: return at_start ? x.narrow(dim, n - count, count) : x.narrow(dim, 0, count);
    }
    MINIDL_FAIL("pad", "unknown padding mode");
  };
  std::vector<Tensor> pieces;
  if (before > 0) pieces.push_back(piece(true, before));
  pieces.push_back(x);
  if (after > 0) pieces.push_back(piece(false, after));
  return pieces.size() == 1 ? x : cat(pieces, dim);
}
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::pad_policies() {
  return {&kReflectionPad1d, &kReflectionPad2d, &kReplicationPad1d, &kReplicationPad2d, &kReplicationPad3d};
}

PadMode pad_mode_from_string(const std::string& name) {
  for (PadMode m : {PadMode::Constant, PadMode::Reflect, PadMode::Replicate, PadMode::Circular})
    if (name == mode_name(m)) return m;
  MINIDL_FAIL("pad", "unrecognised padding mode '", name, "' (expected constant, reflect, replicate or circular)");
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, PadMode mode, double value) {
  const char* op = "pad";
  check_defined(x, op, "input");
  const int64_t len = static_cast<int64_t>(pads.size());
  MINIDL_CHECK(len % 2 == 0, op, "padding length must be divisible by 2, got ", len);
  MINIDL_CHECK(len / 2 <= x.dim(), op, "padding length too large: ", len, " values pad ", len / 2, " dims of ",
               x.meta_str());
  if (mode != PadMode::Constant) {
    const int64_t k = len / 2;
    MINIDL_CHECK(value == 0.0, op, "padding mode \"", mode_name(mode), "\" doesn't take a value argument");
    MINIDL_CHECK(k >= 1 && k <= 3 && (x.dim() == k + 1 || x.dim() == k + 2), op, mode_name(mode), " padding of ", k,
                 " dims needs a ", k + 1, "-D (unbatched) or ", k + 2, "-D input, got ", x.meta_str());
  }
  std::optional<amp::AutocastInputs> in;
  if (const amp::OpPolicy* row = autocast_row(mode, len / 2)) in.emplace(*row, autograd::TensorList{x});
  Tensor out = in ? (*in)[0] : x;
  // Crops first (negative pads), so that what pads afterwards comes from the cropped tensor.
  for (int64_t i = 0; i < len / 2; ++i) {
    const int64_t dim = x.dim() - 1 - i, before = pads[2 * i], after = pads[2 * i + 1];
    const int64_t start = std::max<int64_t>(0, -before);
    const int64_t kept = out.size(dim) - start - std::max<int64_t>(0, -after);
    MINIDL_CHECK(kept >= 0, op, "padding (",
                 before, ", ", after, ") of dim ", dim, " of ", x.meta_str(), " leaves a negative size");
    if (start > 0 || after < 0) out = out.narrow(dim, start, kept);
  }
  for (int64_t i = 0; i < len / 2; ++i) {
    const int64_t dim = x.dim() - 1 - i;
    const int64_t before = std::max<int64_t>(0, pads[2 * i]), after = std::max<int64_t>(0, pads[2 * i + 1]);
    if (before == 0 && after == 0) continue;
    const int64_t n = out.size(dim);
    if (mode == PadMode::Reflect)
      MINIDL_CHECK(before < n && after < n, op, "reflect padding (", pads[2 * i], ", ", pads[2 * i + 1],
                   ") must be smaller than dim ", dim, " of size ", n, " (input ", x.meta_str(), ")");
    if (mode == PadMode::Replicate)
      MINIDL_CHECK(n > 0, op, "replicate padding of dim ", dim, " needs a non-empty dim (input ", x.meta_str(), ")");
    if (mode == PadMode::Circular)
      MINIDL_CHECK(before <= n && after <= n, op, "circular padding (", pads[2 * i], ", ", pads[2 * i + 1],
                   ") wraps around dim ", dim, " of size ", n, " more than once (input ", x.meta_str(), ")");
    out = pad_dim(out, dim, before, after, mode, value);
  }
  // A new tensor even when nothing padded (only crops, or all zeros), as PyTorch's.
  const bool shares_x = out.impl()->storage == x.impl()->storage;
  return shares_x ? out.clone() : out;
}

}  // namespace minidl
