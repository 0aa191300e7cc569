// CPU softmax-family kernels over the last dim of contiguous [rows, n] tensors: softmax and
// log_softmax (max-subtracted), their backward, and the fused cross-entropy forward/backward
// (log_softmax + nll in one pass over the logits).
//
// Rows are processed in blocks of about kBlockElems elements: per-row work (max, sums) is done row
// by row, but the exp runs once over the whole block with Eigen's packet exp, so short rows (10
// classes) vectorize as well as long ones (Eigen would fall back to scalar std::exp on a row shorter
// than one packet). Blocks run in parallel. f16/bf16 blocks are widened to f32 first, computed,
// and narrowed back. Results depend on the shapes only, never on where the tensors or the buffers
// lie: exp and log run on aligned, padded blocks (array_blocks.h), and the row sums and maxima are
// plain loops with a fixed order.
#include <cmath>
#include <type_traits>
#include <vector>

#include "ops/cpu/array_blocks.h"
#include "ops/cpu/loops.h"
#include "ops/cpu/scalar.h"
#include "ops/kernels.h"

namespace minidl::kernels::cpu {

namespace {
constexpr int64_t kBlockElems = 4096;  // elements per block: a few buffers of this fit in L1/L2
constexpr int64_t kCostPerElement = 8;  // for parallel_for's grain: exp dominates

// A block of consecutive rows of storage type T seen as compute type C: a direct pointer for
// f32/f64, a widened copy for f16/bf16. One per thread and operand, reused across blocks.
template <class T>
struct BlockReader {
  using C = compute_t<T>;
  std::vector<C> buf;
  const C* read(const T* p, int64_t count) {
    if constexpr (is_low_precision_v<T>) {
      buf.resize(count);
      load_block(p, buf.data(), count);
      return buf.data();
    } else {
      return p;
    }
  }
};

// Where a block's result is written: straight into f32/f64 storage, or into a buffer that
// commit() narrows into f16/bf16 storage.
template <class T>
struct BlockWriter {
  using C = compute_t<T>;
  std::vector<C> buf;
  C* target(T* p, int64_t count) {
    if constexpr (is_low_precision_v<T>) {
      buf.resize(count);
      return buf.data();
    } else {
      return p;
    }
  }
  void commit(T* p, int64_t count) {
    if constexpr (is_low_precision_v<T>) store_block(buf.data(), p, count);
  }
};

// Calls f(r0, r1) for blocks of rows covering [0, rows), in parallel.
template <class F>
void for_row_blocks(int64_t rows, int64_t n, F f) {
  const int64_t per_block = std::max<int64_t>(1, kBlockElems / std::max<int64_t>(n, 1));
  const int64_t blocks = (rows + per_block - 1) / per_block;
  parallel_for(blocks, per_block * n * kCostPerElement, [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) f(blk * per_block, std::min(rows, (blk + 1) * per_block));
  });
}

// Row max, sum and dot product in an order fixed by n: short rows (a few classes) sequentially,
// long ones in kLanes independent partial results (the loops vectorize without reassociating)
// combined in a fixed tree. A NaN in the row propagates through the exp and the sum either way.
constexpr int64_t kShortRow = 32;
constexpr int kLanes = 16;
template <class C>
C combine_lanes(C* lane) {
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int l = 0; l < w; ++l) lane[l] += lane[l + w];
  return lane[0];
}
template <class C>
C row_max(const C* p, int64_t n) {
  C m = p[0];
  int64_t j = 1;
  if (n >= kShortRow) {
    C lane[kLanes];
    for (int l = 0; l < kLanes; ++l) lane[l] = p[l];
    for (j = kLanes; j + kLanes <= n; j += kLanes)
      for (int l = 0; l < kLanes; ++l) lane[l] = p[j + l] > lane[l] ? p[j + l] : lane[l];
    m = lane[0];
    for (int l = 1; l < kLanes; ++l) m = lane[l] > m ? lane[l] : m;
  }
  for (; j < n; ++j) m = p[j] > m ? p[j] : m;
  return m;
}
template <class C>
C row_sum(const C* p, int64_t n) {
  C s = 0;
  int64_t j = 0;
  if (n >= kShortRow) {
    C lane[kLanes] = {};
    for (; j + kLanes <= n; j += kLanes)
      for (int l = 0; l < kLanes; ++l) lane[l] += p[j + l];
    s = combine_lanes(lane);
  }
  for (; j < n; ++j) s += p[j];
  return s;
}
template <class C>
C row_dot(const C* a, const C* b, int64_t n) {
  C s = 0;
  int64_t j = 0;
  if (n >= kShortRow) {
    C lane[kLanes] = {};
    for (; j + kLanes <= n; j += kLanes)
      for (int l = 0; l < kLanes; ++l) lane[l] += a[j + l] * b[j + l];
    s = combine_lanes(lane);
  }
  for (; j < n; ++j) s += a[j] * b[j];
  return s;
}

