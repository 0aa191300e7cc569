// 2-D convolution on oneDNN (Debian's libdnnl, the primitive library PyTorch's CPU convolution
// uses), tried first by the CPU conv kernels (ops/cpu/conv.cpp) when the build found it
// (MINIDL_DNNL). f32 runs on oneDNN's f32 primitives, bf16 on its bf16 ones where the CPU has
// AVX512_BF16 (native_bf16()); otherwise f16/bf16 are widened to f32 for them and the results
// narrowed, inside the reorders to and from oneDNN's layouts. Each function returns false when it does not take the call (oneDNN absent or
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
// Kernel calls oneDNN has taken so far (a forward, an input or weight gradient, or a joint
// backward: one each), so tests can tell that a call really took this path.
int64_t calls();

// Whether bf16 convolutions run on oneDNN's bf16 primitives (vdpbf16ps: products of bf16 pairs
// summed in f32, then rounded once, as the widened path) rather than widened to its f32 ones:
// native_bf16_supported() when oneDNN finds AVX512_BF16 on this CPU (Zen 4/5, Cooper Lake, Sapphire
// Rapids), native_bf16() when that holds, enabled() holds and it is not switched off by
// MINIDL_DNNL_BF16=0 or set_native_bf16(false). The same switch governs bf16 matrix products on
// oneDNN (matmul_dnnl.h). native_bf16_calls() counts the convolution calls that ran so.
bool native_bf16_supported();
bool native_bf16();
void set_native_bf16(bool on);
int64_t native_bf16_calls();

// Images per oneDNN call when f16/bf16 images are widened for oneDNN's f32 primitives: a slot's
// sub-batch runs in runs of about run_kib() KiB of f32 per image operand, so each widened copy is
// still in cache when oneDNN reads it (bench/README.md, performance log 37). 0: the whole sub-batch
// at once. Default 256, or MINIDL_DNNL_RUN_KB from the environment; set_run_kib for benches and tests.
int64_t run_kib();
void set_run_kib(int64_t kib);
// Runs handed to oneDNN so far (one per slot and pass when runs are off), so tests can tell that
// a call was cut into runs.
int64_t runs();

// The f16/bf16 <-> f32 conversions and channel-block copies of the calling kernel set
// (ops/cpu/convert.h; this file is built once, the kernel sets once per instruction set, so they
// hand it theirs). Images (f32 too) are copied straight into the blocked layout oneDNN asks for,
// f16/bf16 widened on the way, and its results copied (narrowed) straight back.
struct Conversions {
  void (*widen)(const void* src, DType type, float* dst, int64_t n);
  void (*narrow)(const float* src, DType type, void* dst, int64_t n);
  // Images [images, C, HW] <-> channel blocks of `block` (8 or 16) channels, as
  // widen_to_channel_blocks / narrow_from_channel_blocks.
  void (*widen_blocked)(const void* src, DType type, float* dst, int64_t images, int64_t C, int64_t HW, int64_t block);
  void (*narrow_blocked)(const float* src, DType type, void* dst, int64_t images, int64_t C, int64_t HW, int64_t block);
};

// Whether the kernels below take geometry g with channels-last images (oneDNN's NHWC kernels,
// without a reorder): oneDNN enabled, a batch it takes, groups == 1, channel counts it runs fast so.
bool prefers_channels_last(const Conv2dGeometry& g);

// Images are all NCHW-contiguous or all channels-last; a mix is refused (false).
bool forward(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dGeometry& g,
             const Conversions& cv);
bool input_grad(const Tensor& gx, const Tensor& gy, const Tensor& w, const Tensor& b, const Conv2dGeometry& g,
                const Conversions& cv);
bool weight_grad(const Tensor& gw, const Tensor& gb, const Tensor& x, const Tensor& gy, const Conv2dGeometry& g,
                 const Conversions& cv);
// input_grad (without a bias) and weight_grad in one call, each slot's gy put into oneDNN's layout
// once for both.
bool backward(const Tensor& gx, const Tensor& gw, const Tensor& gb, const Tensor& x, const Tensor& gy, const Tensor& w,
              const Conv2dGeometry& g, const Conversions& cv);

}  // namespace minidl::kernels::cpu::dnnl_conv
