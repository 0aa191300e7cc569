// CUDA sort kernel with the CPU kernel's contract (ops/kernels.h SortFn: stable, NaN above every
// number). One thread per element finds the element's place in its line by counting the line's
// elements that come before it (smaller, or equal and earlier), then writes value and index there:
// n comparisons per element, so the op (ops/sort.cpp) sends lines longer than
// kMaxCudaSortLine to the CPU kernel instead. The counts of a line are a permutation of 0..n-1
// because "comes before" with the index as tie-break is a strict total order.
#include "ops/cuda/common.cuh"

namespace minidl::kernels::cuda {

namespace {
template <class T>
__global__ void sort_kernel(T* values, int64_t* indices, const T* x, Split3 s, int64_t total, bool descending) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total; e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = e % s.inner, i = (e / s.inner) % s.mid, o = e / (s.inner * s.mid);
    const int64_t base = o * s.mid * s.inner + c;
    const auto key = load(x[base + i * s.inner]);
    int64_t rank = 0;
    for (int64_t j = 0; j < s.mid; ++j) {
      const auto other = load(x[base + j * s.inner]);
      if (sort_comes_before(other, key, descending) || (j < i && !sort_comes_before(key, other, descending))) ++rank;
    }
    values[base + rank * s.inner] = x[base + i * s.inner];
    indices[base + rank * s.inner] = i;
  }
}

void sort(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t dim, bool descending) {
  minidl::cuda::DeviceGuard guard(x.device());
  const int64_t n = x.numel();
  if (n == 0) return;
  const Split3 s = split_at(x.shape(), dim);
  visit(x.dtype(), "sort", [&](auto tag) {
    using T = typename decltype(tag)::type;
    sort_kernel<T><<<grid_for(n, x.device().index), kThreads, 0, stream_of(x)>>>(
        static_cast<T*>(values.raw_data()), static_cast<int64_t*>(indices.raw_data()), static_cast<const T*>(x.raw_data()), s,
        n, descending);
    MINIDL_CUDA_CHECK_LAUNCH("sort");
  });
}
}  // namespace

void register_sort(Registry& r) { r.sort.set_all(DeviceType::CUDA, sort); }

}  // namespace minidl::kernels::cuda
