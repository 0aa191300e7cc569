// What the CPU running this process can execute, read once from cpuid and, for the vector register
// state, from the operating system (xgetbv): a CPU may have AVX-512 units that the OS does not save
// on a context switch, and then they must not be used. Read by the CPU kernel dispatch
// (ops/cpu_isa.h), which picks the kernel set built for the best level found here.
#pragma once
#include <string>

namespace minidl {

struct CpuFeatures {
  // The x86-64 micro-architecture levels the kernel sets are built for (the compilers' names):
  //   v3: AVX, AVX2, FMA, F16C, BMI1/2, LZCNT, MOVBE;  v4: v3 + AVX512 F, BW, CD, DQ, VL.
  bool x86_64_v3 = false;
  bool x86_64_v4 = false;
  bool avx512_bf16 = false;  // the f32 -> bf16 conversion instruction (Zen 4, Cooper Lake, Sapphire Rapids)
  bool amx_bf16 = false;     // reported in cpu_kernels_description(); no kernel uses AMX tiles
  std::string model;         // the brand string ("AMD EPYC 9R14", ...); empty when the CPU has none
};

// The running CPU's features (detected on first call; thread-safe).
const CpuFeatures& cpu_features();

}  // namespace minidl
