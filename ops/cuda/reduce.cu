// CUDA reductions (Sum, Max, Min, ArgMax, ArgMin) over any set of dims. The input is seen as a
// matrix of `kept` outputs by `r` reduced elements:
// - reduced dims trailing a contiguous tensor (or any other case, after a permuted contiguous
//   copy): "rows", one warp per row when rows are short, one block per row segment otherwise;
// - reduced dims leading a contiguous tensor (bias gradients: a sum over the batch): "columns",
//   threads across outputs so every load is coalesced, each thread walking down its column.
// When there are too few outputs to fill the GPU, the reduced range is cut into segments whose
// partial results a second pass combines, in a fixed order: results are deterministic and do not
// depend on timing. Sums accumulate in f32 (f64 for f64, i64 for integers); Max/Min propagate
// NaN and, like the CPU kernels, report the first index of the extreme value (or of the first NaN).
#include <algorithm>
#include <vector>

#include "ops/cuda/common.cuh"

namespace minidl::kernels::cuda {

namespace {
template <class T>
using acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, compute_t<T>>;

constexpr int64_t kEmpty = INT64_MAX;  // index of "no element yet"

// The dtype of partial-result buffers.
template <class V>
DType dtype_of_acc() {
  if constexpr (std::is_same_v<V, float>) return DType::F32;
  else if constexpr (std::is_same_v<V, double>) return DType::F64;
  else return DType::I64;
}

template <class V>
struct RV {
  V v;
  int64_t i;
};

template <class V>
__device__ __forceinline__ bool is_nan(V v) {
  return v != v;
}

template <class V>
__device__ __forceinline__ RV<V> combine(ReduceOp op, RV<V> a, RV<V> b) {
  if (op == ReduceOp::Sum) return {a.v + b.v, a.i < b.i ? a.i : b.i};
  if (a.i == kEmpty) return b;
  if (b.i == kEmpty) return a;
  const bool an = is_nan(a.v), bn = is_nan(b.v);
  if (an || bn) {
    if (an && bn) return a.i < b.i ? a : b;
    return an ? a : b;
  }
  if (a.v == b.v) return a.i < b.i ? a : b;
  const bool want_max = op == ReduceOp::Max || op == ReduceOp::ArgMax;
  return (want_max ? a.v > b.v : a.v < b.v) ? a : b;
}

template <class V>
__device__ __forceinline__ RV<V> warp_reduce(ReduceOp op, RV<V> x) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    RV<V> o{__shfl_xor_sync(0xffffffffu, x.v, m), __shfl_xor_sync(0xffffffffu, x.i, m)};
    x = combine(op, x, o);
  }
  return x;
}

// Reduces over a group of G threads (32: one warp; 256: the whole block); every thread of the
// group gets the result.
template <int G, class V>
__device__ __forceinline__ RV<V> group_reduce(ReduceOp op, RV<V> x) {
  x = warp_reduce(op, x);
  if constexpr (G == 32) {
    return x;
  } else {
    __shared__ V sv[G / 32];
    __shared__ int64_t si[G / 32];
    __shared__ V rv;
    __shared__ int64_t ri;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
      sv[warp] = x.v;
      si[warp] = x.i;
    }
    __syncthreads();
    if (warp == 0) {
      RV<V> y = lane < G / 32 ? RV<V>{sv[lane], si[lane]} : RV<V>{V(0), kEmpty};
      y = warp_reduce(op, y);
      if (lane == 0) {
        rv = y.v;
        ri = y.i;
      }
    }
    __syncthreads();
    return {rv, ri};
  }
}

// Element (i along the reduction, k along the outputs) of the input, with its reduction index.
template <class T>
struct XSource {
  const T* x;
  int64_t ks, is;
  __device__ __forceinline__ RV<acc_t<T>> at(int64_t i, int64_t k) const {
    return {static_cast<acc_t<T>>(load(x[k * ks + i * is])), i};
  }
};
// A partial result of the first pass.
template <class V>
struct PartSource {
  const V* v;
  const int64_t* idx;
  int64_t ks, is;
  __device__ __forceinline__ RV<V> at(int64_t i, int64_t k) const {
    const int64_t o = k * ks + i * is;
    return {v[o], idx[o]};
  }
};

// Where results go: the final outputs (out/indices, k-th element) or partial arrays.
template <class T, class V>
struct Sink {
  T* out;              // final values (null for ArgMax/ArgMin)
  int64_t* indices;    // final indices (may be null)
  V* part_v;           // partials, when non-null
  int64_t* part_i;
  __device__ __forceinline__ void put(int64_t slot, RV<V> r) const {
    if (part_v) {
      part_v[slot] = r.v;
      part_i[slot] = r.i;
      return;
    }
    if (out) out[slot] = convert<T>(r.v);
    if (indices) indices[slot] = r.i;
  }
};

