// CPU kernel of the foreach Adam/AdamW step: one fused pass per parameter (torch.optim.Adam /
// AdamW's single-tensor update, see optim/adam.h), computed in the parameter's compute type with
// PyTorch's per-step scalars computed in double (as Python floats).
#include <cmath>
#include <type_traits>
#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "ops/cpu/foreach_update.h"
#include "ops/kernels.h"

namespace minidl::kernels::cpu {

namespace {
// x <- sqrt(x), correctly rounded (as std::sqrt) and vectorized. Not Eigen's sqrt: under its
// default EIGEN_FAST_MATH, AVX floats take an rsqrt estimate refined by one Newton step, which
// is not correctly rounded, so a parameter's update would depend on where a block boundary falls.
template <class C>
void sqrt_in_place(C* x, int64_t n) {
  int64_t i = 0;
#if defined(__AVX__)
  if constexpr (std::is_same_v<C, float>) {
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_sqrt_ps(_mm256_loadu_ps(x + i)));
  } else {
    for (; i + 4 <= n; i += 4) _mm256_storeu_pd(x + i, _mm256_sqrt_pd(_mm256_loadu_pd(x + i)));
  }
#endif
  for (; i < n; ++i) x[i] = std::sqrt(x[i]);
}

template <class T>
void adam_one(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const Tensor& vmax, int64_t step_count,
              const AdamHyper& h) {
  using C = compute_t<T>;
  const double step = static_cast<double>(step_count);
  const double bias_correction1 = 1.0 - std::pow(h.beta1, step);
  const double bias_correction2_sqrt = std::sqrt(1.0 - std::pow(h.beta2, step));
  const double step_size = h.lr / bias_correction1;
  const C w1 = static_cast<C>(1.0 - h.beta1), beta2 = static_cast<C>(h.beta2), w2 = static_cast<C>(1.0 - h.beta2);
  const C wd = static_cast<C>(h.weight_decay), decay = static_cast<C>(1.0 - h.lr * h.weight_decay);
  const C bc2_sqrt = static_cast<C>(bias_correction2_sqrt), eps = static_cast<C>(h.eps);
  const C neg_step = static_cast<C>(-step_size);
  const bool l2 = !h.decoupled && h.weight_decay != 0.0;
  const bool lerp_low = std::fabs(1.0 - h.beta1) < 0.5;  // torch.lerp's two forms
  with_flag(h.maximize, [&](auto maximize) {
  with_flag(h.decoupled, [&](auto decoupled) {
  with_flag(l2, [&](auto use_l2) {
  with_flag(lerp_low, [&](auto low) {
  with_flag(vmax.defined(), [&](auto amsgrad) {
    fused_update<T>(
        p.numel(), data_or_null<T>(g), {data_or_null<T>(p), data_or_null<T>(m), data_or_null<T>(v), data_or_null<T>(vmax)},
        [&](const C* __restrict gr, std::array<C*, 4> a, int64_t n) {
          // Local copies: the compiler must see that the stores below cannot change them.
          const C k_w1 = w1, k_beta2 = beta2, k_w2 = w2, k_wd = wd, k_decay = decay, k_bc2 = bc2_sqrt, k_eps = eps,
                  k_step = neg_step;
          C* __restrict pp = a[0];
          C* __restrict mm = a[1];
          C* __restrict vv = a[2];
          C* __restrict vm = a[3];
          // Blocks of 256 stay in L1: one loop for the moments, a vectorized sqrt, one loop for the
          // parameter.
          constexpr int64_t kBlock = 256;
          alignas(64) C mb[kBlock];
          alignas(64) C ub[kBlock];
          for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
            const int64_t len = std::min(kBlock, n - b0);
            for (int64_t j = 0; j < len; ++j) {
              const int64_t i = b0 + j;
              C gi = maximize ? -gr[i] : gr[i];
              C pi = pp[i];
              if constexpr (decoupled) pi = pi * k_decay;
              if constexpr (use_l2) gi = fmadd(pi, k_wd, gi);
              const C mo = mm[i];
              // PyTorch 2.x's exp_avg.lerp_(grad, 1 - beta1), as its vectorized lerp: one fmadd from
              // the nearer end. Then exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
              // and, below, param.addcdiv_(exp_avg, denom, value=-step_size), op by op as PyTorch's
              // kernels round them.
              const C mi = low ? fmadd(k_w1, gi - mo, mo) : fmadd(k_w1 - C(1), gi - mo, gi);
              const C vi = fmadd(k_w2 * gi, gi, vv[i] * k_beta2);
              mm[i] = mi;
              vv[i] = vi;
              C used = vi;
              if constexpr (amsgrad) {
                used = vm[i] > vi ? vm[i] : vi;
                vm[i] = used;
              }
              pp[i] = pi;
              mb[j] = mi;
              ub[j] = used;
            }
            sqrt_in_place(ub, len);
            for (int64_t j = 0; j < len; ++j) {
              const C denom = ub[j] / k_bc2 + k_eps;
              pp[b0 + j] = pp[b0 + j] + (k_step * mb[j]) / denom;
            }
          }
        });
  }); }); }); }); });
}

void foreach_adam(const AdamLists& l, const AdamHyper& h) {
  if (l.params.empty()) return;
  visit_floating(l.params[0].dtype(), "foreach_adam_", [&]<class T>() {
    for (size_t i = 0; i < l.params.size(); ++i)
      adam_one<T>(l.params[i], l.grads[i], l.exp_avg[i], l.exp_avg_sq[i],
                  l.max_exp_avg_sq.empty() ? Tensor() : l.max_exp_avg_sq[i], l.steps[i], h);
  });
}
}  // namespace

void register_foreach_adam(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) r.foreach_adam.set(DeviceType::CPU, t, foreach_adam);
}

}  // namespace minidl::kernels::cpu
