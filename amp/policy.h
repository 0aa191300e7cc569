// The autocast policy table: for every op minidl has, which precision it runs in under autocast,
// per device type. One place, printable, and overridable at run time for a single op.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "framework/device.h"

namespace minidl::amp {

enum class CastPolicy {
  LowerPrecision,   // eligible inputs -> the autocast dtype (matmul, linear, conv)
  FP32,             // eligible inputs -> f32 (losses; on CUDA also exp, log, pow, ...)
  FP32SetOptDtype,  // compute and return f32 (CUDA softmax, log_softmax, sum)
  Promote,          // eligible inputs -> f32 if any is f32, else the autocast dtype (CPU cat/stack)
  Banned,           // refuses to run under autocast (CUDA binary_cross_entropy)
  None,             // runs in whatever dtype it receives
};

const char* policy_name(CastPolicy p);

// The policy of `op` on `device` (None for ops the table does not list).
CastPolicy policy_for(const std::string& op, DeviceType device);
// Run-time override for one op on one device type; reset_policy restores the built-in entry.
void set_policy(const std::string& op, DeviceType device, CastPolicy policy);
void reset_policy(const std::string& op);

struct PolicyRow {
  std::string op;
  CastPolicy cpu;
  CastPolicy cuda;
};
std::vector<PolicyRow> policy_table();  // current table (overrides applied), sorted by op
void print_policy(std::ostream& os);    // a readable table
void print_policy();                    // to stdout

}  // namespace minidl::amp