// p[k] <- exp(p[k]) for inputs <= 0 (shifted logits, log-probabilities): one vectorized exp. Eigen's
// packet exp clamps its input (f64 below -709.4, f32 below -88.4), so exp(-inf) and deep
// underflow would come out as a small nonzero number (f64: 5.6e-309) or a wrong subnormal: those
// rare inputs, found by a vectorized check first, are redone with std::exp.
template <class C>
void exp_nonpositive_in_place(C* p, int64_t n) {
  constexpr C kPacketLowest = std::is_same_v<C, double> ? C(-708) : C(-87);
  eval_blocks(p, p, n, [](const ConstAlignedArray<C>& x, AlignedArray<C> y) {
    y = x.exp();
    if (!(x.minCoeff() > kPacketLowest))
      for (Eigen::Index k = 0; k < x.size(); ++k)
        if (!(x[k] > kPacketLowest)) y[k] = std::exp(x[k]);
  });
}

template <class C>
void log_in_place(C* s, int64_t rows) {
  eval_blocks(s, s, rows, [](const ConstAlignedArray<C>& x, AlignedArray<C> y) { y = x.log(); });
}

// e[i, :] <- exp(x[i, :] - shift[i]) for the rows of a block; one vectorized exp over all of it.
template <class C>
void exp_shifted(C* e, const C* x, const C* shift, int64_t rows, int64_t n) {
  for (int64_t i = 0; i < rows; ++i) {
    const C sh = shift[i];
    C* er = e + i * n;
    const C* xr = x + i * n;
    for (int64_t j = 0; j < n; ++j) er[j] = xr[j] - sh;
  }
  exp_nonpositive_in_place(e, rows * n);
}

// e[i, :] <- exp((x[i, :] - max_i) - log_sum_i), stats[i] = {max_i, log_sum_i}: the softmax as
// PyTorch's log_softmax rounds it. Shifting by a rounded max + log_sum instead loses the log-sum's
// low bits next to a large max (logits near 1e4 lose ~1e-4).
template <class C>
void exp_log_softmax(C* e, const C* x, const C* stats, int64_t rows, int64_t n) {
  for (int64_t i = 0; i < rows; ++i) {
    const C m = stats[2 * i], log_sum = stats[2 * i + 1];
    C* er = e + i * n;
    const C* xr = x + i * n;
    for (int64_t j = 0; j < n; ++j) er[j] = (xr[j] - m) - log_sum;
  }
  exp_nonpositive_in_place(e, rows * n);
}

