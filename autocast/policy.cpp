#include "autocast/policy.h"

#include <iomanip>
#include <ostream>

#include "framework/error.h"

namespace minidl::amp {

const char* policy_name(CastPolicy p) {
  switch (p) {
    case CastPolicy::LowerPrecision: return "lower_precision";
    case CastPolicy::FP32: return "fp32";
    case CastPolicy::FP32SetOptDtype: return "fp32_set_opt_dtype";
    case CastPolicy::Promote: return "promote";
    case CastPolicy::Banned: return "banned";
    case CastPolicy::None: return "none";
  }
  return "?";
}

PolicyTable::PolicyTable(const std::vector<const OpPolicy*>& rows) {
  for (const OpPolicy* r : rows) {
    MINIDL_CHECK(by_name_.emplace(r->op, r).second, "autocast policy table", "op '", r->op, "' is declared twice");
    index_.emplace(r, static_cast<int>(index_.size()));
  }
}

const OpPolicy& PolicyTable::row(const std::string& op, const char* what) const {
  auto it = by_name_.find(op);
  MINIDL_CHECK(it != by_name_.end(), what, "'", op,
               "' does not consult autocast (it runs in the dtype it receives); amp::print_policy() lists the ops "
               "that do");
  return *it->second;
}

CastPolicy PolicyTable::lookup(const OpPolicy& op, DeviceType device) const {
  MINIDL_CHECK(index_.count(&op) != 0, op.op,
               "consults autocast but is missing from the policy table (add it to its family's policy list)");
  if (has_overrides_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = overrides_.find(op.op);
    if (it != overrides_.end()) return device == DeviceType::CPU ? it->second.cpu : it->second.cuda;
  }
  return op.on(device);
}

CastPolicy PolicyTable::lookup(const std::string& op, DeviceType device) const {
  auto it = by_name_.find(op);
  return it == by_name_.end() ? CastPolicy::None : lookup(*it->second, device);
}

void PolicyTable::set(const std::string& op, DeviceType device, CastPolicy policy) {
  const OpPolicy& r = row(op, "amp::set_policy");
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = overrides_.find(op);
  PolicyRow o = it != overrides_.end() ? it->second : PolicyRow{op, r.cpu, r.cuda};
  (device == DeviceType::CPU ? o.cpu : o.cuda) = policy;
  overrides_[op] = o;
  has_overrides_.store(true, std::memory_order_release);
}

void PolicyTable::reset(const std::string& op) {
  row(op, "amp::reset_policy");
  std::lock_guard<std::mutex> lock(mutex_);
  overrides_.erase(op);
  has_overrides_.store(!overrides_.empty(), std::memory_order_release);
}

std::vector<PolicyRow> PolicyTable::rows() const {
  std::vector<PolicyRow> out;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [name, r] : by_name_) {
    auto it = overrides_.find(name);
    out.push_back(it != overrides_.end() ? it->second : PolicyRow{name, r->cpu, r->cuda});
  }
  return out;
}

void PolicyTable::print(std::ostream& os) const {
  os << std::left << std::setw(34) << "op" << std::setw(20) << "cpu" << "cuda\n";
  for (const PolicyRow& r : rows())
    os << std::setw(34) << r.op << std::setw(20) << policy_name(r.cpu) << policy_name(r.cuda) << '\n';
  os << std::setw(34) << "(every other op)" << std::setw(20) << "none" << "none\n";
}

}  // namespace minidl::amp
