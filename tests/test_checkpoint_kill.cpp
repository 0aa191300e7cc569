// kill -9 during a checkpoint save, for real: a helper process (tests/checkpoint_writer.cpp) saves
// and is killed with SIGKILL while it writes. The previous checkpoint must stay intact and loadable,
// and the next save must remove the temporary file the killed one left. Nothing here depends on
// timing for pass or fail: the helper says when it is mid-write, and where a kill may land before or
// after the write the check accepts exactly the old or the new complete checkpoint and the loop
// goes on until enough kills have landed mid-write (a temporary file left behind proves it).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "ops/ops.h"
#include "serialize/serialize.h"
#include "temp_dir.h"

#ifndef MINIDL_CHECKPOINT_WRITER_BIN
#error "MINIDL_CHECKPOINT_WRITER_BIN (the path of checkpoint_writer) must be defined by the build"
#endif

extern char** environ;
using namespace minidl;

namespace {

// A running helper process whose stdout the test reads line by line.
struct Child {
  pid_t pid = -1;
  int out = -1;
  explicit Child(const std::vector<std::string>& args) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addclose(&actions, fds[1]);
    std::vector<std::string> all{MINIDL_CHECKPOINT_WRITER_BIN};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    out = fds[0];
    REQUIRE(rc == 0);
  }
  ~Child() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (out >= 0) ::close(out);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // The next line of its stdout ("" at end of file).
  std::string line() {
    std::string s;
    char ch;
    while (::read(out, &ch, 1) == 1 && ch != '\n') s += ch;
    return s;
  }
  // SIGKILL, then wait: true when the signal ended it (false when it had exited already).
  bool kill9() {
    ::kill(pid, SIGKILL);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    pid = -1;
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  }
  // True once it has exited (reaped).
  bool exited() {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) != pid) return false;
    pid = -1;
    return true;
  }
};

// The temporary files saves of `name` create in dir (.NAME.tmp-XXXXXX).
std::vector<std::string> temporaries(const TempDir& dir, const std::string& name) {
  std::vector<std::string> out;
  for (const std::string& e : dir.entries())
    if (e.rfind("." + name + ".tmp-", 0) == 0) out.push_back(e);
  return out;
}

void save_small(const std::string& path, double value) {
  Checkpoint ck;
  ck.put("model", TensorDict{{"weight", full({4}, value)}});
  ck.put("value", Json(value));
  ck.save(path);
}

// The value the checkpoint at path was saved with, after checking that it is complete: every
// element of its weight holds that value.
double loaded_value(const std::string& path) {
  const Checkpoint ck = Checkpoint::load(path);
  const double value = ck.meta.at("value").as_double();
  const Tensor w = ck.tensors_under("model").at("weight");
  REQUIRE(w.numel() > 0);
  CHECK(min(w).item() == value);
  CHECK(max(w).item() == value);
  return value;
}

}  // namespace

TEST_CASE("a save killed with SIGKILL mid-write leaves the previous checkpoint intact; the next save removes its "
          "temporary file", "[serialize][checkpoint][kill]") {
  TempDir dir;
  const std::string path = dir.file("last.safetensors");
  save_small(path, 1.0);
  {
    Child writer({"block", path});
    REQUIRE(writer.line() == "mid-write");
    const std::vector<std::string> tmp = temporaries(dir, "last.safetensors");
    REQUIRE(tmp.size() == 1);
    CHECK(std::filesystem::file_size(dir.file(tmp[0])) == (1u << 20));
    REQUIRE(writer.kill9());
  }
  CHECK(loaded_value(path) == 1.0);
  CHECK(temporaries(dir, "last.safetensors").size() == 1);  // what the killed save left
  save_small(path, 2.0);
  CHECK(temporaries(dir, "last.safetensors").empty());
  CHECK(dir.entries() == std::vector<std::string>{"last.safetensors"});
  CHECK(loaded_value(path) == 2.0);
}

TEST_CASE("Checkpoint::save of a large checkpoint killed at several points never corrupts the file",
          "[serialize][checkpoint][kill]") {
  TempDir dir;
  const std::string path = dir.file("big.safetensors");
  save_small(path, 0.0);
  double current = 0.0;
  int landed = 0, attempt = 0;
  // From at once to past the end of the save (then the new checkpoint is complete): every delay at
  // least twice, then on until 4 kills have landed mid-write.
  const int delays_us[] = {0, 500, 2000, 8000, 30000, 100000};
  const int kDelays = 6;
  int completed = 0;
  for (; (attempt < 2 * kDelays || landed < 4) && attempt < 100; ++attempt) {
    const double value = attempt + 1.0;
    const std::vector<std::string> before = temporaries(dir, "big.safetensors");  // left by the last kill
    auto own_temporary = [&] {
      for (const std::string& t : temporaries(dir, "big.safetensors"))
        if (std::find(before.begin(), before.end(), t) == before.end()) return true;
      return false;
    };
    Child writer({"save", path, "32", std::to_string(value)});
    REQUIRE(writer.line() == "ready");
    // Wait for this save's temporary file (or the end of the child), then kill after a delay.
    bool child_done = false;
    while (!own_temporary() && !(child_done = writer.exited())) std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (!child_done) {
      std::this_thread::sleep_for(std::chrono::microseconds(delays_us[attempt % kDelays]));
      writer.kill9();
    }
    // Old or new, but complete: a kill after the rename leaves the new one.
    const double now = loaded_value(path);
    INFO("attempt " << attempt << ": the checkpoint holds " << now);
    CHECK((now == current || now == value));
    current = now;
    if (own_temporary()) {
      ++landed;  // the kill came before the rename
      CHECK(now != value);
    } else if (now == value) {
      ++completed;  // the kill came after the rename (or the save had ended)
    }
  }
  INFO(attempt << " attempts, " << landed << " killed mid-write, " << completed << " complete");
  CHECK(landed >= 4);
  // The next save removes every temporary file the killed saves left.
  save_small(path, -1.0);
  CHECK(dir.entries() == std::vector<std::string>{"big.safetensors"});
  CHECK(loaded_value(path) == -1.0);
}
