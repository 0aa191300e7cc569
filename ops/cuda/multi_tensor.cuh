// The chunk table of a multi-tensor (foreach) launch, shared by the foreach kernels (amp.cu,
// foreach.cu). L parallel lists of contiguous tensors of one (device, dtype) are cut into chunks
// of kChunk elements; block b walks chunks b, b + gridDim.x, ... and its threads stride through
// the chunk. The table (pointers per list, sizes, (tensor, start) per chunk, and optional double
// scalars per tensor) is uploaded as one i64 array with one transfer.
#pragma once
#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "ops/cuda/common.cuh"

namespace minidl::kernels::cuda {

inline constexpr int64_t kChunk = 16384;

// Device view of the table. A list given empty on the host has null pointers.
template <int L>
struct MultiTensorTable {
  const int64_t* ptrs = nullptr;          // [L][tensors]
  const int64_t* sizes = nullptr;         // [tensors]
  const int64_t* chunk_tensor = nullptr;  // [chunks]
  const int64_t* chunk_start = nullptr;   // [chunks]
  const double* scalars = nullptr;        // [tensors][scalars_per_tensor]
  int64_t tensors = 0, chunks = 0, scalars_per_tensor = 0;

  template <class T>
  __device__ __forceinline__ T* ptr(int list, int64_t t) const {
    return reinterpret_cast<T*>(ptrs[list * tensors + t]);
  }
  __device__ __forceinline__ double scalar(int64_t t, int k) const { return scalars[t * scalars_per_tensor + k]; }
  // Elements [start, end) of chunk c, which belongs to tensor t.
  __device__ __forceinline__ void chunk(int64_t c, int64_t& t, int64_t& start, int64_t& end) const {
    t = chunk_tensor[c];
    start = chunk_start[c];
    end = start + kChunk < sizes[t] ? start + kChunk : sizes[t];
  }
};

// Host side: builds and uploads the table on the device of lists[0][0] (which must be non-empty),
// and keeps its scratch alive until the launch is done. scalars: scalars_per_tensor doubles per
// tensor (may be empty).
template <int L>
struct MultiTensorLaunch {
  MultiTensorTable<L> table;
  Tensor meta;
  int device = 0;
  cudaStream_t stream = nullptr;
  unsigned blocks = 1;

  MultiTensorLaunch(const std::array<const std::vector<Tensor>*, L>& lists, const std::vector<double>& scalars = {},
                    int64_t scalars_per_tensor = 0) {
    const std::vector<Tensor>& lead = *lists[0];
    const int64_t n = static_cast<int64_t>(lead.size());
    std::vector<int64_t> ptrs, sizes, chunk_tensor, chunk_start;
    for (int l = 0; l < L; ++l)
      for (int64_t t = 0; t < n; ++t)
        ptrs.push_back(lists[l]->empty() ? 0 : reinterpret_cast<int64_t>((*lists[l])[t].raw_data()));
    for (int64_t t = 0; t < n; ++t) {
      sizes.push_back(lead[t].numel());
      for (int64_t st = 0; st < lead[t].numel(); st += kChunk) {
        chunk_tensor.push_back(t);
        chunk_start.push_back(st);
      }
    }
    std::vector<int64_t> host;
    for (auto* v : {&ptrs, &sizes, &chunk_tensor, &chunk_start}) host.insert(host.end(), v->begin(), v->end());
    const size_t scalars_at = host.size();
    host.resize(scalars_at + scalars.size());
    if (!scalars.empty()) std::memcpy(host.data() + scalars_at, scalars.data(), scalars.size() * sizeof(double));

    device = lead[0].device().index;
    stream = stream_of(lead[0]);
    meta = scratch({static_cast<int64_t>(host.size())}, DType::I64, lead[0]);
    MINIDL_CUDA_CHECK(cudaMemcpyAsync(meta.raw_data(), host.data(), host.size() * sizeof(int64_t),
                                      cudaMemcpyHostToDevice, stream));
    const int64_t* d = static_cast<const int64_t*>(meta.raw_data());
    table.tensors = n;
    table.chunks = static_cast<int64_t>(chunk_tensor.size());
    table.scalars_per_tensor = scalars_per_tensor;
    table.ptrs = d;
    table.sizes = d + L * n;
    table.chunk_tensor = table.sizes + n;
    table.chunk_start = table.chunk_tensor + table.chunks;
    table.scalars = reinterpret_cast<const double*>(d + scalars_at);
    blocks = static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(table.chunks, int64_t{minidl::cuda::sm_count(device)} * 16)));
  }
  bool empty() const { return table.chunks == 0; }
};

}  // namespace minidl::kernels::cuda
