// IDX reading (zlib's gzread reads raw and gzip files alike) with a check of every header field and
// of the data length against the header; the data is read in chunks, so a header that claims more
// than the file holds costs no big allocation.
#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "framework/error.h"
#include "framework/shape.h"

namespace minidl::data {

namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzPtr = std::unique_ptr<gzFile_s, GzCloser>;

// Reads up to n bytes; returns how many were read; throws on a zlib error.
size_t read_some(gzFile f, uint8_t* dst, size_t n, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, size_t{1} << 24));
    const int got = gzread(f, dst + done, chunk);
    if (got < 0) {
      int errnum = 0;
      const char* msg = gzerror(f, &errnum);
      MINIDL_CHECK(errnum != Z_BUF_ERROR, "IDX", path, ": file is truncated: the gzip stream ends early");
      MINIDL_FAIL("IDX", path, ": corrupt or unreadable data (zlib: ", msg ? msg : "unknown error", ")");
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

IdxData read_idx_u8(const std::string& path, int ndim) {
  namespace fs = std::filesystem;
  std::error_code ec;
  MINIDL_CHECK(fs::exists(path, ec), "IDX", path, ": file not found");
  MINIDL_CHECK(fs::is_regular_file(path, ec), "IDX", path, ": not a regular file");
  GzPtr file(gzopen(path.c_str(), "rb"));
  MINIDL_CHECK(file != nullptr, "IDX", path, ": cannot open (", std::strerror(errno), ")");
  gzbuffer(file.get(), 1 << 18);

  const uint32_t expected_magic = 0x0800u + static_cast<uint32_t>(ndim);
  uint8_t header[4 + 4 * 4];
  const size_t header_bytes = 4 + 4 * static_cast<size_t>(ndim);
  size_t got = read_some(file.get(), header, 4, path);
  MINIDL_CHECK(got == 4, "IDX", path, ": file is truncated: ", got, " bytes, too short for the IDX header");
  const uint32_t magic = big_endian_u32(header);
  MINIDL_CHECK(magic == expected_magic, "IDX", path, ": bad magic number ", magic, " (expected ",
               expected_magic, ", an IDX file of unsigned bytes with ", ndim, " dims",
               ndim == 1 ? ": a label file" : ndim == 3 ? ": an image file" : "", ")");
  got = read_some(file.get(), header + 4, header_bytes - 4, path);
  MINIDL_CHECK(got == header_bytes - 4, "IDX", path, ": file is truncated inside the header (",
               4 + got, " of ", header_bytes, " bytes)");

  IdxData out;
  uint64_t total = 1;
  for (int d = 0; d < ndim; ++d) {
    const uint32_t n = big_endian_u32(header + 4 + 4 * d);
    MINIDL_CHECK(n > 0 || d == 0, "IDX", path, ": dim ", d, " is 0 in the header");
    out.dims.push_back(n);
    total *= n;
    MINIDL_CHECK(total < (uint64_t{1} << 40), "IDX", path, ": header declares an implausible size");
  }

  // Read in chunks that double from 64 KiB (up to 64 MiB), so that a lying header cannot make us
  // allocate more than about twice what the file holds (a fixed 64 MiB first chunk made every small
  // corrupt file cost a 64 MiB allocation).
  size_t chunk = size_t{64} << 10;
  size_t have = 0;
  while (have < total) {
    const size_t want = std::min<size_t>(total - have, chunk);
    chunk = std::min<size_t>(chunk * 2, size_t{64} << 20);
    out.values.resize(have + want);
    const size_t n = read_some(file.get(), out.values.data() + have, want, path);
    have += n;
    if (n < want) break;
  }
  MINIDL_CHECK(have == total, "IDX", path, ": file is truncated: the header declares ", total,
               " data bytes (dims ", shape_str(out.dims), ") but only ", have, " follow");
  uint8_t extra[4096];
  size_t trailing = 0;
  while ((got = read_some(file.get(), extra, sizeof(extra), path)) > 0) trailing += got;
  MINIDL_CHECK(trailing == 0, "IDX", path, ": file size does not match the header: ", trailing,
               " bytes follow the ", total, " data bytes it declares");
  return out;
}

void write_idx_u8(const std::string& path, const std::vector<int64_t>& dims, const uint8_t* values) {
  std::vector<uint8_t> header;
  auto put = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) header.push_back(static_cast<uint8_t>(v >> s));
  };
  put(0x0800u + static_cast<uint32_t>(dims.size()));
  size_t total = 1;
  for (int64_t d : dims) {
    put(static_cast<uint32_t>(d));
    total *= static_cast<size_t>(d);
  }
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  MINIDL_CHECK(f != nullptr, "IDX", tmp, ": cannot create (", std::strerror(errno), ")");
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            (total == 0 || std::fwrite(values, 1, total, f) == total);
  ok = (std::fclose(f) == 0) && ok;
  MINIDL_CHECK(ok, "IDX", tmp, ": write failed");
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  MINIDL_CHECK(!ec, "IDX", path, ": cannot rename from ", tmp, " (", ec.message(), ")");
}

}  // namespace minidl::data
