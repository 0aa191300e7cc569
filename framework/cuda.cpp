// CPU-only builds: no CUDA backend, so no devices. The CUDA build defines these in ops/cuda.
#include "framework/cuda.h"

#ifndef MINIDL_WITH_CUDA
namespace minidl::cuda {
bool is_available() { return false; }
int device_count() { return 0; }
bool is_compiled() { return false; }
}  // namespace minidl::cuda
#endif
