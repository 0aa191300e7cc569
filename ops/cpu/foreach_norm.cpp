// CPU kernel of the foreach norm family (clip_grad_norm_'s measure): per tensor, the sum of |x|^p
// or, for p = inf, max |x|, accumulated in double. The sums for p = 1 and 2 use 8 independent
// accumulators in a fixed order: they vectorize without reassociating, so the result is the same
// on every machine and thread count.
#include <cmath>

#include "ops/cpu/convert.h"
#include "ops/cpu/loops.h"
#include "ops/kernels.h"

namespace minidl::kernels::cpu {

namespace {
template <class C, class Term>
double sum8(const C* buf, int64_t m, Term term) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= m; i += 8)
    for (int k = 0; k < 8; ++k) s[k] += term(static_cast<double>(buf[i + k]));
  for (; i < m; ++i) s[0] += term(static_cast<double>(buf[i]));
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

template <class T>
double norm_one(const T* src, int64_t n, double p) {
  using C = compute_t<T>;
  const bool inf = std::isinf(p);
  constexpr int64_t kNormBlock = 1024;
  C buf[kNormBlock];
  double acc = 0.0;
  for (int64_t start = 0; start < n; start += kNormBlock) {
    const int64_t m = std::min(kNormBlock, n - start);
    load_block(src + start, buf, m);
    if (inf) {
      for (int64_t i = 0; i < m; ++i) {
        const double a = std::fabs(static_cast<double>(buf[i]));
        if (!(a <= acc) && acc == acc) acc = a;  // a NaN is taken and then kept
      }
    } else if (p == 2.0) {
      acc += sum8(buf, m, [](double x) { return x * x; });
    } else if (p == 1.0) {
      acc += sum8(buf, m, [](double x) { return std::fabs(x); });
    } else {
      for (int64_t i = 0; i < m; ++i) acc += std::pow(std::fabs(static_cast<double>(buf[i])), p);
    }
  }
  return acc;
}

void foreach_norm(const std::vector<Tensor>& tensors, double p, const Tensor& out) {
  if (tensors.empty()) return;
  double* o = static_cast<double*>(out.raw_data());
  visit_floating(tensors[0].dtype(), "foreach_norm", [&]<class T>() {
    for (size_t i = 0; i < tensors.size(); ++i)
      o[i] = norm_one<T>(static_cast<const T*>(tensors[i].raw_data()), tensors[i].numel(), p);
  });
}
}  // namespace

void register_foreach_norm(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) r.foreach_norm.set(DeviceType::CPU, t, foreach_norm);
}

}  // namespace minidl::kernels::cpu
