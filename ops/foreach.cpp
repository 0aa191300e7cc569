// The foreach ops (ops/foreach.h): argument checks, grouping by (device, dtype), contiguous
// staging, and dispatch of each group to its kernel family (ops/cpu/foreach_*.cpp,
// ops/cuda/amp.cu, ops/cuda/foreach.cu).
#include "ops/foreach.h"

#include <cmath>
#include <utility>

#include "framework/grad_mode.h"
#include "framework/error.h"
#include "ops/ops.h"

namespace minidl {

namespace {
const kernels::Registry& K() { return kernels::registry(); }

// Every tensor of `list` is defined and floating.
void check_floating(const char* op, const char* what, const std::vector<Tensor>& list) {
  for (size_t i = 0; i < list.size(); ++i) {
    MINIDL_CHECK(list[i].defined(), op, what, "[", i, "] is an undefined tensor");
    MINIDL_CHECK(list[i].is_floating_point(), op, "expected floating tensors, got ", what, "[", i, "] ",
                 list[i].meta_str());
  }
}

// `list` holds one tensor per lead tensor, each with its lead's shape, device and dtype.
void check_matching(const char* op, const std::vector<Tensor>& lead, const char* lead_name,
                    const std::vector<Tensor>& list, const char* what) {
  MINIDL_CHECK(list.size() == lead.size(), op, "expected one ", what, " per ", lead_name, " (", lead.size(),
               "), got ", list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    MINIDL_CHECK(list[i].defined(), op, what, "[", i, "] is an undefined tensor");
    MINIDL_CHECK(list[i].shape() == lead[i].shape() && list[i].device() == lead[i].device() &&
                     list[i].dtype() == lead[i].dtype(),
                 op, what, "[", i, "] is ", list[i].meta_str(), " but ", lead_name, "[", i, "] is ",
                 lead[i].meta_str(), " (expected the same shape, device and dtype)");
  }
}

// The indices of `lead` grouped by (device, dtype), groups and members in list order.
std::vector<std::vector<size_t>> groups_of(const std::vector<Tensor>& lead) {
  std::vector<std::pair<std::pair<Device, DType>, std::vector<size_t>>> groups;
  for (size_t i = 0; i < lead.size(); ++i) {
    const std::pair<Device, DType> key{lead[i].device(), lead[i].dtype()};
    auto it = groups.begin();
    while (it != groups.end() && it->first != key) ++it;
    if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
    it->second.push_back(i);
  }
  std::vector<std::vector<size_t>> out;
  for (auto& g : groups) out.push_back(std::move(g.second));
  return out;
}

// The members `idx` of a list, each contiguous: the tensor itself or a contiguous copy. commit()
// ends an in-place update: copies are written back, the others get their version bumped.
struct Staged {
  std::vector<Tensor> originals, work;
  Staged(const std::vector<Tensor>& list, const std::vector<size_t>& idx) {
    for (size_t i : idx) {
      originals.push_back(list[i]);
      work.push_back(list[i].contiguous());
    }
  }
  void commit() const {
    for (size_t k = 0; k < work.size(); ++k) {
      if (work[k].is_same(originals[k])) originals[k].bump_version();
      else originals[k].copy_(work[k]);
    }
  }
};

// One (device, dtype) group's per-tensor sums |x|^p (or max |x| when p is infinite): an f64
// [members] tensor on the group's device, and the members' indices in the list.
struct GroupNorms {
  std::vector<size_t> idx;
  Tensor partials;
};

std::vector<GroupNorms> norm_partials(const char* op, const std::vector<Tensor>& tensors, double p) {
  MINIDL_CHECK(p > 0, op, "norm_type must be positive (or infinity), got ", p);
  check_floating(op, "tensors", tensors);
  NoGradGuard ng;
  std::vector<GroupNorms> out;
  for (auto& idx : groups_of(tensors)) {
    const Tensor& first = tensors[idx[0]];
    Tensor partials = empty({static_cast<int64_t>(idx.size())}, TensorOptions(DType::F64).device(first.device()));
    K().foreach_norm.get(first.device(), first.dtype(), op)(Staged(tensors, idx).work, p, partials);
    out.push_back({std::move(idx), partials});
  }
  return out;
}

double root(double partial, double p) {
  if (std::isinf(p) || p == 1.0) return partial;
  if (p == 2.0) return std::sqrt(partial);
  return std::pow(partial, 1.0 / p);
}
}  // namespace

std::vector<NonFiniteCount> foreach_non_finite_check_and_unscale_(const std::vector<Tensor>& tensors, float inv_scale,
                                                                  bool count) {
  constexpr const char* op = "foreach_non_finite_check_and_unscale_";
  check_floating(op, "tensors", tensors);
  NoGradGuard ng;
  std::vector<NonFiniteCount> out(tensors.size()), part;
  for (const auto& idx : groups_of(tensors)) {
    const Tensor& first = tensors[idx[0]];
    const Staged s(tensors, idx);
    K().foreach_unscale.get(first.device(), first.dtype(), op)(s.work, inv_scale, count, part);
    s.commit();
    for (size_t k = 0; k < idx.size(); ++k) out[idx[k]] = part[k];
  }
  return out;
}

std::vector<double> foreach_norm(const std::vector<Tensor>& tensors, double p) {
  std::vector<double> norms(tensors.size(), 0.0);
  for (const GroupNorms& g : norm_partials("foreach_norm", tensors, p)) {
    const std::vector<double> h = g.partials.to_vector<double>();  // the host reads the values
    for (size_t k = 0; k < g.idx.size(); ++k) norms[g.idx[k]] = root(h[k], p);
  }
  return norms;
}

Tensor foreach_total_norm(const std::vector<Tensor>& tensors, double p) {
  std::vector<GroupNorms> groups = norm_partials("foreach_total_norm", tensors, p);
  NoGradGuard ng;
  if (groups.empty()) return scalar_tensor(0.0, DType::F64);
  const Device dev = tensors[0].device();
  std::vector<Tensor> parts;
  for (const GroupNorms& g : groups) parts.push_back(g.partials.to(dev));
  const Tensor all = parts.size() == 1 ? parts[0] : cat(parts);
  if (std::isinf(p)) return max(all);  // NaN wins, as in each partial
  const Tensor sum_p = sum(all);
  if (p == 1.0) return sum_p;
  if (p == 2.0) return sqrt(sum_p);
  return pow(sum_p, 1.0 / p);
}

void foreach_mul_(const std::vector<Tensor>& tensors, double factor) {
  constexpr const char* op = "foreach_mul_";
  check_floating(op, "tensors", tensors);
  NoGradGuard ng;
  for (const auto& idx : groups_of(tensors)) {
    const Tensor& first = tensors[idx[0]];
    const Staged s(tensors, idx);
    K().foreach_scale.get(first.device(), first.dtype(), op)(s.work, factor);
    s.commit();
  }
}

void foreach_mul_(const std::vector<Tensor>& tensors, const Tensor& scalar) {
  constexpr const char* op = "foreach_mul_";
  check_floating(op, "tensors", tensors);
  MINIDL_CHECK(scalar.defined(), op, "the scalar is an undefined tensor");
  MINIDL_CHECK(scalar.dim() == 0 && scalar.is_floating_point(), op,
               "the scalar must be a 0-dim floating tensor, got ", scalar.meta_str());
  NoGradGuard ng;
  for (const auto& idx : groups_of(tensors)) {
    const Tensor& first = tensors[idx[0]];
    // As PyTorch's in-place t.mul_(scalar): the scalar in t's dtype, moved to t's device (no wait).
    const Tensor s_on = cast(scalar.detach(), first.dtype()).to(first.device()).contiguous();
    const Staged s(tensors, idx);
    K().foreach_scale_by_tensor.get(first.device(), first.dtype(), op)(s.work, s_on);
    s.commit();
  }
}

void foreach_sgd_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                  const std::vector<Tensor>& momentum_buffers, bool first_step, const SgdHyper& h) {
  constexpr const char* op = "foreach_sgd_";
  check_floating(op, "params", params);
  check_matching(op, params, "params", grads, "grads");
  if (h.momentum != 0.0) check_matching(op, params, "params", momentum_buffers, "momentum_buffers");
  else MINIDL_CHECK(momentum_buffers.empty(), op, "momentum_buffers must be empty when momentum is 0");
  NoGradGuard ng;
  for (const auto& idx : groups_of(params)) {
    const Tensor& first = params[idx[0]];
    const std::vector<size_t> none;
    const Staged p(params, idx), g(grads, idx), b(momentum_buffers, h.momentum != 0.0 ? idx : none);
    K().foreach_sgd.get(first.device(), first.dtype(), op)(p.work, g.work, b.work, first_step, h);
    p.commit();
    b.commit();
  }
}

