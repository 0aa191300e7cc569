// Kernel coverage: prints which kernel families (the Registry's tables, ops/kernels.h) each
// (device, dtype) has, and fails when a family the CPU has for a dtype is missing on another
// compiled device without being listed below as a known gap. The list is checked too: a gap that
// is in fact filled (or that the CPU does not have either) fails, so the list cannot go stale.
// The tables come from the backends' register functions on a fresh Registry, so a build with CUDA
// compiled is checked here even where no GPU is present.
#include <catch2/catch.hpp>

#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "minidl.h"
#include "ops/kernels.h"
#include "targets.h"

using namespace minidl;
using kernels::Registry;

namespace {

// A family missing on a device. dtypes empty = every dtype the CPU has it for.
struct KnownGap {
  DeviceType device;
  const char* family;
  std::vector<DType> dtypes;
  const char* reason;
};

// clang-format off
// Every family the CPU has is on CUDA too (the four models' families included), for the same
// dtypes, except the rows below. A new family or dtype without a CUDA kernel lands here with its
// reason.
const std::vector<KnownGap> kKnownGaps = {
  {DeviceType::CUDA, "gemm", {DType::I64, DType::I32, DType::U8},
   "integer products run on CPU only, as PyTorch's (its CUDA mm refuses integer tensors)"},
  {DeviceType::CUDA, "conv2d_channels_last", {DType::F32, DType::F64, DType::F16, DType::BF16},
   "a layout preference, not a kernel: CUDA's convolutions take NCHW images (the default without an entry)"},
};
// clang-format on

// Every backend's tables, filled without touching a device.
const Registry& compiled_tables() {
  static const Registry r = [] {
    Registry reg;
    kernels::cpu::register_kernels(reg);
#ifdef MINIDL_WITH_CUDA
    kernels::cuda::register_tables(reg);
#endif
    return reg;
  }();
  return r;
}

// One row per family: which (device, dtype) pairs have a kernel.
struct Family {
  std::string name;
  std::function<bool(DeviceType, DType)> has;
};

std::vector<Family> families(const Registry& r) {
  std::vector<Family> out;
  kernels::for_each_table(r, [&](const char* name, const auto& table) {
    out.push_back({name, [&table](DeviceType d, DType t) { return table.has(d, t); }});
  });
  return out;
}

std::vector<DeviceType> compiled_devices() {
  std::vector<DeviceType> out;
  for (int d = 0; d < kNumDeviceTypes; ++d)
    if (testing::is_compiled(static_cast<DeviceType>(d))) out.push_back(static_cast<DeviceType>(d));
  return out;
}

std::vector<DType> all_dtypes() {
  std::vector<DType> out;
  for (int t = 0; t < kNumDTypes; ++t) out.push_back(static_cast<DType>(t));
  return out;
}

const KnownGap* find_gap(DeviceType d, const std::string& family) {
  for (const KnownGap& g : kKnownGaps)
    if (g.device == d && family == g.family) return &g;
  return nullptr;
}

bool gap_covers(const KnownGap& g, DType t) {
  if (g.dtypes.empty()) return true;
  for (DType x : g.dtypes)
    if (x == t) return true;
  return false;
}

std::string table_text(const std::vector<Family>& fams) {
  std::ostringstream os;
  size_t width = 0;
  for (const Family& f : fams) width = std::max(width, f.name.size());
  os << std::left << std::setw(static_cast<int>(width)) << "family";
  for (DeviceType d : compiled_devices()) {
    os << " | " << std::setw(4 * kNumDTypes - 1) << device_type_name(d);
  }
  os << "\n" << std::setw(static_cast<int>(width)) << "";
  for (size_t k = 0; k < compiled_devices().size(); ++k) {
    os << " |";
    for (DType t : all_dtypes()) os << " " << std::setw(3) << dtype_name(t);
  }
  os << "\n";
  for (const Family& f : fams) {
    os << std::setw(static_cast<int>(width)) << f.name;
    for (DeviceType d : compiled_devices()) {
      os << " |";
      for (DType t : all_dtypes()) {
        const char* mark = f.has(d, t) ? "x" : (d != DeviceType::CPU && f.has(DeviceType::CPU, t) && find_gap(d, f.name) ? "gap" : ".");
        os << " " << std::setw(3) << mark;
      }
    }
    os << "\n";
  }
  return os.str();
}

}  // namespace