// Rows: task t = k * segs + s reduces i in [s * seg_len, min(len, (s + 1) * seg_len)) of output k;
// one task per group of G threads.
template <class T, class V, class Src, int G>
__global__ void reduce_rows_kernel(Src src, int64_t kept, int64_t len, int64_t seg_len, int64_t segs, ReduceOp op,
                                   Sink<T, V> sink) {
  constexpr int kGroups = kThreads / G;
  const int64_t tasks = kept * segs;
  const int g = threadIdx.x / G, lane = threadIdx.x % G;
  // Every thread of a block runs the same number of iterations (group_reduce may sync the block).
  for (int64_t base = int64_t{blockIdx.x} * kGroups; base < tasks; base += int64_t{gridDim.x} * kGroups) {
    const int64_t t = base + g;
    RV<V> acc{V(0), kEmpty};
    if (t < tasks) {
      const int64_t k = t / segs, s = t % segs;
      const int64_t b = s * seg_len, e = b + seg_len < len ? b + seg_len : len;
      for (int64_t i = b + lane; i < e; i += G) acc = combine(op, acc, src.at(i, k));
    }
    acc = group_reduce<G>(op, acc);
    if (t < tasks && lane == 0) sink.put(t, acc);
  }
}

// Columns: block (32 outputs) x (8 row lanes); blockIdx.y cuts the reduction into segments; the
// result of segment y for output k goes to slot y * kept + k.
template <class T, class V, class Src>
__global__ void reduce_cols_kernel(Src src, int64_t kept, int64_t len, int64_t seg_len, ReduceOp op, Sink<T, V> sink) {
  __shared__ V sv[8][33];
  __shared__ int64_t si[8][33];
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  const int64_t k = int64_t{blockIdx.x} * 32 + tx;
  const int64_t b = int64_t{blockIdx.y} * seg_len, e = b + seg_len < len ? b + seg_len : len;
  RV<V> acc{V(0), kEmpty};
  if (k < kept)
    for (int64_t i = b + ty; i < e; i += 8) acc = combine(op, acc, src.at(i, k));
  sv[ty][tx] = acc.v;
  si[ty][tx] = acc.i;
  __syncthreads();
  if (ty == 0 && k < kept) {
    for (int y = 1; y < 8; ++y) acc = combine(op, acc, RV<V>{sv[y][tx], si[y][tx]});
    sink.put(int64_t{blockIdx.y} * kept + k, acc);
  }
}

