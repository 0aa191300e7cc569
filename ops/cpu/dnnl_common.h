// What minidl's two oneDNN callers share (conv_dnnl.cpp, matmul_dnnl.cpp; only built where the
// build found oneDNN, MINIDL_HAS_DNNL): the CPU engine and a stream per thread, and running a primitive on the calling
// thread alone.
#pragma once
#include <omp.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>

namespace minidl::kernels::cpu {

inline dnnl::engine& dnnl_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// The calling thread's stream on that engine (in-order, blocking on wait()).
inline dnnl::stream& dnnl_thread_stream() {
  thread_local dnnl::stream s(dnnl_engine());
  return s;
}

// A run-time switch: on unless `variable` is "0" in the environment (read once), until a setter
// stores 0 or 1 in `state` (which starts at -1).
inline bool switch_on(std::atomic<int>& state, const char* variable) {
  int e = state.load(std::memory_order_relaxed);
  if (e < 0) {
    const char* v = std::getenv(variable);
    e = v && std::strcmp(v, "0") == 0 ? 0 : 1;
    state.store(e);
  }
  return e == 1;
}

// Whether oneDNN's own reading of the CPU (it honours ONEDNN_MAX_CPU_ISA) includes every bit of `isa`.
inline bool dnnl_has_isa(dnnl_cpu_isa_t isa) {
  return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & isa) == static_cast<unsigned>(isa);
}

// The calling thread's OpenMP thread count set to 1 for a scope. Debian's oneDNN runs on OpenMP and
// reads that count when it plans and runs a primitive: at 1 it opens no parallel region, so its
// team never spins beside minidl's pool, which does the splitting (bench/README.md, "Threads").
struct SingleOmpThread {
  int outer = omp_get_max_threads();
  SingleOmpThread() { omp_set_num_threads(1); }
  ~SingleOmpThread() { omp_set_num_threads(outer); }
  SingleOmpThread(const SingleOmpThread&) = delete;
  SingleOmpThread& operator=(const SingleOmpThread&) = delete;
};

}  // namespace minidl::kernels::cpu
