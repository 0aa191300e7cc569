// Fuzz target: the IDX reader (data/idx.h) behind a valid gzip stream: the input is compressed
// first, so the mutations reach the IDX checks through zlib's decoder (fuzz_idx mutates the gzip
// bytes themselves).
#include <zlib.h>

#include "data/idx.h"
#include "framework/error.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = (minidl::fuzz::scratch_dir() / "input.idx.gz").string();
  gzFile gz = gzopen(path.c_str(), "wb");
  if (!gz) __builtin_trap();
  if (size > 0 && gzwrite(gz, data, static_cast<unsigned>(size)) != static_cast<int>(size)) __builtin_trap();
  if (gzclose(gz) != Z_OK) __builtin_trap();
  for (int ndim : {1, 3}) {
    try {
      const minidl::data::IdxData d = minidl::data::read_idx_u8(path, ndim);
      uint64_t n = 1;
      for (int64_t dim : d.dims) n *= static_cast<uint64_t>(dim);
      if (d.values.size() != n) __builtin_trap();
    } catch (const minidl::Error&) {
    }
  }
  return 0;
}
