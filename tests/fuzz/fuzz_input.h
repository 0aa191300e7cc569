// What the fuzz targets share: the input as a file (the readers under test take paths) in a folder of
// this process, and the rule every target checks: bad input is a minidl::Error (or the target's own
// documented error type), never a crash, a hang, a leak or another exception. libFuzzer reports an
// escaping exception as a crash (std::terminate), so each target catches only the errors it allows.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace minidl::fuzz {

// A folder under $TMPDIR (or /tmp) that lives as long as the process: removed at exit.
inline const std::filesystem::path& scratch_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      const char* tmp = std::getenv("TMPDIR");
      path = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") / ("minidl-fuzz-" + std::to_string(::getpid()));
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

// Writes bytes to `name` in the scratch folder (replacing it) and returns its path.
inline std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
  const std::filesystem::path p = scratch_dir() / name;
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  f.close();
  if (!f) std::abort();  // the harness itself failed, not the code under test
  return p.string();
}

}  // namespace minidl::fuzz
