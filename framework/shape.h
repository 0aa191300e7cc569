// Shapes and strides: broadcasting, contiguity, printing.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace minidl {

using Shape = std::vector<int64_t>;

int64_t numel_of(const Shape& shape);
Shape contiguous_strides(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[2, 3]"
// PyTorch broadcasting: align trailing dims; each pair must be equal or one of them 1.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Wraps a possibly negative dim into [0, ndim); throws naming op when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace minidl
