// Gradient clipping: one pass over each contiguous CPU gradient to measure, one to scale; other
// devices and layouts go through the op library.
#include "nn/clip_grad.h"

#include <algorithm>
#include <cmath>

#include "framework/grad_mode.h"
#include "framework/error.h"
#include "framework/half.h"
#include "ops/ops.h"

namespace minidl::nn::utils {

namespace {
std::vector<Tensor> grads_of(const std::vector<Tensor>& parameters) {
  std::vector<Tensor> gs;
  for (const Tensor& p : parameters) {
    if (!p.defined()) continue;
    Tensor g = p.grad();
    if (g.defined()) gs.push_back(g.detach());
  }
  return gs;
}

bool fast_path(const Tensor& g) { return g.device().is_cpu() && g.is_contiguous() && g.is_floating_point(); }

// sum |x|^p (or max |x| when p is infinite) over one gradient, in double.
double partial_norm(const Tensor& g, double p) {
  const bool inf = std::isinf(p);
  if (!fast_path(g)) {
    Tensor a = abs(cast(g, DType::F64));
    if (inf) return g.numel() ? max(a).item() : 0.0;
    if (p == 2.0) return sum(mul(a, a)).item();
    if (p == 1.0) return sum(a).item();
    return sum(pow(a, p)).item();
  }
  return visit_floating(g.dtype(), "clip_grad_norm_", [&]<class T>() -> double {
    using C = compute_t<T>;
    const T* src = static_cast<const T*>(g.raw_data());
    const int64_t n = g.numel();
    constexpr int64_t kBlock = 1024;
    C buf[kBlock];
    double acc = 0.0;
    for (int64_t start = 0; start < n; start += kBlock) {
      const int64_t m = std::min(kBlock, n - start);
      load_block(src + start, buf, m);
      if (inf) {
        for (int64_t i = 0; i < m; ++i) {
          const double a = std::fabs(static_cast<double>(buf[i]));
          if (!(a <= acc)) acc = a;  // NaN propagates
        }
      } else if (p == 2.0 || p == 1.0) {
        // 8 independent accumulators: vectorizes without reassociating, so the result is the same
        // on every machine and thread count.
        double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t i = 0;
        if (p == 2.0) {
          for (; i + 8 <= m; i += 8)
            for (int k = 0; k < 8; ++k) s[k] += static_cast<double>(buf[i + k]) * static_cast<double>(buf[i + k]);
          for (; i < m; ++i) s[0] += static_cast<double>(buf[i]) * static_cast<double>(buf[i]);
        } else {
          for (; i + 8 <= m; i += 8)
            for (int k = 0; k < 8; ++k) s[k] += std::fabs(static_cast<double>(buf[i + k]));
          for (; i < m; ++i) s[0] += std::fabs(static_cast<double>(buf[i]));
        }
        acc += ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
      } else {
        for (int64_t i = 0; i < m; ++i) acc += std::pow(std::fabs(static_cast<double>(buf[i])), p);
      }
    }
    return acc;
  });
}

void scale_(const Tensor& g, double coef) {
  if (!fast_path(g)) {
    g.mul_(coef);
    return;
  }
  visit_floating(g.dtype(), "clip_grad_norm_", [&]<class T>() {
    using C = compute_t<T>;
    T* data = static_cast<T*>(g.raw_data());
    const C c = static_cast<C>(coef);
    if constexpr (std::is_same_v<T, C>) {
      for (int64_t i = 0, n = g.numel(); i < n; ++i) data[i] *= c;
    } else {
      constexpr int64_t kBlock = 1024;
      C buf[kBlock];
      for (int64_t start = 0, n = g.numel(); start < n; start += kBlock) {
        const int64_t m = std::min(kBlock, n - start);
        load_block(data + start, buf, m);
        for (int64_t i = 0; i < m; ++i) buf[i] *= c;
        store_block(buf, data + start, m);
      }
    }
  });
  g.bump_version();
}
}  // namespace

double grad_norm(const std::vector<Tensor>& parameters, double norm_type) {
  MINIDL_CHECK(norm_type > 0, "clip_grad_norm_", "norm_type must be positive (or infinity), got ", norm_type);
  NoGradGuard ng;
  const bool inf = std::isinf(norm_type);
  double acc = 0.0;
  for (const Tensor& g : grads_of(parameters)) {
    const double part = partial_norm(g, norm_type);
    if (inf) acc = (std::isnan(part) || part > acc) ? part : acc;
    else acc += part;
    if (std::isnan(acc)) break;
  }
  if (inf || norm_type == 1.0) return acc;
  if (norm_type == 2.0) return std::sqrt(acc);
  return std::pow(acc, 1.0 / norm_type);
}

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type, bool error_if_nonfinite) {
  const double total = grad_norm(parameters, norm_type);
  if (error_if_nonfinite && !std::isfinite(total))
    MINIDL_FAIL("clip_grad_norm_", "The total norm of order ", norm_type,
                " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and "
                "scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`");
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1.0 || std::isnan(coef)) {
    NoGradGuard ng;
    for (const Tensor& g : grads_of(parameters)) scale_(g, coef);
  }
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  MINIDL_CHECK(clip_value >= 0, "clip_grad_value_", "clip_value must be non-negative, got ", clip_value);
  NoGradGuard ng;
  for (const Tensor& g : grads_of(parameters)) {
    if (!fast_path(g)) {
      g.copy_(clamp(g, -clip_value, clip_value));
      continue;
    }
    visit_floating(g.dtype(), "clip_grad_value_", [&]<class T>() {
      using C = compute_t<T>;
      T* data = static_cast<T*>(g.raw_data());
      const C hi = static_cast<C>(clip_value), lo = -hi;
      constexpr int64_t kBlock = 1024;
      C buf[kBlock];
      for (int64_t start = 0, n = g.numel(); start < n; start += kBlock) {
        const int64_t m = std::min(kBlock, n - start);
        load_block(data + start, buf, m);
        for (int64_t i = 0; i < m; ++i) {
          const C x = buf[i];
          buf[i] = x < lo ? lo : (x > hi ? hi : x);  // NaN compares false: kept
        }
        store_block(buf, data + start, m);
      }
    });
    g.bump_version();
  }
}

}  // namespace minidl::nn::utils
