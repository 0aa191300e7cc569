// CPU cumulative sum and product kernel (ops/kernels.h ScanFn). x is seen as [outer, n, inner]; each job takes
// one outer slice and a block of up to kBlock inner columns and walks the n rows (forward, or
// backward for the reverse scan) with one accumulator per column, so rows of the last dim
// (inner 1) and columns of an earlier one both read memory in order, accumulating in
// scan_accumulator_t; each output rounded once.
#include <algorithm>
#include <array>

#include "ops/cpu/loops.h"
#include "ops/cpu/scalar.h"
#include "ops/kernels.h"

namespace minidl::kernels::cpu {

namespace {

void scan(ScanOp op, const Tensor& out, const Tensor& x, int64_t dim, bool reverse) {
  const Split3 s = split_at(x.shape(), dim);
  if (s.mid == 0 || s.outer == 0 || s.inner == 0) return;
  visit_dtype(x.dtype(), op == ScanOp::Sum ? "cumsum" : "cumprod", [&]<class T>() {
    using Acc = scan_accumulator_t<T, is_low_precision_v<T>>;
    const T* px = static_cast<const T*>(x.raw_data());
    T* po = static_cast<T*>(out.raw_data());
    const int64_t blocks = (s.inner + kBlock - 1) / kBlock;
    parallel_for(s.outer * blocks, s.mid * std::min(s.inner, kBlock), [&](int64_t b, int64_t e) {
      std::array<Acc, kBlock> acc;
      for (int64_t job = b; job < e; ++job) {
        const int64_t o = job / blocks, c0 = (job % blocks) * kBlock, width = std::min(kBlock, s.inner - c0);
        std::fill_n(acc.begin(), width, op == ScanOp::Sum ? Acc{0} : Acc{1});
        for (int64_t step = 0; step < s.mid; ++step) {
          const int64_t row = reverse ? s.mid - 1 - step : step;
          const int64_t at = (o * s.mid + row) * s.inner + c0;
          if (op == ScanOp::Sum)
            for (int64_t c = 0; c < width; ++c) po[at + c] = cast_scalar<T>(acc[c] += cast_scalar<Acc>(px[at + c]));
          else
            for (int64_t c = 0; c < width; ++c) po[at + c] = cast_scalar<T>(acc[c] *= cast_scalar<Acc>(px[at + c]));
        }
      }
    });
  });
}
}  // namespace

void register_scan(Registry& r) { r.scan.set_all(DeviceType::CPU, scan); }

}  // namespace minidl::kernels::cpu
