// CUDA indexing kernels with the CPU kernels' contracts (ops/kernels.h, ops/cpu/index.cpp):
// index_select / index_add (whole slices picked by a 1-D i64 index) and gather / scatter_add (one
// element per index entry, any strides). The ops validate every index first, so kernels do no
// bounds checks. index_add and scatter_add accumulate with atomics (repeated indices collide):
// f32/f64/integers in place, f16/bf16 in an f32 buffer rounded once at the end, bool as "or".
// Every dtype; one thread per element of the output (select, gather) or of the source (add).
#include "ops/cuda/common.cuh"

namespace minidl::kernels::cuda {

namespace {


// Element i of an [outer, k, inner] tensor -> the offset of the same (outer, inner) position in
// an [outer, mid, inner] tensor at row idx[i's row].
__device__ __forceinline__ int64_t row_offset(int64_t i, const int64_t* idx, int64_t k, Split3 s) {
  const int64_t c = i % s.inner, r = i / s.inner;
  return ((r / k) * s.mid + idx[r % k]) * s.inner + c;
}

template <class T>
__global__ void index_select_kernel(T* out, const T* x, const int64_t* idx, int64_t k, Split3 s, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = x[row_offset(i, idx, k, s)];
}

template <class T>
__global__ void index_add_kernel(atomic_acc_t<T>* out, const T* src, const int64_t* idx, int64_t k, Split3 s, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x)
    atomic_accumulate(out + row_offset(i, idx, k, s), static_cast<atomic_acc_t<T>>(load(src[i])));
}

// Operands: 0 = out (gather) or src (scatter_add), 1 = index, 2 = the indexed tensor seen with
// index's shape and stride 0 along dim (along_index); `dim_stride` is its real stride along dim.
template <class T>
__global__ void gather_kernel(T* out, const int64_t* index, const T* x, int64_t dim_stride, OffsetCalc<3> calc, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t off[3];
    calc.get(i, off);
    out[off[0]] = x[off[2] + index[off[1]] * dim_stride];
  }
}

template <class T>
__global__ void scatter_add_kernel(atomic_acc_t<T>* out, const int64_t* index, const T* src, int64_t dim_stride,
                                   OffsetCalc<3> calc, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t off[3];
    calc.get(i, off);
    atomic_accumulate(out + off[2] + index[off[1]] * dim_stride, static_cast<atomic_acc_t<T>>(load(src[off[0]])));
  }
}

// A view of x with index's shape whose stride along dim is 0 (ops/cpu/index.cpp's along_index).
Tensor along_index(const Tensor& x, const Tensor& index, int64_t dim) {
  Shape strides = x.strides();
  strides[dim] = 0;
  return make_view(x, index.shape(), strides, x.offset());
}

const int64_t* index_ptr(const Tensor& index) { return static_cast<const int64_t*>(index.raw_data()); }

// out [outer, k, inner] <- x [outer, n, inner] at rows index[0..k); all contiguous.
void index_select(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  minidl::cuda::DeviceGuard guard(x.device());
  const Split3 s = split_at(x.shape(), dim);
  const int64_t n = out.numel();
  if (n == 0) return;
  visit(x.dtype(), "index_select", [&](auto tag) {
    using T = typename decltype(tag)::type;
    index_select_kernel<T><<<grid_for(n, x.device().index), kThreads, 0, stream_of(x)>>>(
        static_cast<T*>(out.raw_data()), static_cast<const T*>(x.raw_data()), index_ptr(index), index.numel(), s, n);
    MINIDL_CUDA_CHECK_LAUNCH("index_select");
  });
}

// out [outer, n, inner] += src [outer, k, inner] into rows index[0..k); out and src contiguous.
void index_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  minidl::cuda::DeviceGuard guard(out.device());
  const Split3 s = split_at(out.shape(), dim);
  const int64_t n = src.numel();
  if (n == 0) return;
  visit(out.dtype(), "index_add", [&](auto tag) {
    using T = typename decltype(tag)::type;
    AtomicAccumulator<T> acc(out, /*start_from_zero=*/false);
    index_add_kernel<T><<<grid_for(n, out.device().index), kThreads, 0, stream_of(out)>>>(
        acc.data(), static_cast<const T*>(src.raw_data()), index_ptr(index), index.numel(), s, n);
    MINIDL_CUDA_CHECK_LAUNCH("index_add");
    acc.finish();
  });
}

// out (index's shape, contiguous) <- x[..., index[...], ...] along dim; x and index any strides.
void gather(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  minidl::cuda::DeviceGuard guard(x.device());
  const int64_t n = index.numel();
  if (n == 0) return;
  const Tensor xv = along_index(x, index, dim);
  const OffsetCalc<3> calc = make_offset_calc<3>(index.shape(), {&out, &index, &xv}, "gather");
  visit(x.dtype(), "gather", [&](auto tag) {
    using T = typename decltype(tag)::type;
    gather_kernel<T><<<grid_for(n, x.device().index), kThreads, 0, stream_of(x)>>>(
        static_cast<T*>(out.raw_data()), index_ptr(index), static_cast<const T*>(xv.raw_data()), x.strides()[dim], calc, n);
    MINIDL_CUDA_CHECK_LAUNCH("gather");
  });
}

// out[..., index[...], ...] += src[...] along dim; index and src share a shape; any strides.
void scatter_add(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src) {
  minidl::cuda::DeviceGuard guard(out.device());
  const int64_t n = index.numel();
  if (n == 0) return;
  visit(out.dtype(), "scatter_add", [&](auto tag) {
    using T = typename decltype(tag)::type;
    AtomicAccumulator<T> acc(out, /*start_from_zero=*/false);
    const Tensor& target = acc.target();
    const Tensor tv = along_index(target, index, dim);
    const OffsetCalc<3> calc = make_offset_calc<3>(index.shape(), {&src, &index, &tv}, "scatter_add");
    scatter_add_kernel<T><<<grid_for(n, out.device().index), kThreads, 0, stream_of(out)>>>(
        static_cast<atomic_acc_t<T>*>(tv.raw_data()), index_ptr(index), static_cast<const T*>(src.raw_data()),
        target.strides()[dim], calc, n);
    MINIDL_CUDA_CHECK_LAUNCH("scatter_add");
    acc.finish();
  });
}
}  // namespace

void register_index(Registry& r) {
  r.index_select.set_all(DeviceType::CUDA, index_select);
  r.index_add.set_all(DeviceType::CUDA, index_add);
  r.gather.set_all(DeviceType::CUDA, gather);
  r.scatter_add.set_all(DeviceType::CUDA, scatter_add);
}

}  // namespace minidl::kernels::cuda
