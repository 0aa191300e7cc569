// Strided iteration for CPU kernels: broadcasting operands are described by element strides (0 on
// broadcast dims), adjacent dims are coalesced so contiguous tensors become one flat loop, and the
// flat range is split across threads above a grain size. The per-row callback sees raw offsets and
// inner strides and can take a vectorizable fast path when they are 1 (or 0).
// Threads come from minidl's pool (ops/cpu/parallel.cpp), sized by OpenMP's settings
// (OMP_NUM_THREADS, omp_set_num_threads): unlike an OpenMP region, a loop never waits for a busy
// or sleeping worker to start; it runs alone instead.
#pragma once
#include <omp.h>  // kept for the kernels that include it through here

#include <algorithm>
#include <array>
#include <type_traits>

#include "ops/tensor.h"

namespace minidl::kernels::cpu {

// Below this many elements a loop runs on the calling thread: splitting costs more.
inline constexpr int64_t kParallelGrain = 32768;

// Threads a loop may use: omp_get_max_threads() of the calling thread.
int max_threads();
// True inside a pool task or an OpenMP parallel region; loops then run serially.
bool in_parallel();
// Runs call(ctx, c) for every c in [0, chunks) on the calling thread and up to max_threads() - 1
// pool workers, each chunk exactly once, and returns when all are done. Serial when in_parallel().
// An exception from a chunk stops unclaimed chunks and is rethrown here.
void run_chunks(int64_t chunks, void (*call)(void*, int64_t), void* ctx);

template <class F>
void parallel_chunks(int64_t chunks, F&& f) {
  using Fn = std::remove_reference_t<F>;
  run_chunks(chunks, [](void* ctx, int64_t c) { (*static_cast<Fn*>(ctx))(c); }, const_cast<void*>(static_cast<const void*>(&f)));
}

template <int N>
struct Loop {
  Shape shape;                   // coalesced; innermost last; never empty
  std::array<Shape, N> strides;  // per operand, in elements
  int64_t numel = 0;
};

// The order in which make_loop walks the dims, outermost first: logical order, unless operand 0
// (a kernel's output) is dense in another order, such as a channels-last image, whose memory order
// it then follows so that its innermost run is contiguous (kernels write outputs as unit-stride
// rows) and the dims coalesce. Dims of size 1 keep their places (make_loop drops them).
inline std::vector<size_t> memory_order(const Shape& shape, const Shape& strides0) {
  std::vector<size_t> order(shape.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = d;
  std::vector<size_t> walked;
  for (size_t d : order)
    if (shape[d] != 1) walked.push_back(d);
  for (size_t d : walked)
    if (strides0[d] == 0) return order;  // broadcast: not an output, keep logical order
  std::vector<size_t> sorted = walked;
  std::stable_sort(sorted.begin(), sorted.end(), [&](size_t a, size_t b) { return strides0[a] > strides0[b]; });
  int64_t expected = 1;  // dense in the sorted order, or keep logical order
  for (size_t i = sorted.size(); i-- > 0;) {
    if (strides0[sorted[i]] != expected) return order;
    expected *= shape[sorted[i]];
  }
  for (size_t i = 0; i < walked.size(); ++i) order[walked[i]] = sorted[i];  // size-1 dims stay put
  return order;
}

// Operand i broadcasts to `shape`; its strides are right-aligned and 0 where it broadcasts.
// in_memory_order: walk the dims as memory_order() says (element-wise kernels, whose order does
// not matter); false keeps logical order (a kernel whose result depends on the order).
template <int N>
Loop<N> make_loop(const Shape& shape, const std::array<const Tensor*, N>& operands, bool in_memory_order = true) {
  Loop<N> loop;
  const size_t nd = shape.size();
  std::array<Shape, N> st;
  for (int k = 0; k < N; ++k) {
    st[k].assign(nd, 0);
    const Tensor& t = *operands[k];
    const size_t td = t.shape().size();
    for (size_t d = 0; d < td; ++d)
      if (t.shape()[d] != 1) st[k][nd - td + d] = t.strides()[d];
  }
  std::vector<size_t> order(nd);
  for (size_t d = 0; d < nd; ++d) order[d] = d;
  if (in_memory_order && nd > 1) order = memory_order(shape, st[0]);
  // Drop size-1 dims, then merge dim d into d+1 when every operand is contiguous across them.
  for (size_t d : order) {
    if (shape[d] == 1) continue;
    if (!loop.shape.empty()) {
      bool merge = true;
      for (int k = 0; k < N; ++k) merge = merge && loop.strides[k].back() == st[k][d] * shape[d];
      if (merge) {
        loop.shape.back() *= shape[d];
        for (int k = 0; k < N; ++k) loop.strides[k].back() = st[k][d];
        continue;
      }
    }
    loop.shape.push_back(shape[d]);
    for (int k = 0; k < N; ++k) loop.strides[k].push_back(st[k][d]);
  }
  if (loop.shape.empty()) {
    loop.shape.push_back(1);
    for (int k = 0; k < N; ++k) loop.strides[k].push_back(0);
  }
  loop.numel = numel_of(shape);
  return loop;
}

// Calls f(offsets, n, inner_strides) for each run of up to one inner row in [begin, end).
template <int N, class F>
void for_range(const Loop<N>& loop, int64_t begin, int64_t end, F& f) {
  const int nd = static_cast<int>(loop.shape.size());
  const int64_t inner = loop.shape[nd - 1];
  Shape idx(nd, 0);
  int64_t rem = begin;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % loop.shape[d];
    rem /= loop.shape[d];
  }
  std::array<int64_t, N> inner_strides;
  for (int k = 0; k < N; ++k) inner_strides[k] = loop.strides[k][nd - 1];
  int64_t pos = begin;
  while (pos < end) {
    std::array<int64_t, N> off{};
    for (int k = 0; k < N; ++k)
      for (int d = 0; d < nd; ++d) off[k] += idx[d] * loop.strides[k][d];
    int64_t n = std::min(inner - idx[nd - 1], end - pos);
    f(off, n, inner_strides);
    pos += n;
    idx[nd - 1] += n;
    for (int d = nd - 1; d > 0 && idx[d] >= loop.shape[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

template <int N, class F>
void for_each_row(const Loop<N>& loop, F&& f) {
  if (loop.numel == 0) return;
  const int nt = loop.numel < kParallelGrain ? 1 : max_threads();
  if (nt == 1 || in_parallel()) {
    for_range(loop, 0, loop.numel, f);
    return;
  }
  // A few chunks per thread (so a worker that starts late still takes a share), each at least half
  // a grain, with boundaries on multiples of 64 elements (whole vector loops and cache lines).
  const int64_t want = std::clamp<int64_t>(loop.numel / (kParallelGrain / 2), nt, 4 * nt);
  const int64_t chunk = ((loop.numel + want - 1) / want + 63) / 64 * 64;
  const int64_t chunks = (loop.numel + chunk - 1) / chunk;
  parallel_chunks(chunks, [&](int64_t c) { for_range(loop, c * chunk, std::min(loop.numel, (c + 1) * chunk), f); });
}

// Runs f(begin, end) over [0, n) split into ranges across threads when the work is large enough.
template <class F>
void parallel_for(int64_t n, int64_t cost_per_item, F&& f) {
  if (n <= 0) return;
  const int nt = n * cost_per_item < kParallelGrain || n == 1 ? 1 : max_threads();
  if (nt == 1 || in_parallel()) {
    f(int64_t{0}, n);
    return;
  }
  // Up to 4 chunks per thread, each worth at least half a grain.
  const int64_t want = std::clamp<int64_t>(n * cost_per_item / (kParallelGrain / 2), std::min<int64_t>(n, nt), std::min<int64_t>(n, 4 * nt));
  const int64_t chunk = (n + want - 1) / want;
  parallel_chunks((n + chunk - 1) / chunk, [&](int64_t c) { f(c * chunk, std::min(n, (c + 1) * chunk)); });
}

}  // namespace minidl::kernels::cpu
