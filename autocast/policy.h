// Autocast policies: which precision an op runs in under autocast, per device type. Each op family
// declares an OpPolicy for every op that consults autocast, beside the op's definition (ops/*.cpp);
// the ops layer builds one PolicyTable from those declarations (ops/autocast_hook.h), so the table
// lists exactly the ops that consult autocast. This file holds the vocabulary and the table itself:
// no ops.
#pragma once
#include <atomic>
#include <iosfwd>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "framework/device.h"

namespace minidl::amp {

enum class CastPolicy {
  LowerPrecision,   // eligible inputs -> the autocast dtype (matmul, linear, conv)
  FP32,             // eligible inputs -> f32 (losses; on CUDA also exp, log, pow, ...)
  FP32SetOptDtype,  // compute and return f32 (CUDA softmax, log_softmax, sum)
  Promote,          // eligible inputs -> f32 if any is f32, else the autocast dtype (CPU cat/stack)
  Banned,           // refuses to run under autocast (CUDA binary_cross_entropy)
  None,             // runs in whatever dtype it receives (still overridable)
};

const char* policy_name(CastPolicy p);

// One op's built-in policy, declared by its family. `op` is the name users pass to set_policy.
struct OpPolicy {
  const char* op;
  CastPolicy cpu;
  CastPolicy cuda;
  CastPolicy on(DeviceType device) const { return device == DeviceType::CPU ? cpu : cuda; }
};

struct PolicyRow {
  std::string op;
  CastPolicy cpu;
  CastPolicy cuda;
};

// The table over a fixed set of declared rows, with run-time overrides of single entries.
// Thread-safe: lookups take no lock while no override is set.
class PolicyTable {
 public:
  explicit PolicyTable(const std::vector<const OpPolicy*>& rows);  // names must be unique
  // The current policy of a declared op. Throws (naming the op) when `op` is not one of the rows:
  // an op that consults autocast must be declared in its family's policy list.
  CastPolicy lookup(const OpPolicy& op, DeviceType device) const;
  // By name (the user-facing form): None for an op that does not consult autocast.
  CastPolicy lookup(const std::string& op, DeviceType device) const;
  // Overrides by name; both throw for a name that is not a row.
  void set(const std::string& op, DeviceType device, CastPolicy policy);
  void reset(const std::string& op);
  std::vector<PolicyRow> rows() const;  // overrides applied, sorted by op
  bool contains(const std::string& op) const { return by_name_.count(op) != 0; }
  void print(std::ostream& os) const;

 private:
  const OpPolicy& row(const std::string& op, const char* what) const;
  std::unordered_map<const OpPolicy*, int> index_;
  std::map<std::string, const OpPolicy*> by_name_;
  mutable std::mutex mutex_;
  std::map<std::string, PolicyRow> overrides_;
  std::atomic<bool> has_overrides_{false};
};

}  // namespace minidl::amp
