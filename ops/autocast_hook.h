// The ops' side of autocast: the hook a policy-wrapped op calls first, and the policy table built
// from the OpPolicy rows that the op families declare beside their ops. An op consults autocast
// exactly once, at its public entry; composite ops call the implementations of their parts, and
// any op called while a policy-wrapped op runs is not re-cast (as PyTorch's autocast dispatch key).
//
//   const amp::OpPolicy kMm{"mm", P::LowerPrecision, P::LowerPrecision};   // in ops/linear.cpp
//   Tensor mm(const Tensor& a, const Tensor& b) {
//     amp::AutocastInputs in(kMm, {a, b});
//     return mm_impl(in[0], in[1]);
//   }
#pragma once
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "autocast/policy.h"
#include "autocast/state.h"
#include "ops/node.h"

namespace minidl::amp {

// Casts an op's inputs per its policy when autocast applies (enabled for the device of the first
// defined input, not already inside a policy-wrapped op, policy not None), and marks the op as
// running for its lifetime. Otherwise the inputs pass through unchanged. Throws for Banned ops.
class AutocastInputs {
 public:
  // Takes the list by value: the braced list at the call site moves in, so no op pays a copy.
  AutocastInputs(const OpPolicy& op, autograd::TensorList inputs);
  const Tensor& operator[](size_t i) const { return inputs_[i]; }
  const autograd::TensorList& list() const { return inputs_; }
  AutocastInputs(const AutocastInputs&) = delete;
  AutocastInputs& operator=(const AutocastInputs&) = delete;

 private:
  autograd::TensorList inputs_;
  std::optional<OpScope> scope_;
};

// Casts x to dtype for autocast: eligible tensors only (defined, floating, not f64, on `device`),
// through the region's cache for f32 parameters (leaves that require grad). Others pass unchanged.
Tensor autocast_cast(const Tensor& x, DType dtype, DeviceType device);

// ---- the policy table (every op that consults autocast, and only those)
PolicyTable& policies();
CastPolicy policy_for(const std::string& op, DeviceType device);  // None for ops not in the table
// Run-time override for one op on one device type; reset_policy restores the declared entry.
// Both throw for an op that does not consult autocast.
void set_policy(const std::string& op, DeviceType device, CastPolicy policy);
void reset_policy(const std::string& op);
std::vector<PolicyRow> policy_table();  // current table (overrides applied), sorted by op
void print_policy(std::ostream& os);    // a readable table
void print_policy();                    // to stdout

}  // namespace minidl::amp

namespace minidl::ops_detail {
// The autocast policies each op family declares (defined in that family's file).
std::vector<const amp::OpPolicy*> linear_policies();
std::vector<const amp::OpPolicy*> conv_policies();
std::vector<const amp::OpPolicy*> loss_policies();
std::vector<const amp::OpPolicy*> pointwise_loss_policies();
std::vector<const amp::OpPolicy*> unary_policies();
std::vector<const amp::OpPolicy*> binary_policies();
std::vector<const amp::OpPolicy*> activation_policies();
std::vector<const amp::OpPolicy*> softmax_policies();
std::vector<const amp::OpPolicy*> reduce_policies();
std::vector<const amp::OpPolicy*> join_policies();
std::vector<const amp::OpPolicy*> pool_policies();
std::vector<const amp::OpPolicy*> batch_norm_policies();
std::vector<const amp::OpPolicy*> norm_policies();
std::vector<const amp::OpPolicy*> attention_policies();
std::vector<const amp::OpPolicy*> pad_policies();
std::vector<const amp::OpPolicy*> scan_policies();
std::vector<const amp::OpPolicy*> index_policies();
std::vector<const amp::OpPolicy*> math_policies();
std::vector<const amp::OpPolicy*> diagonal_policies();
std::vector<const amp::OpPolicy*> distance_policies();
std::vector<const amp::OpPolicy*> margin_loss_policies();
std::vector<const amp::OpPolicy*> recurrent_policies();
std::vector<const amp::OpPolicy*> grid_sample_policies();
std::vector<const amp::OpPolicy*> ctc_loss_policies();
}  // namespace minidl::ops_detail
