// Warp and block reductions shared by the CUDA kernels that reduce rows or channels (softmax.cu,
// batch_norm.cu): sums and NaN-propagating maxima over a warp (32 lanes) or a whole block of G
// threads. Every thread of the group must call them; all get the result.
#pragma once
#include <cuda_runtime.h>

#include <cmath>

namespace minidl::kernels::cuda {

template <class C>
__device__ __forceinline__ C warp_sum(C v) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
  return v;
}
template <class C>
__device__ __forceinline__ C warp_max(C v) {
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) {
    const C o = __shfl_xor_sync(0xffffffffu, v, m);
    v = (v != v || v > o) ? v : o;  // NaN propagates
  }
  return v;
}

// Reduces v over a group of G threads (32: a warp, 256: the block) with warp_reduce, one of the
// above; identity stands in for missing warps. All threads get the result. Each WarpReduce type
// gets its own shared memory.
template <int G, class C, class WarpReduce>
__device__ __forceinline__ C group_reduce(C v, C identity, WarpReduce warp_reduce) {
  v = warp_reduce(v);
  if constexpr (G == 32) {
    return v;
  } else {
    __shared__ C part[G / 32];
    __shared__ C total;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
      C w = lane < G / 32 ? part[lane] : identity;
      w = warp_reduce(w);
      if (lane == 0) total = w;
    }
    __syncthreads();
    return total;
  }
}
template <int G, class C>
__device__ __forceinline__ C group_sum(C v) {
  return group_reduce<G>(v, C(0), [](C u) { return warp_sum(u); });
}
template <int G, class C>
__device__ __forceinline__ C group_max(C v) {
  return group_reduce<G>(v, C(-INFINITY), [](C u) { return warp_max(u); });
}

}  // namespace minidl::kernels::cuda
