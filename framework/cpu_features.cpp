// cpuid leaves read: 0 (highest leaf), 1 (ECX: FMA, MOVBE, OSXSAVE, AVX, F16C), 7.0 (EBX: BMI1, AVX2,
// BMI2, AVX512 F/DQ/CD/BW/VL; EDX: AMX-BF16), 7.1 (EAX: AVX512_BF16), 0x80000001 (ECX: LZCNT),
// 0x80000002-4 (brand string). XCR0 (xgetbv) bits: 1-2 SSE/AVX state, 5-7 AVX-512 opmask and ZMM
// state. Any compiler and any target: off x86 every flag stays false.
#include "framework/cpu_features.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define MINIDL_X86 1
#endif

namespace minidl {

namespace {

#ifdef MINIDL_X86
struct Regs {
  uint32_t a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(uint32_t leaf, uint32_t sub = 0) {
  Regs r;
  if (!__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d)) r = Regs{};
  return r;
}

bool bit(uint32_t reg, int n) { return (reg >> n) & 1u; }

// XCR0: which register states the OS saves and restores (only valid when OSXSAVE is set).
uint64_t xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  const uint32_t max_leaf = cpuid(0).a;

  const Regs l1 = cpuid(1);
  const bool osxsave = bit(l1.c, 27);
  const uint64_t xcr = osxsave ? xcr0() : 0;
  const bool os_avx = (xcr & 0x6) == 0x6;             // XMM and YMM state
  const bool os_avx512 = os_avx && (xcr & 0xe0) == 0xe0;  // opmask, ZMM_Hi256, Hi16_ZMM
  const Regs l7 = max_leaf >= 7 ? cpuid(7, 0) : Regs{};
  const Regs l7s1 = (max_leaf >= 7 && l7.a >= 1) ? cpuid(7, 1) : Regs{};
  const uint32_t max_ext = cpuid(0x80000000).a;
  const Regs e1 = max_ext >= 0x80000001 ? cpuid(0x80000001) : Regs{};

  const bool avx = bit(l1.c, 28), fma = bit(l1.c, 12), f16c = bit(l1.c, 29), movbe = bit(l1.c, 22);
  const bool avx2 = bit(l7.b, 5), bmi1 = bit(l7.b, 3), bmi2 = bit(l7.b, 8), lzcnt = bit(e1.c, 5);
  f.x86_64_v3 = os_avx && avx && avx2 && fma && f16c && movbe && bmi1 && bmi2 && lzcnt;
  const bool avx512 = bit(l7.b, 16) && bit(l7.b, 17) && bit(l7.b, 28) && bit(l7.b, 30) && bit(l7.b, 31);  // F DQ CD BW VL
  f.x86_64_v4 = f.x86_64_v3 && os_avx512 && avx512;
  f.avx512_bf16 = f.x86_64_v4 && bit(l7s1.a, 5);
  f.amx_bf16 = bit(l7.d, 22);

  if (max_ext >= 0x80000004) {
    char brand[49] = {};
    for (uint32_t i = 0; i < 3; ++i) {
      const Regs r = cpuid(0x80000002 + i);
      std::memcpy(brand + 16 * i, &r, 16);
    }
    std::string s = brand;
    const size_t first = s.find_first_not_of(' '), last = s.find_last_not_of(' ');
    f.model = first == std::string::npos ? "" : s.substr(first, last - first + 1);
  }
  return f;
}
#else
CpuFeatures detect() { return {}; }
#endif

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace minidl
