// Which CPU kernel set runs. The kernel layer (ops/cpu) is built once per x86-64 level: baseline
// (SSE2, any x86-64 CPU), avx2 (x86-64-v3: AVX2, FMA, F16C) and avx512 (x86-64-v4: AVX-512 F, BW,
// DQ, VL); the first kernel call fills the CPU tables with the best set the running CPU executes
// (framework/cpu_features.h), so one binary is fast on all of them. The environment variable
// MINIDL_MAX_CPU_ISA=baseline|avx2|avx512 caps the choice (as oneDNN's ONEDNN_MAX_CPU_ISA): for
// comparing sets on one machine, and for the tests that run the kernels of every set the CPU has.
// A build configured with MINIDL_NATIVE=ON (or with the sanitizers) holds one set, compiled for
// the build machine (-march=native); there the choice is fixed at build time.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace minidl::kernels {

struct Registry;

enum class CpuIsa : uint8_t { Baseline, Avx2, Avx512 };

// "baseline", "avx2", "avx512".
const char* cpu_isa_name(CpuIsa isa);
// True when this build chooses the kernel set at run time; false for a one-set build.
bool cpu_isa_dispatch();
// The kernel sets this build holds (one for a one-set build: the level it was compiled for).
std::vector<CpuIsa> compiled_cpu_isas();
// The best compiled set this CPU can run.
CpuIsa best_cpu_isa();
// The set the CPU tables use: best_cpu_isa() capped by MINIDL_MAX_CPU_ISA (an unknown value is an
// error naming the variable). Read once.
CpuIsa active_cpu_isa();
// One line for logs and benchmark headers: "avx2 (run-time choice; CPU: AMD EPYC 7B13, best avx2)".
std::string cpu_kernels_description();
// Fills r's CPU tables with one kernel set; isa must be compiled and runnable on this CPU (else an
// error). The live registry uses active_cpu_isa(); the tests fill private registries with each set.
void register_cpu_kernels(Registry& r, CpuIsa isa);

}  // namespace minidl::kernels
