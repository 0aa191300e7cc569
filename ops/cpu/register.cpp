// Fills the dispatch tables with the CPU kernels of each family: the entry of one kernel set.
// cmake/cpu_kernels.cmake compiles this folder once per x86-64 level and names each set's entry
// through MINIDL_CPU_KERNELS_ENTRY; ops/cpu_isa.cpp calls the one the CPU runs.
#include "ops/kernels.h"

#ifndef MINIDL_CPU_KERNELS_ENTRY
#error "ops/cpu is compiled through cmake/cpu_kernels.cmake, which names the kernel set's entry"
#endif

namespace minidl::kernels::cpu {

void register_copy(Registry& r);
void register_elementwise(Registry& r);
void register_gemm(Registry& r);
void register_reduce(Registry& r);
void register_foreach_unscale(Registry& r);
void register_foreach_norm(Registry& r);
void register_foreach_scale(Registry& r);
void register_foreach_sgd(Registry& r);
void register_foreach_adam(Registry& r);
void register_softmax(Registry& r);
void register_index(Registry& r);
void register_sort(Registry& r);
void register_scan(Registry& r);
void register_random(Registry& r);
void register_conv(Registry& r);
void register_pool(Registry& r);
void register_batch_norm(Registry& r);

void register_all(Registry& r) {
  register_copy(r);
  register_elementwise(r);
  register_gemm(r);
  register_reduce(r);
  register_foreach_unscale(r);
  register_foreach_norm(r);
  register_foreach_scale(r);
  register_foreach_sgd(r);
  register_foreach_adam(r);
  register_softmax(r);
  register_index(r);
  register_sort(r);
  register_scan(r);
  register_random(r);
  register_conv(r);
  register_pool(r);
  register_batch_norm(r);
}

}  // namespace minidl::kernels::cpu

extern "C" void MINIDL_CPU_KERNELS_ENTRY(minidl::kernels::Registry& r) { minidl::kernels::cpu::register_all(r); }
