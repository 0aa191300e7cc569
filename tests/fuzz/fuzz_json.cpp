// Fuzz target: the JSON parser (framework/json.h). Text that parses is dumped, and the dump must
// parse to a value that dumps the same (one round trip reaches a fixed point); an error there is a
// finding, so it is not caught.
#include "framework/error.h"
#include "framework/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  minidl::Json j;
  try {
    j = minidl::Json::parse(text, "fuzz input");
  } catch (const minidl::Error&) {
    return 0;
  }
  // Outside the try: the dump of a parsed value must parse (an Error here escapes as a crash).
  const std::string once = j.dump();
  if (minidl::Json::parse(once, "round trip").dump() != once) __builtin_trap();
  return 0;
}
