// The IDX file format (MNIST, Fashion-MNIST, EMNIST): a big-endian header (magic number = type code
// and rank, then one u32 per dim) followed by the values. Only unsigned-byte files (type 0x08) are
// read, raw or gzip-compressed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace minidl::data {

struct IdxData {
  std::vector<int64_t> dims;    // from the header
  std::vector<uint8_t> values;  // prod(dims) bytes, row-major
};

// Reads an IDX u8 file of rank `ndim` (magic 0x0800 + ndim: 2049 for labels, 2051 for images).
// The file may be raw or gzip (detected from its content). Throws minidl::Error naming `path` and
// the problem: missing or unreadable file, wrong magic number, zero dims, corrupt gzip data, fewer
// bytes than the header declares (truncated) or bytes beyond them.
IdxData read_idx_u8(const std::string& path, int ndim);

// Writes an IDX u8 file (raw) through a temporary file and a rename. For tests and converters.
void write_idx_u8(const std::string& path, const std::vector<int64_t>& dims, const uint8_t* values);

}  // namespace minidl::data
