// bench/host_sampler.h: a sampling profiler of the host side of a benchmark, for machines with no
// perf or gdb (the GPU machine): SIGPROF every 1 ms of process CPU time records the interrupted
// thread's return addresses (glibc's backtrace, through the unwind tables); stop() writes
// /proc/self/maps and one line of hex addresses per sample. bench/gpu/host_profile.py maps them to
// functions with addr2line on an unstripped copy of the binary (libraries by name): where a GPU step's
// host time goes, including the time spent waiting on the device inside the CUDA driver.
#pragma once

#include <execinfo.h>
#include <signal.h>
#include <sys/time.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace minidl::bench {

class HostSampler {
 public:
  static constexpr int kDepth = 32;
  static constexpr size_t kMaxSamples = 1 << 16;

  static void start() {
    samples().assign(kMaxSamples, Sample{});
    count().store(0);
    void* warm[2];
    backtrace(warm, 2);  // loads the unwinder now, not inside the first signal
    struct sigaction sa {};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, nullptr);
    itimerval every{{0, 1000}, {0, 1000}};
    setitimer(ITIMER_PROF, &every, nullptr);
  }

  // Stops sampling and writes the maps and the samples to `path`; false when it cannot.
  static bool stop(const std::string& path) {
    itimerval off{};
    setitimer(ITIMER_PROF, &off, nullptr);
    signal(SIGPROF, SIG_IGN);
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return false;
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) std::fprintf(f, "map %s\n", line.c_str());
    const size_t n = std::min(count().load(), kMaxSamples);
    for (size_t i = 0; i < n; ++i) {
      const Sample& s = samples()[i];
      std::fprintf(f, "sample");
      for (int d = 0; d < s.depth; ++d) std::fprintf(f, " %p", s.pc[d]);
      std::fprintf(f, "\n");
    }
    return std::fclose(f) == 0;
  }

 private:
  struct Sample {
    int depth = 0;
    void* pc[kDepth] = {};
  };
  static std::vector<Sample>& samples() {
    static std::vector<Sample> s;
    return s;
  }
  static std::atomic<size_t>& count() {
    static std::atomic<size_t> c{0};
    return c;
  }
  static void on_signal(int, siginfo_t*, void*) {
    const size_t i = count().fetch_add(1);
    if (i >= kMaxSamples) return;
    Sample& s = samples()[i];
    s.depth = backtrace(s.pc, kDepth);
  }
};

}  // namespace minidl::bench
