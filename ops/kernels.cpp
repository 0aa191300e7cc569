#include "ops/kernels.h"

namespace minidl::kernels {

const Registry& registry() {
  static const Registry r = [] {
    Registry reg;
    cpu::register_kernels(reg);
#ifdef MINIDL_WITH_CUDA
    cuda::register_kernels(reg);
#endif
    return reg;
  }();
  return r;
}

}  // namespace minidl::kernels
