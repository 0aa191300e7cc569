// The kernel dispatch table: one per raw kernel family, keyed by (device type, dtype). A missing
// entry is an error naming the op and the missing key, never a crash.
#pragma once
#include <array>

#include "framework/device.h"
#include "framework/dtype.h"
#include "framework/error.h"

namespace minidl {

template <class Fn>
class KernelTable {
 public:
  explicit KernelTable(const char* op) : op_(op) {}
  void set(DeviceType device, DType dtype, Fn fn) { table_[index(device, dtype)] = fn; }
  void set_all(DeviceType device, Fn fn) {
    for (int t = 0; t < kNumDTypes; ++t) table_[index(device, static_cast<DType>(t))] = fn;
  }
  // `op`: the user-facing op the error should name (e.g. "exp" for the "unary" family).
  Fn get(Device device, DType dtype, const char* op = nullptr) const {
    Fn fn = table_[index(device.type, dtype)];
    MINIDL_CHECK(fn != nullptr, op ? op : op_, "no kernel for (", device_type_name(device.type), ", ", dtype_name(dtype), ")",
                 device.is_cuda() ? " in this build" : "");
    return fn;
  }
  bool has(DeviceType device, DType dtype) const { return table_[index(device, dtype)] != nullptr; }
  const char* op() const { return op_; }

 private:
  static int index(DeviceType d, DType t) { return static_cast<int>(d) * kNumDTypes + static_cast<int>(t); }
  const char* op_;
  std::array<Fn, kNumDeviceTypes * kNumDTypes> table_{};
};

}  // namespace minidl
