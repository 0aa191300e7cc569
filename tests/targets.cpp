#include "targets.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>

namespace minidl::testing {

std::string Target::name() const { return std::string(device_type_name(device)) + " " + dtype_name(dtype); }

bool is_compiled(DeviceType d) { return d == DeviceType::CPU || cuda::is_compiled(); }
bool is_available(DeviceType d) { return d == DeviceType::CPU || cuda::is_available(); }

bool expect_gpu() {
  const char* e = std::getenv("MINIDL_EXPECT_GPU");
  return e != nullptr && std::string(e) == "1";
}

const std::vector<Target>& compiled_targets() {
  // The one list: a new backend adds its (device, dtype) pairs here.
  static const std::vector<Target> kTargets = {
      kReference,
      {DeviceType::CPU, DType::F32},
      {DeviceType::CPU, DType::F16},
      {DeviceType::CPU, DType::BF16},
      {DeviceType::CUDA, DType::F64},
      {DeviceType::CUDA, DType::F32},
      {DeviceType::CUDA, DType::F16},
      {DeviceType::CUDA, DType::BF16},
  };
  static const std::vector<Target> compiled = [] {
    std::vector<Target> out;
    for (const Target& t : kTargets)
      if (is_compiled(t.device)) out.push_back(t);
    return out;
  }();
  return compiled;
}

bool runs_here(DeviceType d, const std::string& what) {
  if (is_available(d)) return true;
  const std::string line = "[" + std::string(device_type_name(d)) + "] " + what + ": skipped, " +
                           (is_compiled(d) ? "the backend is compiled but no device is available"
                                           : "this build has no such backend");
  if (expect_gpu()) {
    FAIL_CHECK(line << " (MINIDL_EXPECT_GPU=1)");
  } else {
    WARN(line);
  }
  return false;
}

std::vector<Target> runnable(const std::vector<Target>& from, const std::string& what) {
  std::vector<Target> out;
  std::vector<DeviceType> reported;
  for (const Target& t : from) {
    if (is_available(t.device)) {
      out.push_back(t);
    } else if (std::find(reported.begin(), reported.end(), t.device) == reported.end()) {
      reported.push_back(t.device);
      runs_here(t.device, what);
    }
  }
  return out;
}

namespace {
std::vector<Target> compiled_where(bool (*keep)(const Target&)) {
  std::vector<Target> out;
  for (const Target& t : compiled_targets())
    if (keep(t)) out.push_back(t);
  return out;
}
}  // namespace

std::vector<Target> gradcheck_targets() {
  return runnable(compiled_where([](const Target& t) { return t.dtype == DType::F64; }), "f64 gradient check");
}
std::vector<Target> reference_targets() {
  return runnable(compiled_where([](const Target& t) { return !(t == kReference); }), "reference check");
}

std::string run_on(const Target& t, const std::string& what, const std::function<std::string()>& check) {
  try {
    return check();
  } catch (const std::exception& e) {
    const std::string msg = e.what();
    if (t.device != DeviceType::CPU && msg.find("no kernel for") != std::string::npos) {
      WARN("[" << t.name() << "] " << what << ": skipped, " << msg);
      return "";
    }
    return what + " on " + t.name() + " threw: " + msg;
  }
}

}  // namespace minidl::testing
