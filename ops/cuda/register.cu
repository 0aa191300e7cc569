// The CUDA backend's kernel registration: register_kernels fills the live registry's CUDA entries,
// family by family, when a GPU is usable (ops/kernels.cpp calls it once, on first use);
// register_tables fills any registry without a GPU (the kernel coverage test lists them).
#include "framework/cuda.h"
#include "ops/kernels.h"

namespace minidl::kernels::cuda {

void register_copy(Registry& r);
void register_elementwise(Registry& r);
void register_reduce(Registry& r);
void register_gemm(Registry& r);
void register_softmax(Registry& r);
void register_foreach_unscale(Registry& r);
void register_foreach(Registry& r);
void register_index(Registry& r);
void register_sort(Registry& r);
void register_scan(Registry& r);
void register_random(Registry& r);
void register_conv(Registry& r);
void register_pool(Registry& r);
void register_batch_norm(Registry& r);

void register_tables(Registry& r) {
  register_copy(r);
  register_elementwise(r);
  register_reduce(r);
  register_gemm(r);
  register_softmax(r);
  register_foreach_unscale(r);
  register_foreach(r);
  register_index(r);
  register_sort(r);
  register_scan(r);
  register_random(r);
  register_conv(r);
  register_pool(r);
  register_batch_norm(r);
}

void register_kernels(Registry& r) {
  if (minidl::cuda::is_available()) register_tables(r);
}

}  // namespace minidl::kernels::cuda
