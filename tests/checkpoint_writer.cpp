// Helper process of tests/test_checkpoint_kill.cpp: writes a checkpoint so that the test can kill it
// with SIGKILL during the write. It reports on stdout, one line each, when it gets there:
//   checkpoint_writer save PATH MIB VALUE   "ready" just before Checkpoint::save of a MIB-MiB f32
//                                           tensor of VALUEs (meta "value": VALUE), "saved" after it
//   checkpoint_writer block PATH            "mid-write" once write_file_atomically has written 1 MiB
//                                           of PATH's temporary file; then waits to be killed
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "minidl.h"

using namespace minidl;

namespace {
void say(const char* line) {
  std::printf("%s\n", line);
  std::fflush(stdout);
}
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "save" && argc == 5) {
    const int64_t mib = std::atoll(argv[3]);
    const double value = std::atof(argv[4]);
    Checkpoint ck;
    ck.put("model", TensorDict{{"weight", full({mib, 256 * 1024}, value)}});
    ck.put("value", Json(value));
    say("ready");
    ck.save(argv[2]);
    say("saved");
    return 0;
  }
  if (mode == "block" && argc == 3) {
    write_file_atomically(argv[2], [](const ByteSink& sink) {
      const std::vector<char> chunk(1 << 20, 'x');
      sink(chunk.data(), chunk.size());
      say("mid-write");
      for (;;) ::pause();  // killed here
    });
    return 1;
  }
  std::fprintf(stderr, "usage: checkpoint_writer save PATH MIB VALUE | block PATH\n");
  return 2;
}
