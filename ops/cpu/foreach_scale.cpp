// CPU kernels of the foreach in-place multiply by one scalar (clip_grad_norm_'s clip coefficient):
// t *= factor for every tensor, in the compute type (low precision widened block by block). The
// factor is a double, or a 0-dim tensor of the tensors' dtype read once per call.
#include <type_traits>

#include "ops/cpu/convert.h"
#include "ops/cpu/loops.h"
#include "ops/kernels.h"

namespace minidl::kernels::cpu {

namespace {
template <class T>
void scale_one(T* data, int64_t n, compute_t<T> c) {
  using C = compute_t<T>;
  if constexpr (std::is_same_v<T, C>) {
    for (int64_t i = 0; i < n; ++i) data[i] *= c;
  } else {
    constexpr int64_t kScaleBlock = 1024;
    C buf[kScaleBlock];
    for (int64_t start = 0; start < n; start += kScaleBlock) {
      const int64_t m = std::min(kScaleBlock, n - start);
      load_block(data + start, buf, m);
      for (int64_t i = 0; i < m; ++i) buf[i] *= c;
      store_block(buf, data + start, m);
    }
  }
}

void foreach_scale(const std::vector<Tensor>& tensors, double factor) {
  if (tensors.empty()) return;
  visit_floating(tensors[0].dtype(), "foreach_mul_", [&]<class T>() {
    for (const Tensor& t : tensors) scale_one<T>(static_cast<T*>(t.raw_data()), t.numel(), static_cast<compute_t<T>>(factor));
  });
}

void foreach_scale_by_tensor(const std::vector<Tensor>& tensors, const Tensor& scalar) {
  if (tensors.empty()) return;
  visit_floating(tensors[0].dtype(), "foreach_mul_", [&]<class T>() {
    compute_t<T> c;
    load_block(static_cast<const T*>(scalar.raw_data()), &c, 1);
    for (const Tensor& t : tensors) scale_one<T>(static_cast<T*>(t.raw_data()), t.numel(), c);
  });
}
}  // namespace

void register_foreach_scale(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    r.foreach_scale.set(DeviceType::CPU, t, foreach_scale);
    r.foreach_scale_by_tensor.set(DeviceType::CPU, t, foreach_scale_by_tensor);
  }
}

}  // namespace minidl::kernels::cpu