template <class T>
void softmax_typed(const Tensor& out, const Tensor& x, bool log) {
  using C = compute_t<T>;
  const int64_t n = x.dim() == 0 ? 1 : x.shape().back();
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  const T* px = static_cast<const T*>(x.raw_data());
  T* po = static_cast<T*>(out.raw_data());
  for_row_blocks(rows, n, [&, log](int64_t r0, int64_t r1) {
    thread_local BlockReader<T> reader;
    thread_local BlockWriter<T> writer;
    thread_local std::vector<C> e, m, s;
    const int64_t R = r1 - r0, count = R * n;
    const C* xb = reader.read(px + r0 * n, count);
    C* yb = writer.target(po + r0 * n, count);
    e.resize(count);
    m.resize(R);
    s.resize(R);
    for (int64_t i = 0; i < R; ++i) m[i] = row_max(xb + i * n, n);
    exp_shifted(e.data(), xb, m.data(), R, n);
    for (int64_t i = 0; i < R; ++i) s[i] = row_sum(e.data() + i * n, n);
    if (log) {
      // (x - max) - log(sum), as PyTorch: the small part stays exact next to a large max.
      log_in_place(s.data(), R);
      for (int64_t i = 0; i < R; ++i) {
        const C mi = m[i], log_sum = s[i];
        for (int64_t j = 0; j < n; ++j) yb[i * n + j] = (xb[i * n + j] - mi) - log_sum;
      }
    } else {
      for (int64_t i = 0; i < R; ++i) {
        const C inv = C(1) / s[i];
        for (int64_t j = 0; j < n; ++j) yb[i * n + j] = e[i * n + j] * inv;
      }
    }
    writer.commit(po + r0 * n, count);
  });
}

template <class T>
void softmax_backward_typed(const Tensor& grad_in, const Tensor& grad_out, const Tensor& y, bool log) {
  using C = compute_t<T>;
  const int64_t n = y.dim() == 0 ? 1 : y.shape().back();
  const int64_t rows = n == 0 ? 0 : y.numel() / n;
  const T* pg = static_cast<const T*>(grad_out.raw_data());
  const T* py = static_cast<const T*>(y.raw_data());
  T* pi = static_cast<T*>(grad_in.raw_data());
  for_row_blocks(rows, n, [&, log](int64_t r0, int64_t r1) {
    thread_local BlockReader<T> rg, ry;
    thread_local BlockWriter<T> writer;
    thread_local std::vector<C> e;
    const int64_t R = r1 - r0, count = R * n;
    const C* gb = rg.read(pg + r0 * n, count);
    const C* yb = ry.read(py + r0 * n, count);
    C* ib = writer.target(pi + r0 * n, count);
    if (log) {
      // d log_softmax: g - softmax * sum(g), softmax = exp(y)
      e.assign(yb, yb + count);
      exp_nonpositive_in_place(e.data(), count);
      for (int64_t i = 0; i < R; ++i) {
        const C* g = gb + i * n;
        const C* er = e.data() + i * n;
        C* o = ib + i * n;
        const C sum_g = row_sum(g, n);
        for (int64_t j = 0; j < n; ++j) o[j] = g[j] - er[j] * sum_g;
      }
    } else {
      // d softmax: y * (g - <g, y>)
      for (int64_t i = 0; i < R; ++i) {
        const C* g = gb + i * n;
        const C* yr = yb + i * n;
        C* o = ib + i * n;
        const C dot = row_dot(g, yr, n);
        for (int64_t j = 0; j < n; ++j) o[j] = yr[j] * (g[j] - dot);
      }
    }
    writer.commit(pi + r0 * n, count);
  });
}

template <class T>
void cross_entropy_typed(const Tensor& loss, const Tensor& stats, const Tensor& x, const Tensor& target,
                         int64_t ignore_index) {
  using C = compute_t<T>;
  const int64_t rows = x.shape()[0], n = x.shape()[1];
  const T* px = static_cast<const T*>(x.raw_data());
  const int64_t* pt = static_cast<const int64_t*>(target.raw_data());
  C* pl = static_cast<C*>(loss.raw_data());
  C* ps = static_cast<C*>(stats.raw_data());
  for_row_blocks(rows, n, [&](int64_t r0, int64_t r1) {
    thread_local BlockReader<T> reader;
    thread_local std::vector<C> e, m, s;
    const int64_t R = r1 - r0, count = R * n;
    const C* xb = reader.read(px + r0 * n, count);
    e.resize(count);
    m.resize(R);
    s.resize(R);
    for (int64_t i = 0; i < R; ++i) m[i] = row_max(xb + i * n, n);
    exp_shifted(e.data(), xb, m.data(), R, n);
    for (int64_t i = 0; i < R; ++i) s[i] = row_sum(e.data() + i * n, n);
    log_in_place(s.data(), R);
    for (int64_t i = 0; i < R; ++i) {
      ps[2 * (r0 + i)] = m[i];
      ps[2 * (r0 + i) + 1] = s[i];
      const int64_t t = pt[r0 + i];
      // -log_softmax(x)[t] = -((x_t - max) - log_sum), as PyTorch's log_softmax + nll_loss round it.
      pl[r0 + i] = t == ignore_index ? C(0) : s[i] - (xb[i * n + t] - m[i]);
    }
  });
}

