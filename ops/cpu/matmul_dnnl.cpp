// f32 and bf16 products on oneDNN's matmul primitive (see matmul_dnnl.h). The operands are described to
// oneDNN in place, strides and all (a transposed view is a column-major matrix), so nothing is
// copied; the result is f32 in the caller's buffer (for bf16 operands narrowed by it once, as the
// widened path does) or bf16 written by oneDNN.
// One primitive per geometry (sizes, layouts, leading dims, alpha, beta), created on first use and
// kept; each call runs on the calling thread alone (the caller splits a large product into slabs
// across minidl's pool, as for its own GEMM).
#include "ops/cpu/matmul_dnnl.h"

#include <atomic>

#ifdef MINIDL_HAS_DNNL
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <type_traits>

#include "ops/cpu/conv_dnnl.h"
#include "ops/cpu/dnnl_common.h"
#include "ops/cpu/thread_buffer.h"
#endif

namespace minidl::kernels::cpu::dnnl_matmul {

namespace {
std::atomic<int64_t> g_calls{0};
}
int64_t calls() { return g_calls.load(); }

#ifndef MINIDL_HAS_DNNL
bool takes_bf16() { return false; }
bool takes_f32() { return false; }
bool set_f32(bool) { return false; }
bool gemm_f32(int64_t, int64_t, int64_t, MatrixRef<float>, MatrixRef<float>, float*, int64_t, float, float) { return false; }
bool gemm_bf16(int64_t, int64_t, int64_t, MatrixRef<bfloat16>, MatrixRef<bfloat16>, float*, int64_t, float, float) {
  return false;
}
bool gemm_bf16(int64_t, int64_t, int64_t, MatrixRef<bfloat16>, MatrixRef<bfloat16>, bfloat16*, int64_t, float) {
  return false;
}
#else
namespace {
using dnnl::memory;
using dt = memory::data_type;

// Below this many multiply-adds the call (primitive lookup, memory objects, stream: ~2-3 us) costs
// more than the widened product takes. Measured on Zen 5, 1 thread, whole mm calls: 48^3 native
// 5.1 us against 3.2 widened, 64^3 4.3 against 4.8, 80^3 6.0 against 7.8, 128x256x10 6.0 against 9.3.
constexpr double kMinMacs = 64 * 64 * 64;

// m, n, k, a's order and ld, b's order and ld, ldc, alpha, beta, operand type, result type.
using Key = std::tuple<int64_t, int64_t, int64_t, bool, int64_t, bool, int64_t, int64_t, float, float, int, int>;

struct Cached {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
};

template <class S>
memory::dims strides_of(const MatrixRef<S>& x) { return x.row_major ? memory::dims{x.ld, 1} : memory::dims{1, x.ld}; }

// The primitive for a geometry; null when oneDNN has none for it or only its reference loops
// (remembered too).
template <class S>
const Cached* lookup(int64_t m, int64_t n, int64_t k, const MatrixRef<S>& a, const MatrixRef<S>& b,
                     int64_t ldc, float alpha, float beta, dt result) {
  constexpr dt operand_type = std::is_same_v<S, float> ? dt::f32 : dt::bf16;
  static std::mutex mu;
  static std::map<Key, std::unique_ptr<Cached>> cache;
  const Key key{m, n, k, a.row_major, a.ld, b.row_major, b.ld, ldc, alpha, beta, static_cast<int>(operand_type),
                static_cast<int>(result)};
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second.get();
  std::unique_ptr<Cached> c;
  try {
    const memory::desc a_md({m, k}, operand_type, strides_of(a)), b_md({k, n}, operand_type, strides_of(b));
    const memory::desc c_md({m, n}, result, memory::dims{ldc, 1});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops sum;
      sum.append_sum(beta);
      attr.set_post_ops(sum);
    }
    SingleOmpThread one;  // primitive creation plans for the thread count it sees
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, dnnl_engine());
    // bf16: anything but the reference loops; f32: only the brgemm kernel (its jit sgemm, taken for
    // strided operands, was up to 5x slower than Eigen's on the MLP's slabs).
    const char* impl = pd.impl_info_str();
    const bool fast = std::is_same_v<S, float> ? std::strncmp(impl, "brg", 3) == 0 : std::strncmp(impl, "ref", 3) != 0;
    if (fast) c = std::make_unique<Cached>(Cached{pd, dnnl::matmul(pd)});
  } catch (const dnnl::error&) {
    c.reset();  // a layout or size oneDNN refuses: the caller's own GEMM
  }
  return (cache[key] = std::move(c)).get();
}