TEST_CASE("kernel coverage: for_each_table lists every table of the Registry once", "[kernels][coverage]") {
  const Registry& r = compiled_tables();
  std::set<std::string> names;
  size_t count = 0;
  kernels::for_each_table(r, [&](const char* name, const auto&) {
    ++count;
    INFO(name);
    CHECK(names.insert(name).second);
  });
  // Every table has the same layout (a name and one pointer per key): a member missing from the
  // list leaves the struct larger than the tables listed.
  CHECK(count * sizeof(KernelTable<kernels::FillFn>) == sizeof(Registry));
}

TEST_CASE("kernel coverage: every CPU family is on every compiled device or a known gap", "[kernels][coverage]") {
  const std::vector<Family> fams = families(compiled_tables());
  std::cout << "kernel families x (device, dtype): x = kernel, gap = known gap, . = none on any device\n"
            << table_text(fams);
  for (const KnownGap& g : kKnownGaps) std::cout << "known gap: " << device_type_name(g.device) << " " << g.family << ": " << g.reason << "\n";
  std::cout << std::flush;

  for (DeviceType d : compiled_devices()) {
    if (d == DeviceType::CPU) continue;
    for (const Family& f : fams)
      for (DType t : all_dtypes()) {
        if (!f.has(DeviceType::CPU, t) || f.has(d, t)) continue;
        const KnownGap* g = find_gap(d, f.name);
        INFO(f.name << " has a CPU " << dtype_name(t) << " kernel but none on " << device_type_name(d)
                    << ": add the kernel or list a known gap with its reason");
        CHECK((g != nullptr && gap_covers(*g, t)));
      }
  }
}

TEST_CASE("kernel coverage: every known gap is still a gap", "[kernels][coverage]") {
  const std::vector<Family> fams = families(compiled_tables());
  for (const KnownGap& g : kKnownGaps) {
    INFO("known gap: " << device_type_name(g.device) << " " << g.family);
    const Family* f = nullptr;
    for (const Family& x : fams)
      if (x.name == g.family) f = &x;
    REQUIRE(f != nullptr);  // a family of the Registry
    CHECK(g.device != DeviceType::CPU);
    if (!testing::is_compiled(g.device)) {
      WARN("[" << device_type_name(g.device) << "] known gap " << g.family << ": not checked, the backend is not in this build");
      continue;
    }
    int cpu_has = 0;
    for (DType t : all_dtypes()) {
      if (!gap_covers(g, t)) continue;
      INFO(dtype_name(t));
      if (g.dtypes.empty() && !f->has(DeviceType::CPU, t)) continue;  // "every dtype the CPU has"
      CHECK(f->has(DeviceType::CPU, t));  // a listed dtype must be one the CPU has
      CHECK_FALSE(f->has(g.device, t));   // filled: remove it from the list
      cpu_has += f->has(DeviceType::CPU, t);
    }
    CHECK(cpu_has > 0);
  }
}

TEST_CASE("kernel coverage: the live registry has the compiled tables of every available device", "[kernels][coverage]") {
  // compiled_tables() fills the tables the way registry() does; where a device can run, the two agree.
  const std::vector<Family> fams = families(compiled_tables()), live = families(kernels::registry());
  REQUIRE(fams.size() == live.size());
  for (DeviceType d : compiled_devices()) {
    if (!testing::runs_here(d, "live registry")) continue;
    for (size_t i = 0; i < fams.size(); ++i)
      for (DType t : all_dtypes()) {
        INFO(fams[i].name << " " << device_type_name(d) << " " << dtype_name(t));
        CHECK(fams[i].has(d, t) == live[i].has(d, t));
      }
  }
}
