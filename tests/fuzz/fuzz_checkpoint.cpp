// Fuzz target: checkpoint loading (serialize/serialize.h, Checkpoint::load) from a file, and the
// accessors a resume uses on what loaded: the tensors under a prefix, a state dict, the u64 values.
#include "framework/error.h"
#include "fuzz_input.h"
#include "serialize/serialize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = minidl::fuzz::write_input("input.safetensors", data, size);
  try {
    const minidl::Checkpoint ck = minidl::Checkpoint::load(path);
    ck.tensors_under("model");
    ck.state_dict("optim");
    for (const auto& [name, tensor] : ck.tensors) {
      try {
        ck.get_u64(name);
      } catch (const minidl::Error&) {
      }
    }
    ck.meta.dump();
  } catch (const minidl::Error&) {
  }
  return 0;
}
