// CPU reductions over any set of dims. The input is viewed as [kept, reduced]: when the reduced
// dims lead a contiguous tensor (bias gradients: sum over the batch) rows are accumulated
// column-wise in vector loops; otherwise each output reduces one contiguous row. Sums accumulate in
// f32 (f64 for f64, i64 for integers). Floating sums are cascaded, as PyTorch's: short leaves summed
// in vector lanes, leaves added pairwise, so the rounding error grows with log(n), not n (a running
// f32 sum of 4M values of 0.1 was 4% off); a few very long rows (a full sum) are split into fixed
// chunks across threads, the chunk sums added pairwise too.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ops/cpu/loops.h"
#include "ops/cpu/scalar.h"
#include "ops/kernels.h"

namespace minidl::kernels::cpu {

namespace {
template <class T>
using acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, compute_t<T>>;

// Sums of rows at least this long are split into kSumChunk-element chunks across threads.
constexpr int64_t kSplitSumMin = int64_t{1} << 18;
constexpr int64_t kSumChunk = int64_t{1} << 16;

// Leaves of the cascade: rows of kLeaf values summed in 8 lanes, column blocks over kLeafRows rows;
// a leading-dims sum accumulates kSumCols columns at a time.
constexpr int64_t kLeaf = kBlock;
constexpr int64_t kLeafRows = 64;
constexpr int64_t kSumCols = 512;

// The sum of n values in 8 lanes (vectorized); f16/bf16 (n <= kLeaf) widened through a block.
template <class A, class T>
A leaf_sum(const T* p, int64_t n) {
  if constexpr (is_low_precision_v<T>) {
    A buf[kLeaf];
    load_block(p, buf, n);
    return leaf_sum<A, A>(buf, n);
  } else {
    A part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; ++j) part[j] += static_cast<A>(p[i + j]);
    A total = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
    for (; i < n; ++i) total += static_cast<A>(p[i]);
    return total;
  }
}

// The sum of a contiguous row: integers (exact) in one pass of lanes, floating values pairwise
// over leaves.
template <class A, class T>
A row_sum(const T* p, int64_t n) {
  if (std::is_integral_v<A> || n <= kLeaf) return leaf_sum<A>(p, n);
  const int64_t half = (n + kLeaf - 1) / kLeaf / 2 * kLeaf;  // whole leaves on the left
  return row_sum<A>(p, half) + row_sum<A>(p + half, n - half);
}

// acc[j] = sum over rows [i0, i1) of x[i, j0 + j], j < m (rows of `stride` elements): rows added
// one by one within a leaf of kLeafRows, leaves pairwise; integers in one pass.
template <class A, class T>
void column_sums(const T* px, int64_t stride, int64_t i0, int64_t i1, int64_t j0, int64_t m, A* acc) {
  if (std::is_integral_v<A> || i1 - i0 <= kLeafRows) {
    std::fill(acc, acc + m, A(0));
    for (int64_t i = i0; i < i1; ++i) {
      const T* p = px + i * stride + j0;
      if constexpr (is_low_precision_v<T>) {
        A row[kSumCols];  // m <= kSumCols
        load_block(p, row, m);
        for (int64_t j = 0; j < m; ++j) acc[j] += row[j];
      } else {
        for (int64_t j = 0; j < m; ++j) acc[j] += static_cast<A>(p[j]);
      }
    }
    return;
  }
  const int64_t half = i0 + (i1 - i0 + kLeafRows - 1) / kLeafRows / 2 * kLeafRows;
  A right[kSumCols];
  column_sums<A>(px, stride, i0, half, j0, m, acc);
  column_sums<A>(px, stride, half, i1, j0, m, right);
  for (int64_t j = 0; j < m; ++j) acc[j] += right[j];
}

template <class T>
bool better(ReduceOp op, compute_t<T> cand, compute_t<T> best) {
  if (best != best) return false;  // NaN already won
  if (cand != cand) return true;
  return (op == ReduceOp::Max || op == ReduceOp::ArgMax) ? cand > best : cand < best;
}

template <class T>
void reduce_typed(ReduceOp op, const Tensor& out, const Tensor& indices, const Tensor& x, const std::vector<int64_t>& dims) {
  using C = compute_t<T>;
  using A = acc_t<T>;
  const int64_t nd = x.dim();
  std::vector<bool> reduced(nd, false);
  for (int64_t d : dims) reduced[d] = true;
  Shape perm;
  for (int64_t d = 0; d < nd; ++d) if (!reduced[d]) perm.push_back(d);
  for (int64_t d = 0; d < nd; ++d) if (reduced[d]) perm.push_back(d);
  const int64_t kept = out.numel();
  const int64_t r = kept == 0 ? 0 : x.numel() / kept;
  T* o = static_cast<T*>(out.raw_data());
  int64_t* idx = indices.defined() ? static_cast<int64_t*>(indices.raw_data()) : nullptr;
  const bool leading = std::all_of(dims.begin(), dims.end(), [&](int64_t d) { return d < static_cast<int64_t>(dims.size()); });

  if (op == ReduceOp::Sum && leading && x.is_contiguous() && r > 1 && kept >= 8) {
    // out[j] = sum_i x[i, j]: stream over rows, accumulating a block of columns at a time.
    const T* px = static_cast<const T*>(x.raw_data());
    parallel_for(kept, r, [&](int64_t b, int64_t e) {
      A acc[kSumCols];
      for (int64_t j0 = b; j0 < e; j0 += kSumCols) {
        const int64_t m = std::min(kSumCols, e - j0);
        column_sums<A>(px, kept, 0, r, j0, m, acc);
        for (int64_t j = 0; j < m; ++j) o[j0 + j] = cast_scalar<T>(acc[j]);
      }
    });
    return;
  }

  Tensor xp = x.permute(perm).contiguous();
  const T* px = static_cast<const T*>(xp.raw_data());
  if (op == ReduceOp::Sum && kept < 8 && r >= kSplitSumMin) {
    // Few long rows (a full sum, a loss): each row is cut into fixed chunks summed in parallel,
    // then the chunk sums are added pairwise: the result does not depend on the thread count.
    const int64_t chunks = (r + kSumChunk - 1) / kSumChunk;
    std::vector<A> part(static_cast<size_t>(chunks));
    for (int64_t k = 0; k < kept; ++k) {
      const T* p = px + k * r;
      parallel_for(chunks, kSumChunk, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) part[c] = row_sum<A>(p + c * kSumChunk, std::min(kSumChunk, r - c * kSumChunk));
      });
      o[k] = cast_scalar<T>(row_sum<A>(part.data(), chunks));  // the same cascade over chunk sums
    }
    return;
  }
  parallel_for(kept, r, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const T* p = px + k * r;
      if (op == ReduceOp::Sum) {
        o[k] = cast_scalar<T>(row_sum<A>(p, r));
        continue;
      }
      MINIDL_CHECK(r > 0, "max/min", "cannot reduce over an empty dimension");
      C best = static_cast<C>(p[0]);
      int64_t at = 0;
      for (int64_t i = 1; i < r; ++i) {
        C v = static_cast<C>(p[i]);
        if (better<T>(op, v, best)) { best = v; at = i; }
      }
      if (op == ReduceOp::ArgMax || op == ReduceOp::ArgMin) {
        idx[k] = at;
      } else {
        o[k] = cast_scalar<T>(best);
        if (idx) idx[k] = at;
      }
    }
  });
}

void reduce(ReduceOp op, const Tensor& out, const Tensor& indices, const Tensor& x, const std::vector<int64_t>& dims) {
  visit_dtype(x.dtype(), "reduce", [&]<class T>() {
    if constexpr (std::is_same_v<T, bool>) MINIDL_FAIL("reduce", "bool tensors must be cast before reducing");
    else reduce_typed<T>(op, out, indices, x, dims);
  });
}
}  // namespace

void register_reduce(Registry& r) { r.reduce.set_all(DeviceType::CPU, reduce); }

}  // namespace minidl::kernels::cpu
