// Fuzz target: the CIFAR reader (data/cifar.h). The first byte chooses the layout (bit 0: CIFAR-100,
// bit 1: its coarse labels); the rest is the test split's file (test_batch.bin, or test.bin). A set
// that loads is read back, first and last example and a batch of both.
#include <filesystem>

#include "data/cifar.h"
#include "framework/error.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool cifar100 = data[0] & 1, coarse = data[0] & 2;
  const std::filesystem::path dir = minidl::fuzz::scratch_dir() / "cifar";
  std::filesystem::create_directories(dir);
  const std::string file = cifar100 ? "cifar/test.bin" : "cifar/test_batch.bin";
  minidl::fuzz::write_input(file, data + 1, size - 1);
  try {
    minidl::data::CIFAR set(dir.string(), minidl::data::Split::Test,
                            minidl::data::CIFAROptions().cifar100(cifar100).fine_labels(!coarse));
    if (set.size() > 0) {
      set.get(0);
      set.get(set.size() - 1);
      set.get_batch({0, set.size() - 1});
    }
  } catch (const minidl::Error&) {
  }
  std::error_code ec;
  std::filesystem::remove(dir / (cifar100 ? "test.bin" : "test_batch.bin"), ec);
  return 0;
}
