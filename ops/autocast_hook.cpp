#include "ops/autocast_hook.h"

#include <iostream>

#include "autocast/cast_cache.h"
#include "framework/error.h"
#include "framework/grad_mode.h"
#include "ops/ops.h"

namespace minidl::amp {

namespace {
bool eligible(const Tensor& t, DeviceType device) {
  return t.defined() && t.is_floating_point() && t.dtype() != DType::F64 && t.device().type == device;
}

// PyTorch's prioritize: start from the autocast dtype; an f32 input (or an f32 seen so far) makes it
// f32; f64 inputs are ignored; another low-precision dtype is an error. nullopt: nothing eligible.
std::optional<DType> promote_target(const char* op, const autograd::TensorList& inputs, DeviceType device) {
  const DType low = get_autocast_dtype(device);
  DType target = low;
  bool any = false;
  for (const Tensor& t : inputs) {
    if (!eligible(t, device)) continue;
    any = true;
    if (target == DType::F32 || t.dtype() == DType::F32) {
      target = DType::F32;
    } else {
      MINIDL_CHECK(t.dtype() == low, op, "autocast Promote: unexpected ", dtype_name(t.dtype()), " input in a ",
                   dtype_name(low), " autocast region (f16 and bf16 cannot be mixed; inputs may be f32, f64 or ",
                   dtype_name(low), ")");
    }
  }
  if (!any) return std::nullopt;
  return target;
}
}  // namespace

AutocastInputs::AutocastInputs(const OpPolicy& op, autograd::TensorList inputs) : inputs_(std::move(inputs)) {
  if (active_op_policy()) return;  // inside a policy-wrapped op: its casts hold
  const Tensor* first = nullptr;
  for (const Tensor& t : inputs_)
    if (t.defined()) {
      first = &t;
      break;
    }
  if (!first) return;
  const DeviceType device = first->device().type;
  if (!is_autocast_enabled(device)) return;
  const CastPolicy policy = policies().lookup(op, device);
  if (policy == CastPolicy::None) return;
  if (policy == CastPolicy::Banned)
    MINIDL_FAIL(op.op, "is unsafe to autocast. Many models use a sigmoid layer right before the binary cross entropy "
                       "layer; combine the two with binary_cross_entropy_with_logits (nn::BCEWithLogitsLoss), which is "
                       "safe to autocast");
  DType target = DType::F32;
  if (policy == CastPolicy::LowerPrecision) {
    target = get_autocast_dtype(device);
  } else if (policy == CastPolicy::Promote) {
    std::optional<DType> t = promote_target(op.op, inputs_, device);
    if (!t) return;
    target = *t;
  }
  scope_.emplace(policy);
  for (Tensor& t : inputs_) t = autocast_cast(t, target, device);
}

Tensor autocast_cast(const Tensor& x, DType dtype, DeviceType device) {
  if (!eligible(x, device) || x.dtype() == dtype) return x;
  // Parameters (f32 leaves that require grad) cast to a lower precision are cached for the region.
  const bool cacheable = is_autocast_cache_enabled() && !InferenceMode::is_enabled() && x.is_leaf() &&
                         x.requires_grad() && x.dtype() == DType::F32 && is_low_precision(dtype);
  if (!cacheable) return cast(x, dtype);
  if (std::shared_ptr<TensorImpl> hit = find_cached_cast(*x.impl(), dtype)) return Tensor(std::move(hit));
  Tensor c;
  {
    EnableGradGuard grad_on;  // a cast first made under no-grad must still carry gradients later
    c = cast(x, dtype);
  }
  store_cached_cast(x.impl_ptr(), c.impl_ptr());
  return c;
}

namespace {
std::vector<const OpPolicy*> declared_policies() {
  std::vector<const OpPolicy*> rows;
  for (auto family : {ops_detail::linear_policies, ops_detail::conv_policies, ops_detail::loss_policies,
                      ops_detail::unary_policies, ops_detail::binary_policies, ops_detail::activation_policies,
                      ops_detail::softmax_policies, ops_detail::reduce_policies, ops_detail::join_policies,
                      ops_detail::pool_policies, ops_detail::batch_norm_policies, ops_detail::norm_policies,
                      ops_detail::attention_policies, ops_detail::pointwise_loss_policies,
                      ops_detail::pad_policies, ops_detail::scan_policies, ops_detail::index_policies,
                      ops_detail::math_policies, ops_detail::diagonal_policies,
                      ops_detail::distance_policies, ops_detail::margin_loss_policies,
                      ops_detail::recurrent_policies, ops_detail::grid_sample_policies, ops_detail::ctc_loss_policies})
    for (const OpPolicy* p : family()) rows.push_back(p);
  return rows;
}
}  // namespace

PolicyTable& policies() {
  static PolicyTable table(declared_policies());
  return table;
}

CastPolicy policy_for(const std::string& op, DeviceType device) { return policies().lookup(op, device); }
void set_policy(const std::string& op, DeviceType device, CastPolicy policy) { policies().set(op, device, policy); }
void reset_policy(const std::string& op) { policies().reset(op); }
std::vector<PolicyRow> policy_table() { return policies().rows(); }
void print_policy(std::ostream& os) { policies().print(os); }
void print_policy() { print_policy(std::cout); }

}  // namespace minidl::amp
