// Sets the CPU kernels' thread count (OpenMP's, which minidl's pool follows) for a test's scope
// and restores the caller's when the scope ends, also when an assertion ends the test early.
#pragma once
#include <omp.h>

namespace minidl::testing {

class ThreadCount {
 public:
  explicit ThreadCount(int threads) { omp_set_num_threads(threads); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;
  ~ThreadCount() { omp_set_num_threads(saved_); }

 private:
  int saved_ = omp_get_max_threads();
};

}  // namespace minidl::testing
