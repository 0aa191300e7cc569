// CPU kernel of the foreach SGD step: one fused pass per parameter (torch.optim.SGD's update, see
// optim/sgd.h), computed in the parameter's compute type.
#include "ops/cpu/foreach_update.h"
#include "ops/kernels.h"

namespace minidl::kernels::cpu {

namespace {
template <class T>
void sgd_one(const Tensor& p, const Tensor& g, const Tensor& buf, bool first, const SgdHyper& h) {
  using C = compute_t<T>;
  const C lr = static_cast<C>(h.lr), wd = static_cast<C>(h.weight_decay), mom = static_cast<C>(h.momentum);
  const C keep = static_cast<C>(1.0 - h.dampening);
  with_flag(h.maximize, [&](auto maximize) {
  with_flag(h.weight_decay != 0.0, [&](auto use_wd) {
  with_flag(buf.defined(), [&](auto use_momentum) {
  with_flag(first, [&](auto first_step) {
  with_flag(h.nesterov, [&](auto nesterov) {
    fused_update<T>(p.numel(), data_or_null<T>(g), {data_or_null<T>(p), data_or_null<T>(buf), nullptr, nullptr},
                    [&](const C* __restrict gr, std::array<C*, 4> a, int64_t n) {
                      // Local copies: the stores below provably cannot change them.
                      const C k_lr = lr, k_wd = wd, k_mom = mom, k_keep = keep;
                      C* __restrict pp = a[0];
                      C* __restrict bb = a[1];
                      // PyTorch's single-tensor SGD op by op: d.add(p, alpha=wd), buf.mul_(momentum)
                      // .add_(d, alpha=1 - dampening), d.add(buf, alpha=momentum), p.add_(d, alpha=-lr),
                      // each add one fmadd and the momentum product rounded on its own.
                      for (int64_t i = 0; i < n; ++i) {
                        C d = maximize ? -gr[i] : gr[i];
                        if constexpr (use_wd) d = fmadd(pp[i], k_wd, d);
                        if constexpr (use_momentum) {
                          const C b = first_step ? d : fmadd(d, k_keep, bb[i] * k_mom);
                          bb[i] = b;
                          d = nesterov ? fmadd(b, k_mom, d) : b;
                        }
                        pp[i] = fmadd(d, -k_lr, pp[i]);
                      }
                    });
  }); }); }); }); });
}

void foreach_sgd(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                 const std::vector<Tensor>& momentum_buffers, bool first_step, const SgdHyper& h) {
  if (params.empty()) return;
  visit_floating(params[0].dtype(), "foreach_sgd_", [&]<class T>() {
    for (size_t i = 0; i < params.size(); ++i)
      sgd_one<T>(params[i], grads[i], momentum_buffers.empty() ? Tensor() : momentum_buffers[i], first_step, h);
  });
}
}  // namespace

void register_foreach_sgd(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) r.foreach_sgd.set(DeviceType::CPU, t, foreach_sgd);
}

}  // namespace minidl::kernels::cpu
