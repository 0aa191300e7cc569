// Shapes and strides: broadcasting, contiguity, printing.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace minidl {

using Shape = std::vector<int64_t>;

// The element count of shape. Throws naming op when the product of the dims, zero dims counted as
// 1 (so that the strides of an empty tensor fit as well), overflows int64.
int64_t numel_of(const Shape& shape, const char* op = "numel");
// The same count, or nullopt where numel_of would throw.
std::optional<int64_t> checked_numel(const Shape& shape);
Shape contiguous_strides(const Shape& shape);

// How a 4-D [N, C, H, W] tensor's elements lie in memory (torch.memory_format): Contiguous is
// NCHW order; ChannelsLast is NHWC order (each pixel's channels side by side), the layout oneDNN's
// convolutions read and write without a reorder. Logical indexing is the same for both.
enum class MemoryFormat : uint8_t { Contiguous, ChannelsLast };
const char* memory_format_name(MemoryFormat f);
// The strides of a dense tensor of `shape` in format f (ChannelsLast: 4-D shapes only).
Shape strides_for(const Shape& shape, MemoryFormat f);
// Whether (shape, strides) is dense in format f; size-1 dims may have any stride, as for
// is_contiguous. A tensor can be both (C == 1, or H == W == 1).
bool is_dense_in(const Shape& shape, const Shape& strides, MemoryFormat f);
std::string shape_str(const Shape& shape);  // "[2, 3]"
// PyTorch broadcasting: align trailing dims; each pair must be equal or one of them 1.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Whether `shape` broadcasts to exactly `target` (PyTorch's is_expandable_to).
bool expandable_to(const Shape& shape, const Shape& target);
// Wraps a possibly negative dim into [0, ndim); throws naming op when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace minidl