template <class T>
void cross_entropy_backward_typed(const Tensor& grad_x, const Tensor& x, const Tensor& stats, const Tensor& target,
                                  const Tensor& g, double scale, int64_t ignore_index) {
  using C = compute_t<T>;
  const int64_t rows = x.shape()[0], n = x.shape()[1];
  const T* px = static_cast<const T*>(x.raw_data());
  const int64_t* pt = static_cast<const int64_t*>(target.raw_data());
  const C* ps = static_cast<const C*>(stats.raw_data());
  const C* pg = static_cast<const C*>(g.raw_data());
  const bool per_row = g.numel() == rows && g.dim() > 0;
  T* po = static_cast<T*>(grad_x.raw_data());
  for_row_blocks(rows, n, [&](int64_t r0, int64_t r1) {
    thread_local BlockReader<T> reader;
    thread_local BlockWriter<T> writer;
    const int64_t R = r1 - r0, count = R * n;
    const C* xb = reader.read(px + r0 * n, count);
    C* gb = writer.target(po + r0 * n, count);
    exp_log_softmax(gb, xb, ps + 2 * r0, R, n);  // softmax
    for (int64_t i = 0; i < R; ++i) {
      C* row = gb + i * n;
      const int64_t t = pt[r0 + i];
      if (t == ignore_index) {
        std::fill(row, row + n, C(0));
        continue;
      }
      const C k = static_cast<C>(scale) * pg[per_row ? r0 + i : 0];
      for (int64_t j = 0; j < n; ++j) row[j] *= k;
      row[t] -= k;
    }
    writer.commit(po + r0 * n, count);
  });
}

void softmax(const Tensor& out, const Tensor& x, bool log) {
  visit_floating(x.dtype(), "softmax", [&]<class T>() { softmax_typed<T>(out, x, log); });
}
void softmax_backward(const Tensor& grad_in, const Tensor& grad_out, const Tensor& y, bool log) {
  visit_floating(y.dtype(), "softmax_backward", [&]<class T>() { softmax_backward_typed<T>(grad_in, grad_out, y, log); });
}
void cross_entropy(const Tensor& loss, const Tensor& stats, const Tensor& x, const Tensor& target, int64_t ignore_index) {
  visit_floating(x.dtype(), "cross_entropy", [&]<class T>() { cross_entropy_typed<T>(loss, stats, x, target, ignore_index); });
}
void cross_entropy_backward(const Tensor& grad_x, const Tensor& x, const Tensor& stats, const Tensor& target,
                            const Tensor& g, double scale, int64_t ignore_index) {
  visit_floating(x.dtype(), "cross_entropy_backward", [&]<class T>() {
    cross_entropy_backward_typed<T>(grad_x, x, stats, target, g, scale, ignore_index);
  });
}
}  // namespace

void register_softmax(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    r.softmax.set(DeviceType::CPU, t, softmax);
    r.softmax_backward.set(DeviceType::CPU, t, softmax_backward);
    r.cross_entropy.set(DeviceType::CPU, t, cross_entropy);
    r.cross_entropy_backward.set(DeviceType::CPU, t, cross_entropy_backward);
  }
}

}  // namespace minidl::kernels::cpu
