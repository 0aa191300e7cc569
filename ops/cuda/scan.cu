// CUDA cumulative sum and product kernel with the CPU kernel's contract (ops/kernels.h ScanFn):
// one thread per (outer, inner) column walks its n values in order (or from the end for the
// reverse scan) in the CPU's accumulator type (scan_accumulator_t), so both backends add in the
// same order and round each output once. Adjacent threads read adjacent
// columns when the scanned dim is not the last; a scan of the last dim reads each row serially.
#include "ops/cuda/common.cuh"

namespace minidl::kernels::cuda {

namespace {
template <class T>
using scan_acc_t = scan_accumulator_t<T, is_low_v<T>>;

template <class T>
__global__ void scan_kernel(T* out, const T* x, Split3 s, int64_t columns, bool product, bool reverse) {
  for (int64_t col = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; col < columns; col += int64_t{gridDim.x} * blockDim.x) {
    const int64_t o = col / s.inner, c = col % s.inner;
    scan_acc_t<T> acc = product ? scan_acc_t<T>{1} : scan_acc_t<T>{0};
    for (int64_t step = 0; step < s.mid; ++step) {
      const int64_t row = reverse ? s.mid - 1 - step : step;
      const int64_t at = (o * s.mid + row) * s.inner + c;
      const scan_acc_t<T> v = convert<scan_acc_t<T>>(x[at]);
      acc = product ? acc * v : acc + v;
      out[at] = convert<T>(acc);
    }
  }
}

void scan(ScanOp op, const Tensor& out, const Tensor& x, int64_t dim, bool reverse) {
  minidl::cuda::DeviceGuard guard(x.device());
  if (x.numel() == 0) return;
  const Split3 s = split_at(x.shape(), dim);
  const int64_t columns = s.outer * s.inner;
  const char* name = op == ScanOp::Sum ? "cumsum" : "cumprod";
  visit(x.dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    scan_kernel<T><<<grid_for(columns, x.device().index), kThreads, 0, stream_of(x)>>>(
        static_cast<T*>(out.raw_data()), static_cast<const T*>(x.raw_data()), s, columns, op == ScanOp::Prod, reverse);
    MINIDL_CUDA_CHECK_LAUNCH(name);
  });
}
}  // namespace

void register_scan(Registry& r) { r.scan.set_all(DeviceType::CUDA, scan); }

}  // namespace minidl::kernels::cuda