void foreach_adam_(const AdamLists& l, const AdamHyper& h) {
  constexpr const char* op = "foreach_adam_";
  check_floating(op, "params", l.params);
  check_matching(op, l.params, "params", l.grads, "grads");
  check_matching(op, l.params, "params", l.exp_avg, "exp_avg");
  check_matching(op, l.params, "params", l.exp_avg_sq, "exp_avg_sq");
  if (h.amsgrad) check_matching(op, l.params, "params", l.max_exp_avg_sq, "max_exp_avg_sq");
  else MINIDL_CHECK(l.max_exp_avg_sq.empty(), op, "max_exp_avg_sq must be empty without amsgrad");
  MINIDL_CHECK(l.steps.size() == l.params.size(), op, "expected one step count per parameter (", l.params.size(),
               "), got ", l.steps.size());
  NoGradGuard ng;
  for (const auto& idx : groups_of(l.params)) {
    const Tensor& first = l.params[idx[0]];
    const std::vector<size_t> none;
    const Staged p(l.params, idx), g(l.grads, idx), m(l.exp_avg, idx), v(l.exp_avg_sq, idx),
        vmax(l.max_exp_avg_sq, h.amsgrad ? idx : none);
    AdamLists group{p.work, g.work, m.work, v.work, vmax.work, {}};
    for (size_t i : idx) group.steps.push_back(l.steps[i]);
    K().foreach_adam.get(first.device(), first.dtype(), op)(group, h);
    for (const Staged* s : {&p, &m, &v, &vmax}) s->commit();
  }
}

}  // namespace minidl