template <class T>
void reduce_typed(ReduceOp op, const Tensor& out, const Tensor& indices, const Tensor& x, const std::vector<int64_t>& dims) {
  using V = acc_t<T>;
  const int64_t nd = x.dim();
  const int64_t kept = out.numel();
  if (kept == 0) return;
  const int64_t r = x.numel() / kept;
  const int dev = x.device().index;
  cudaStream_t s = stream_of(x);
  const bool arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
  if (r == 0) {
    MINIDL_CHECK(op == ReduceOp::Sum, "max/min", "cannot reduce over an empty dimension");
    registry().fill.get(out.device(), out.dtype())(out, 0.0);
    return;
  }
  Sink<T, V> final_sink{arg ? nullptr : static_cast<T*>(out.raw_data()),
                        indices.defined() ? static_cast<int64_t*>(indices.raw_data()) : nullptr, nullptr, nullptr};

  // Which layout: the non-trivial (size > 1) dims, reduced or not, in order.
  std::vector<bool> red(static_cast<size_t>(nd), false);
  for (int64_t d : dims) red[static_cast<size_t>(d)] = true;
  std::vector<bool> seq;  // reduced flag of each size>1 dim
  for (int64_t d = 0; d < nd; ++d)
    if (x.shape()[d] > 1) seq.push_back(red[static_cast<size_t>(d)]);
  const bool trailing = std::is_sorted(seq.begin(), seq.end());  // false... then true...
  const bool leading = std::is_sorted(seq.begin(), seq.end(), [](bool a, bool b) { return a > b; });
  const int64_t want_groups = int64_t{4} * minidl::cuda::sm_count(dev) * (kThreads / 32);

  if (leading && !trailing && x.is_contiguous()) {
    // Columns: x is [r, kept] row-major.
    XSource<T> src{static_cast<const T*>(x.raw_data()), 1, kept};
    const int64_t gx = (kept + 31) / 32;
    int64_t segs = std::max<int64_t>(1, std::min<int64_t>((want_groups / 8 + gx - 1) / gx, (r + 255) / 256));
    segs = std::min<int64_t>(segs, 65535);
    const int64_t seg_len = (r + segs - 1) / segs;
    segs = (r + seg_len - 1) / seg_len;
    if (segs == 1) {
      reduce_cols_kernel<T, V><<<dim3(static_cast<unsigned>(gx), 1), kThreads, 0, s>>>(src, kept, r, seg_len, op, final_sink);
      MINIDL_CUDA_CHECK_LAUNCH("reduce");
      return;
    }
    Tensor pv = scratch({segs, kept}, dtype_of_acc<V>(), x);
    Tensor pi = scratch({segs, kept}, DType::I64, x);
    Sink<T, V> part{nullptr, nullptr, static_cast<V*>(pv.raw_data()), static_cast<int64_t*>(pi.raw_data())};
    reduce_cols_kernel<T, V><<<dim3(static_cast<unsigned>(gx), static_cast<unsigned>(segs)), kThreads, 0, s>>>(
        src, kept, r, seg_len, op, part);
    PartSource<V> psrc{part.part_v, part.part_i, 1, kept};
    reduce_cols_kernel<T, V><<<dim3(static_cast<unsigned>(gx), 1), kThreads, 0, s>>>(psrc, kept, segs, segs, op, final_sink);
    MINIDL_CUDA_CHECK_LAUNCH("reduce");
    return;
  }

  // Rows: x as [kept, r] contiguous (a permuted copy unless it already is).
  Tensor xr = x;
  if (!(trailing && x.is_contiguous())) {
    Shape perm;
    for (int64_t d = 0; d < nd; ++d) if (!red[static_cast<size_t>(d)]) perm.push_back(d);
    for (int64_t d = 0; d < nd; ++d) if (red[static_cast<size_t>(d)]) perm.push_back(d);
    Tensor xp = make_view(x, [&] { Shape sz; for (int64_t d : perm) sz.push_back(x.shape()[d]); return sz; }(),
                          [&] { Shape st; for (int64_t d : perm) st.push_back(x.strides()[d]); return st; }(), x.offset());
    xr = contiguous_on_device(xp);
  }
  XSource<T> src{static_cast<const T*>(xr.raw_data()), r, 1};
  if (r <= 1024 || kept >= want_groups / 8) {
    // One group per output: warps for short rows, blocks for long ones.
    if (r <= 1024)
      reduce_rows_kernel<T, V, XSource<T>, 32><<<grid_for(kept * 32, dev), kThreads, 0, s>>>(src, kept, r, r, 1, op, final_sink);
    else
      reduce_rows_kernel<T, V, XSource<T>, kThreads><<<grid_for(kept * kThreads, dev), kThreads, 0, s>>>(src, kept, r, r, 1, op,
                                                                                                          final_sink);
    MINIDL_CUDA_CHECK_LAUNCH("reduce");
    return;
  }
  // Few long rows: segments of at least 4096 elements, enough of them to fill the GPU.
  int64_t segs = std::max<int64_t>(1, std::min<int64_t>((want_groups / 8 + kept - 1) / kept, (r + 4095) / 4096));
  const int64_t seg_len = (r + segs - 1) / segs;
  segs = (r + seg_len - 1) / seg_len;
  Tensor pv = scratch({kept, segs}, dtype_of_acc<V>(), x);
  Tensor pi = scratch({kept, segs}, DType::I64, x);
  Sink<T, V> part{nullptr, nullptr, static_cast<V*>(pv.raw_data()), static_cast<int64_t*>(pi.raw_data())};
  reduce_rows_kernel<T, V, XSource<T>, kThreads><<<grid_for(kept * segs * kThreads, dev), kThreads, 0, s>>>(
      src, kept, r, seg_len, segs, op, part);
  PartSource<V> psrc{part.part_v, part.part_i, segs, 1};
  reduce_rows_kernel<T, V, PartSource<V>, 32><<<grid_for(kept * 32, dev), kThreads, 0, s>>>(psrc, kept, segs, segs, 1, op,
                                                                                            final_sink);
  MINIDL_CUDA_CHECK_LAUNCH("reduce");
}

void reduce(ReduceOp op, const Tensor& out, const Tensor& indices, const Tensor& x, const std::vector<int64_t>& dims) {
  minidl::cuda::DeviceGuard guard(x.device());
  visit(x.dtype(), "reduce", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) MINIDL_FAIL("reduce", "bool tensors must be cast before reducing");
    else reduce_typed<T>(op, out, indices, x, dims);
  });
}
}  // namespace

// Bool is registered as on the CPU, where its kernel refuses bool input the same way (the ops cast
// bool tensors to i64 before reducing them).
void register_reduce(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64, DType::I32, DType::U8, DType::Bool})
    r.reduce.set(DeviceType::CUDA, t, reduce);
}

}  // namespace minidl::kernels::cuda
