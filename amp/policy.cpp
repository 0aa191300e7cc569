#include "amp/policy.h"

#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>

namespace minidl::amp {

namespace {
using P = CastPolicy;

// The built-in table. CPU follows PyTorch's CPU autocast lists, CUDA its CUDA lists, restricted to
// ops minidl has. Ops absent here are None on both devices (element-wise math, activations,
// reductions on CPU, views, pooling, dropout, batch_norm, ...).
const std::map<std::string, PolicyRow>& builtin() {
  static const std::map<std::string, PolicyRow> table = [] {
    std::map<std::string, PolicyRow> t;
    auto add = [&](const char* op, P cpu, P cuda) { t[op] = {op, cpu, cuda}; };
    for (const char* op : {"mm", "bmm", "matmul", "addmm", "linear", "conv2d", "conv_transpose2d"})
      add(op, P::LowerPrecision, P::LowerPrecision);
    for (const char* op : {"cross_entropy", "nll_loss", "mse_loss", "l1_loss", "binary_cross_entropy_with_logits"})
      add(op, P::FP32, P::FP32);
    add("binary_cross_entropy", P::FP32, P::Banned);
    for (const char* op : {"exp", "log", "pow", "rsqrt", "softplus", "layer_norm", "group_norm"})
      add(op, P::None, P::FP32);
    for (const char* op : {"softmax", "log_softmax", "sum"}) add(op, P::None, P::FP32SetOptDtype);
    for (const char* op : {"cat", "stack"}) add(op, P::Promote, P::None);
    return t;
  }();
  return table;
}

std::mutex g_mutex;
std::map<std::string, PolicyRow>& overrides() {
  static std::map<std::string, PolicyRow> o;
  return o;
}
}  // namespace

const char* policy_name(CastPolicy p) {
  switch (p) {
    case P::LowerPrecision: return "lower_precision";
    case P::FP32: return "fp32";
    case P::FP32SetOptDtype: return "fp32_set_opt_dtype";
    case P::Promote: return "promote";
    case P::Banned: return "banned";
    case P::None: return "none";
  }
  return "?";
}

CastPolicy policy_for(const std::string& op, DeviceType device) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto& o = overrides();
    if (!o.empty()) {
      auto it = o.find(op);
      if (it != o.end()) return device == DeviceType::CPU ? it->second.cpu : it->second.cuda;
    }
  }
  auto it = builtin().find(op);
  if (it == builtin().end()) return P::None;
  return device == DeviceType::CPU ? it->second.cpu : it->second.cuda;
}

void set_policy(const std::string& op, DeviceType device, CastPolicy policy) {
  PolicyRow row{op, policy_for(op, DeviceType::CPU), policy_for(op, DeviceType::CUDA)};
  (device == DeviceType::CPU ? row.cpu : row.cuda) = policy;
  std::lock_guard<std::mutex> lock(g_mutex);
  overrides()[op] = row;
}

void reset_policy(const std::string& op) {
  std::lock_guard<std::mutex> lock(g_mutex);
  overrides().erase(op);
}

std::vector<PolicyRow> policy_table() {
  std::map<std::string, PolicyRow> t = builtin();
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (auto& [op, row] : overrides()) t[op] = row;
  }
  std::vector<PolicyRow> rows;
  for (auto& [op, row] : t) rows.push_back(row);
  return rows;
}

void print_policy(std::ostream& os) {
  os << std::left << std::setw(34) << "op" << std::setw(20) << "cpu" << "cuda\n";
  for (const PolicyRow& r : policy_table())
    os << std::setw(34) << r.op << std::setw(20) << policy_name(r.cpu) << policy_name(r.cuda) << '\n';
  os << std::setw(34) << "(every other op)" << std::setw(20) << "none" << "none\n";
}

void print_policy() { print_policy(std::cout); }

}  // namespace minidl::amp
