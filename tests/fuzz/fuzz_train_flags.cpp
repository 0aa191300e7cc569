// Fuzz target: minidl-train's flag parser (apps/train/config.h, parse_flags) on an argument list
// made from the input: arguments are separated by NUL bytes. A bad list must be a FlagError (exit
// status 2 in the program); whatever parses must describe itself.
#include <string>
#include <vector>

#include "apps/train/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args(1);
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) args.emplace_back();
    else args.back() += static_cast<char>(data[i]);
  }
  if (args.size() > 64) return 0;  // the parser is linear; long lists only slow the search
  try {
    const minidl::train::Config c = minidl::train::parse_flags(args);
    minidl::train::describe(c);
  } catch (const minidl::train::FlagError&) {
  }
  return 0;
}
