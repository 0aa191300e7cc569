// CUDA indexing kernels with the CPU kernels' contracts (ops/kernels.h, ops/cpu/index.cpp):
// index_select / index_add (whole slices picked by a 1-D i64 index) and gather / scatter_add (one
// element per index entry, any strides), and the device-side index check. The ops do not wait for
// the device to validate indices: every kernel checks each index it reads, records a bad one as a
// deferred error (framework/deferred_error.h) and touches no memory through it (select and gather
// write 0, the scatters skip it). The scatters are the gathers' backward with the same index, whose
// forward has recorded the error already, so they record under the forward op's name.
// index_add and scatter_add accumulate with atomics (repeated indices collide): f32/f64/integers in
// place, f16/bf16 in an f32 buffer rounded once at the end, bool as "or". Every dtype; one thread
// per element of the output (select, gather) or of the source (add).
#include "framework/cuda/deferred_error.cuh"
#include "ops/cuda/common.cuh"

namespace minidl::kernels::cuda {

namespace {
using minidl::cuda::DeferredErrorRecord;
using minidl::cuda::DeferredOp;
using minidl::cuda::in_bounds;
using minidl::cuda::record_deferred_error;

// Element i of an [outer, k, inner] tensor: the same (outer, inner) position in an [outer, mid,
// inner] tensor at row idx[i's row]. `row` is that index, for the caller to check.
struct RowPosition {
  int64_t row, outer, inner;
};
__device__ __forceinline__ RowPosition row_position(int64_t i, const int64_t* idx, int64_t k, Split3 s) {
  const int64_t c = i % s.inner, r = i / s.inner;
  return {idx[r % k], r / k, c};
}
__device__ __forceinline__ int64_t offset_of(RowPosition p, Split3 s) { return (p.outer * s.mid + p.row) * s.inner + p.inner; }

template <class T>
__global__ void index_select_kernel(T* out, const T* x, const int64_t* idx, int64_t k, Split3 s, int64_t total,
                                    int64_t dim, DeferredErrorRecord* err) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const RowPosition p = row_position(i, idx, k, s);
    if (in_bounds(p.row, s.mid)) {
      out[i] = x[offset_of(p, s)];
    } else {
      record_deferred_error(err, DeferredOp::IndexSelect, p.row, s.mid, dim);
      out[i] = T{};
    }
  }
}

template <class T>
__global__ void index_add_kernel(atomic_acc_t<T>* out, const T* src, const int64_t* idx, int64_t k, Split3 s, int64_t total,
                                 int64_t dim, DeferredErrorRecord* err) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const RowPosition p = row_position(i, idx, k, s);
    if (in_bounds(p.row, s.mid)) atomic_accumulate(out + offset_of(p, s), static_cast<atomic_acc_t<T>>(load(src[i])));
    else record_deferred_error(err, DeferredOp::IndexSelect, p.row, s.mid, dim);
  }
}

// Operands: 0 = out (gather) or src (scatter_add), 1 = index, 2 = the indexed tensor seen with
// index's shape and stride 0 along dim (along_index); `dim_stride` is its real stride along dim.
// `dim_size` bounds the index; `dim` is only for the error record.
template <class T>
__global__ void gather_kernel(T* out, const int64_t* index, const T* x, int64_t dim_stride, OffsetCalc<3> calc, int64_t total,
                              int64_t dim_size, int64_t dim, DeferredErrorRecord* err) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t off[3];
    calc.get(i, off);
    const int64_t j = index[off[1]];
    if (in_bounds(j, dim_size)) {
      out[off[0]] = x[off[2] + j * dim_stride];
    } else {
      record_deferred_error(err, DeferredOp::Gather, j, dim_size, dim);
      out[off[0]] = T{};
    }
  }
}

template <class T>
__global__ void scatter_add_kernel(atomic_acc_t<T>* out, const int64_t* index, const T* src, int64_t dim_stride,
                                   OffsetCalc<3> calc, int64_t total, int64_t dim_size, int64_t dim, DeferredErrorRecord* err) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t off[3];
    calc.get(i, off);
    const int64_t j = index[off[1]];
    if (in_bounds(j, dim_size))
      atomic_accumulate(out + off[2] + j * dim_stride, static_cast<atomic_acc_t<T>>(load(src[off[0]])));
    else
      record_deferred_error(err, DeferredOp::Gather, j, dim_size, dim);
  }
}

// Records a value of a contiguous i64 tensor outside [0, bound) (other than `detail` when skip)
// under `op`, whichever bad value's thread claims the slot first; `detail` goes into the record as it is.
__global__ void check_index_range_kernel(const int64_t* index, int64_t n, int64_t bound, int64_t detail, bool skip,
                                         DeferredOp op, DeferredErrorRecord* err) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t v = index[i];
    if (!in_bounds(v, bound) && !(skip && v == detail)) record_deferred_error(err, op, v, bound, detail);
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
    minidl::cuda::DeferredErrorSlot err(x.device());
    index_select_kernel<T><<<grid_for(n, x.device().index), kThreads, 0, stream_of(x)>>>(
        static_cast<T*>(out.raw_data()), static_cast<const T*>(x.raw_data()), index_ptr(index), index.numel(), s, n, dim,
        err.get());
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
    minidl::cuda::DeferredErrorSlot err(out.device());
    index_add_kernel<T><<<grid_for(n, out.device().index), kThreads, 0, stream_of(out)>>>(
        acc.data(), static_cast<const T*>(src.raw_data()), index_ptr(index), index.numel(), s, n, dim, err.get());
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
    minidl::cuda::DeferredErrorSlot err(x.device());
    gather_kernel<T><<<grid_for(n, x.device().index), kThreads, 0, stream_of(x)>>>(
        static_cast<T*>(out.raw_data()), index_ptr(index), static_cast<const T*>(xv.raw_data()), x.strides()[dim], calc, n,
        x.shape()[dim], dim, err.get());
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
    minidl::cuda::DeferredErrorSlot err(out.device());
    scatter_add_kernel<T><<<grid_for(n, out.device().index), kThreads, 0, stream_of(out)>>>(
        static_cast<atomic_acc_t<T>*>(tv.raw_data()), index_ptr(index), static_cast<const T*>(src.raw_data()),
        target.strides()[dim], calc, n, out.shape()[dim], dim, err.get());
    MINIDL_CUDA_CHECK_LAUNCH("scatter_add");
    acc.finish();
  });
}

// index: contiguous i64.
void check_index_range(const Tensor& index, const IndexRangeCheck& check) {
  const int64_t n = index.numel();
  if (n == 0) return;
  minidl::cuda::DeviceGuard guard(index.device());
  minidl::cuda::DeferredErrorSlot err(index.device());
  check_index_range_kernel<<<grid_for(n, index.device().index), kThreads, 0, stream_of(index)>>>(
      index_ptr(index), n, check.bound, check.detail, check.skip_detail, check.op, err.get());
  MINIDL_CUDA_CHECK_LAUNCH("check_index_range");
}
}  // namespace

void register_index(Registry& r) {
  r.index_select.set_all(DeviceType::CUDA, index_select);
  r.index_add.set_all(DeviceType::CUDA, index_add);
  r.gather.set_all(DeviceType::CUDA, gather);
  r.scatter_add.set_all(DeviceType::CUDA, scatter_add);
  r.check_index_range.set(DeviceType::CUDA, DType::I64, check_index_range);
}

}  // namespace minidl::kernels::cuda
