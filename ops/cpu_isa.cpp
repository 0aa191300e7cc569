// The CPU kernel sets' entry points and the run-time choice between them (ops/cpu_isa.h). Each set
// is ops/cpu/*.cpp compiled for one level, linked into one object whose only global symbol is its
// entry, minidl_register_cpu_kernels_<level> (cmake/cpu_kernels.cmake): every inline function,
// template and Eigen kernel inside a set stays private to it, so no AVX-512 copy of a shared inline
// function can be picked by the linker for code that runs on an AVX2 CPU.
#include "ops/cpu_isa.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "framework/cpu_features.h"
#include "framework/error.h"
#include "framework/warning.h"
#include "ops/kernels.h"

// The entries are C symbols so the build can name them without C++ mangling.
extern "C" {
#ifdef MINIDL_CPU_ISA_DISPATCH
void minidl_register_cpu_kernels_baseline(minidl::kernels::Registry& r);
void minidl_register_cpu_kernels_avx2(minidl::kernels::Registry& r);
void minidl_register_cpu_kernels_avx512(minidl::kernels::Registry& r);
#else
void minidl_register_cpu_kernels_single(minidl::kernels::Registry& r);
#endif
}

namespace minidl::kernels {

namespace {

constexpr const char* kCapVariable = "MINIDL_MAX_CPU_ISA";

#ifndef MINIDL_CPU_ISA_DISPATCH
// The level the one set was compiled for, from the compiler's own macros.
constexpr CpuIsa kSingleIsa =
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
    CpuIsa::Avx512;
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
    CpuIsa::Avx2;
#else
    CpuIsa::Baseline;
#endif
#endif

bool runs_here(CpuIsa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case CpuIsa::Baseline: return true;
    case CpuIsa::Avx2: return f.x86_64_v3;
    case CpuIsa::Avx512: return f.x86_64_v4;
  }
  return false;
}

// MINIDL_MAX_CPU_ISA, or Avx512 (no cap) when unset or empty.
CpuIsa read_cap() {
  const char* env = std::getenv(kCapVariable);
  if (env == nullptr || *env == '\0') return CpuIsa::Avx512;
  std::string v = env;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (CpuIsa isa : {CpuIsa::Baseline, CpuIsa::Avx2, CpuIsa::Avx512})
    if (v == cpu_isa_name(isa)) return isa;
  MINIDL_FAIL(kCapVariable, "unknown value '", env, "' (expected baseline, avx2 or avx512)");
}

CpuIsa choose() {
  const CpuIsa cap = read_cap();
  if (!cpu_isa_dispatch()) {
    if (cap < best_cpu_isa())
      warn(std::string(kCapVariable) + "=" + cpu_isa_name(cap) + " has no effect: this build holds one CPU kernel set (" +
           cpu_isa_name(best_cpu_isa()) + ", compiled for the build machine)");
    return best_cpu_isa();
  }
  return std::min(cap, best_cpu_isa());
}

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Baseline: return "baseline";
    case CpuIsa::Avx2: return "avx2";
    case CpuIsa::Avx512: return "avx512";
  }
  return "?";
}

bool cpu_isa_dispatch() {
#ifdef MINIDL_CPU_ISA_DISPATCH
  return true;
#else
  return false;
#endif
}

std::vector<CpuIsa> compiled_cpu_isas() {
#ifdef MINIDL_CPU_ISA_DISPATCH
  return {CpuIsa::Baseline, CpuIsa::Avx2, CpuIsa::Avx512};
#else
  return {kSingleIsa};
#endif
}

CpuIsa best_cpu_isa() {
  CpuIsa best = CpuIsa::Baseline;
  for (CpuIsa isa : compiled_cpu_isas())
    if (runs_here(isa)) best = std::max(best, isa);
  return best;
}

CpuIsa active_cpu_isa() {
  static const CpuIsa active = choose();
  return active;
}

std::string cpu_kernels_description() {
  const CpuFeatures& f = cpu_features();
  std::string s = cpu_isa_name(active_cpu_isa());
  s += cpu_isa_dispatch() ? " (run-time choice; CPU: " : " (one set, compiled for the build machine; CPU: ";
  s += f.model.empty() ? "unknown" : f.model;
  s += std::string(", best ") + cpu_isa_name(best_cpu_isa());
  if (f.avx512_bf16) s += ", avx512_bf16";
  if (f.amx_bf16) s += ", amx_bf16 (not used)";
  return s + ")";
}

void register_cpu_kernels(Registry& r, CpuIsa isa) {
  const std::vector<CpuIsa> compiled = compiled_cpu_isas();
  MINIDL_CHECK(std::find(compiled.begin(), compiled.end(), isa) != compiled.end(), "register_cpu_kernels",
               "this build holds no ", cpu_isa_name(isa), " kernel set");
  MINIDL_CHECK(runs_here(isa), "register_cpu_kernels", "this CPU cannot run the ", cpu_isa_name(isa), " kernel set");
#ifdef MINIDL_CPU_ISA_DISPATCH
  switch (isa) {
    case CpuIsa::Baseline: return minidl_register_cpu_kernels_baseline(r);
    case CpuIsa::Avx2: return minidl_register_cpu_kernels_avx2(r);
    case CpuIsa::Avx512: return minidl_register_cpu_kernels_avx512(r);
  }
#else
  minidl_register_cpu_kernels_single(r);
#endif
}

namespace cpu {
void register_kernels(Registry& r) { register_cpu_kernels(r, active_cpu_isa()); }
}  // namespace cpu

}  // namespace minidl::kernels