// Whether x (rows x cols) has a leading dim of at least its line length: an expanded operand (a
// broadcast row, stride 0) or overlapping lines stay with Eigen, which reads them as they are.
template <class S>
bool lines_apart(const MatrixRef<S>& x, int64_t rows, int64_t cols) {
  return x.ld >= (x.row_major ? cols : rows);
}

// c in `result` (f32 or bf16).
template <class S>
bool run(int64_t m, int64_t n, int64_t k, const MatrixRef<S>& a, const MatrixRef<S>& b, void* c, dt result,
         int64_t ldc, float alpha, float beta) {
  if (m <= 0 || n <= 0 || k <= 0 || double(m) * double(n) * double(k) < kMinMacs) return false;
  if (std::is_same_v<S, bfloat16> && !takes_bf16()) return false;
  if (!lines_apart(a, m, k) || !lines_apart(b, k, n)) return false;
  const Cached* p = lookup(m, n, k, a, b, ldc, alpha, beta, result);
  if (!p) return false;
  thread_local ThreadBuffer scratch;
  dnnl::engine& e = dnnl_engine();
  const memory::desc pad = p->pd.scratchpad_desc();
  memory a_mem(p->pd.src_desc(), e, const_cast<S*>(a.data));
  memory b_mem(p->pd.weights_desc(), e, const_cast<S*>(b.data));
  memory c_mem(p->pd.dst_desc(), e, c);
  memory pad_mem(pad, e, scratch.reserve(pad.get_size()));
  SingleOmpThread one;
  dnnl::stream& s = dnnl_thread_stream();
  p->prim.execute(s, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}, {DNNL_ARG_SCRATCHPAD, pad_mem}});
  s.wait();
  g_calls.fetch_add(1, std::memory_order_relaxed);
  return true;
}
}  // namespace

bool takes_bf16() { return dnnl_conv::native_bf16(); }

bool gemm_bf16(int64_t m, int64_t n, int64_t k, MatrixRef<bfloat16> a, MatrixRef<bfloat16> b, float* c, int64_t ldc,
               float alpha, float beta) {
  return run(m, n, k, a, b, c, dt::f32, ldc, alpha, beta);
}
bool gemm_bf16(int64_t m, int64_t n, int64_t k, MatrixRef<bfloat16> a, MatrixRef<bfloat16> b, bfloat16* c, int64_t ldc,
               float alpha) {
  return run(m, n, k, a, b, c, dt::bf16, ldc, alpha, 0.0f);
}
namespace {
std::atomic<int> g_f32{-1};
}
// oneDNN 2.6 has its brgemm matmul (the fast one) for f32 from avx512_core up; below it runs its jit
// sgemm, no faster than Eigen's on AVX2 (MLP step 0.96-1.03x on Zen 5 with both capped at AVX2).
bool takes_f32() {
  static const bool avx512 = dnnl_has_isa(dnnl_cpu_isa_avx512_core);
  return avx512 && switch_on(g_f32, "MINIDL_DNNL_F32") && dnnl_conv::enabled();
}
bool set_f32(bool on) {
  const bool was = switch_on(g_f32, "MINIDL_DNNL_F32");
  g_f32.store(on ? 1 : 0);
  return was;
}

bool gemm_f32(int64_t m, int64_t n, int64_t k, MatrixRef<float> a, MatrixRef<float> b, float* c, int64_t ldc,
              float alpha, float beta) {
  return takes_f32() && run(m, n, k, a, b, c, dt::f32, ldc, alpha, beta);
}
#endif

}  // namespace minidl::kernels::cpu::dnnl_matmul
