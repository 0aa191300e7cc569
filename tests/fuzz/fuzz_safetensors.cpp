// Fuzz target: the safetensors reader (serialize/serialize.h) on arbitrary bytes. A file that loads
// is written again and must read back to the same bytes (the writer lays files out canonically, so
// one round trip reaches a fixed point); an error in the round trip is a finding, so it is not caught.
#include "framework/error.h"
#include "serialize/serialize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  minidl::safetensors::File f;
  try {
    f = minidl::safetensors::deserialize(bytes, "fuzz input");
  } catch (const minidl::Error&) {
    return 0;
  }
  // Outside the try: what loaded must write and load again (an Error here escapes as a crash).
  const std::string once = minidl::safetensors::serialize(f.tensors, f.metadata);
  const minidl::safetensors::File g = minidl::safetensors::deserialize(once, "round trip");
  if (minidl::safetensors::serialize(g.tensors, g.metadata) != once) __builtin_trap();
  return 0;
}
