// Fuzz target: the IDX reader (data/idx.h) on arbitrary file contents, raw or gzip (gzread detects
// a gzip stream by its magic bytes, so seeds of both kinds reach both paths). Every rank the MNIST
// loaders use is tried.
#include "data/idx.h"
#include "framework/error.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = minidl::fuzz::write_input("input.idx", data, size);
  for (int ndim : {1, 2, 3}) {
    try {
      const minidl::data::IdxData d = minidl::data::read_idx_u8(path, ndim);
      uint64_t n = 1;
      for (int64_t dim : d.dims) n *= static_cast<uint64_t>(dim);
      if (d.values.size() != n) __builtin_trap();  // the reader promises prod(dims) values
    } catch (const minidl::Error&) {
    }
  }
  return 0;
}
