// The (device, dtype) targets the op test tables run on, and the one rule for a target whose
// device is compiled into this build but cannot run here (CUDA without a GPU): it is reported as
// skipped, or fails when MINIDL_EXPECT_GPU=1 is set (a machine that should have a GPU).
// Adding a backend to the tables = naming its targets in kTargets (tests/targets.cpp).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "minidl.h"

namespace minidl::testing {

struct Target {
  DeviceType device;
  DType dtype;
  Device dev() const { return {device, 0}; }
  std::string name() const;  // "cuda f16"
  bool operator==(const Target& o) const { return device == o.device && dtype == o.dtype; }
};

// The f64 CPU target: what every other target is compared with.
inline constexpr Target kReference{DeviceType::CPU, DType::F64};

// Every target of the compiled devices, kReference first. The f64 ones are the gradient check's
// devices; all others are compared with kReference.
const std::vector<Target>& compiled_targets();

// Whether the device type is in this build, and whether it can run here.
bool is_compiled(DeviceType d);
bool is_available(DeviceType d);

// MINIDL_EXPECT_GPU=1 in the environment: a device that is compiled but unavailable is an error.
bool expect_gpu();

// Whether device d can run here. When it cannot (not compiled, or no device), reports `what` as
// skipped (a Catch2 WARN) or, under MINIDL_EXPECT_GPU=1, as a failure.
bool runs_here(DeviceType d, const std::string& what);

// The targets of `from` that can run here. Each compiled-but-unavailable device among them is
// reported once per call, naming `what`: a Catch2 WARN, or a failure under MINIDL_EXPECT_GPU=1.
std::vector<Target> runnable(const std::vector<Target>& from, const std::string& what);

// runnable(compiled_targets()) filtered to dtype f64, or to every dtype but the reference.
std::vector<Target> gradcheck_targets();
std::vector<Target> reference_targets();

// Runs one check on target t and returns its result ("" = pass). An exception becomes a failure
// message, except a missing kernel on a device other than the CPU: that device lacks the op (a
// gap tests/test_kernel_coverage.cpp holds to its known-gaps list), so the check is reported as
// skipped and passes.
std::string run_on(const Target& t, const std::string& what, const std::function<std::string()>& check);

}  // namespace minidl::testing
