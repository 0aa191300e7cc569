// 2-D convolution on oneDNN (Debian's libdnnl, the primitive library PyTorch's CPU convolution
// uses), tried first by the CPU conv kernels (ops/cpu/conv.cpp) when the build found it
// (MINIDL_DNNL). f32 runs on oneDNN's f32 primitives; f16/bf16 are widened to f32 for them and the
// results narrowed. Each function returns false when it does not take the call (oneDNN absent or
// switched off, f64, a batch smaller than the thread count, a geometry oneDNN refuses); the caller
// then runs its own im2col + GEMM path. Why and how much: bench/README.md, "performance log".
#pragma once
#include <cstdint>

#include "ops/kernels.h"

namespace minidl::kernels::cpu::dnnl_conv {

// Whether this build has oneDNN at all.
bool compiled();
// Whether the conv kernels use it now: compiled() and not switched off, by MINIDL_DNNL=0 in the
// environment or by set_enabled(false) (the tests run every conv case both ways).
bool enabled();
void set_enabled(bool on);
// Kernel calls oneDNN has taken so far (all passes), so tests can tell that a call really took this path.
int64_t calls();

bool forward(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dGeometry& g);
bool input_grad(const Tensor& gx, const Tensor& gy, const Tensor& w, const Tensor& b, const Conv2dGeometry& g);
bool weight_grad(const Tensor& gw, const Tensor& gb, const Tensor& x, const Tensor& gy, const Conv2dGeometry& g);

}  // namespace minidl::kernels::cpu::dnnl_conv
