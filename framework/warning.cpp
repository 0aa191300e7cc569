#include "framework/warning.h"

#include <cstdio>
#include <mutex>

namespace minidl {

namespace {
std::mutex& warning_mutex() {
  static std::mutex m;
  return m;
}
WarningHandler& current_handler() {
  static WarningHandler handler;  // empty: the default (stderr)
  return handler;
}
}  // namespace

WarningHandler set_warning_handler(WarningHandler handler) {
  std::lock_guard<std::mutex> lock(warning_mutex());
  WarningHandler previous = std::move(current_handler());
  current_handler() = std::move(handler);
  return previous;
}

void warn(const std::string& message) {
  std::lock_guard<std::mutex> lock(warning_mutex());
  if (current_handler()) current_handler()(message);
  else std::fprintf(stderr, "minidl warning: %s\n", message.c_str());
}

}  // namespace minidl
