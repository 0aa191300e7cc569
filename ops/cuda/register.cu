// The CUDA backend's kernel registration: fills the registry's CUDA entries, family by family,
// when a GPU is usable (ops/kernels.cpp calls it once, on first use of the registry).
#include "framework/cuda.h"
#include "ops/kernels.h"

namespace minidl::kernels::cuda {

void register_copy(Registry& r);
void register_elementwise(Registry& r);
void register_reduce(Registry& r);
void register_gemm(Registry& r);
void register_softmax(Registry& r);
void register_amp(Registry& r);

void register_kernels(Registry& r) {
  if (!minidl::cuda::is_available()) return;
  register_copy(r);
  register_elementwise(r);
  register_reduce(r);
  register_gemm(r);
  register_softmax(r);
  register_amp(r);
}

}  // namespace minidl::kernels::cuda
