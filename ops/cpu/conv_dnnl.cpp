// oneDNN convolution behind the CPU conv kernels (see conv_dnnl.h). oneDNN's JIT convolutions read
// the image directly (no materialised im2col, no col2im) in blocked layouts (nChw8c on AVX2,
// nChw16c on AVX-512); our NCHW tensors and OIHW weights are reordered into the layout the
// primitive asks for and its output reordered back, per call.
//
// Threads: Debian's oneDNN runs on OpenMP. An OpenMP team next to minidl's pool would put two sets
// of spinning threads on the same cores (bench/README.md, "Threads"), so oneDNN never gets one: the
// batch is cut into one run of images per pool slot, exactly as the im2col path does, and each slot
// runs its own oneDNN primitive with the calling thread's OpenMP thread count set to 1 (oneDNN then
// runs inline, without a parallel region). A batch smaller than the thread count goes to the
// im2col path, which splits each GEMM across the pool instead. Weight gradients are summed over the
// slots in slot order (deterministic for a given thread count, like the im2col path).
//
// bf16 operands run on oneDNN's bf16 primitives where the CPU has AVX512_BF16 (native_bf16():
// vdpbf16ps products, f32 accumulation, 1.5-2.3x its f32 primitives per pass on Zen 5, bench/README.md
// performance log 15); their images and weights go through oneDNN's reorder in bf16, weight gradients
// come out in f32. Elsewhere f16/bf16 operands run on oneDNN's f32 primitives (2.6 has no f16
// convolution, and its bf16 one without AVX512_BF16 emulates the instruction), widened and narrowed by
// the calling kernel set's conversions inside the reorders: straight into and out of nChw8c / nChw16c
// in one pass. f32 images take the same channel-block copies; weights go through oneDNN's reorder.
//
// Primitive descriptors are cached per geometry and sub-batch (creating one costs ~0.1 ms);
// oneDNN's own primitive cache keeps the reorders. Scratchpads are per call (user mode), so one
// primitive may run on both slots at once.
#include "ops/cpu/conv_dnnl.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>

#ifdef MINIDL_HAS_DNNL
#include <omp.h>

#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ops/cpu/dnnl_common.h"
#include "ops/cpu/loops.h"
#include "ops/cpu/thread_buffer.h"
#include "ops/ops.h"
#endif

namespace minidl::kernels::cpu::dnnl_conv {

namespace {
std::atomic<int> g_enabled{-1};  // -1: not read from the environment yet
std::atomic<int> g_native_bf16{-1};
std::atomic<int64_t> g_calls{0};
std::atomic<int64_t> g_native_bf16_calls{0};
std::atomic<int64_t> g_run_kib{-1};  // -1: not read from the environment yet
std::atomic<int64_t> g_runs{0};
}

int64_t run_kib() {
  int64_t kib = g_run_kib.load(std::memory_order_relaxed);
  if (kib < 0) {
    const char* v = std::getenv("MINIDL_DNNL_RUN_KB");
    kib = v ? std::max<int64_t>(0, std::atoll(v)) : 256;
    g_run_kib.store(kib);
  }
  return kib;
}
void set_run_kib(int64_t kib) { g_run_kib.store(std::max<int64_t>(0, kib)); }

int64_t runs() { return g_runs.load(); }
int64_t calls() { return g_calls.load(); }
int64_t native_bf16_calls() { return g_native_bf16_calls.load(); }

#ifndef MINIDL_HAS_DNNL
bool compiled() { return false; }
bool enabled() { return false; }
void set_enabled(bool) {}
bool native_bf16_supported() { return false; }
bool native_bf16() { return false; }
void set_native_bf16(bool) {}
bool prefers_channels_last(const Conv2dGeometry&) { return false; }
bool forward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Conv2dGeometry&, const Conversions&) {
  return false;
}
bool input_grad(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Conv2dGeometry&, const Conversions&) {
  return false;
}
bool weight_grad(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Conv2dGeometry&, const Conversions&) {
  return false;
}
bool backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
              const Conv2dGeometry&, const Conversions&) {
  return false;
}
#else
bool compiled() { return true; }

bool enabled() { return switch_on(g_enabled, "MINIDL_DNNL"); }
void set_enabled(bool on) { g_enabled.store(on ? 1 : 0); }

// oneDNN's own reading of the CPU (it honours ONEDNN_MAX_CPU_ISA): the ISA mask includes the
// avx512_core_bf16 bits when it will run bf16 convolutions on vdpbf16ps rather than emulate them.
bool native_bf16_supported() {
  static const bool has = dnnl_has_isa(dnnl_cpu_isa_avx512_core_bf16);
  return has;
}
bool native_bf16() { return switch_on(g_native_bf16, "MINIDL_DNNL_BF16") && enabled() && native_bf16_supported(); }
void set_native_bf16(bool on) { g_native_bf16.store(on ? 1 : 0); }

namespace {
using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

enum class Pass { Forward, InputGrad, WeightGrad };

// A geometry with the sub-batch one slot runs, plus the pass, the primitive's data type (f32, or
// bf16 on native_bf16()) and whether a bias takes part.
using Key = std::tuple<int, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, bool>;
Key key_of(Pass p, dt type, const Conv2dGeometry& g, int64_t n, bool bias, bool channels_last) {
  return {static_cast<int>(p), static_cast<int>(type), n, g.C, g.H, g.W, g.O, g.kH, g.kW, g.OH, g.OW, g.sh, g.sw,
          g.ph, g.pw, g.dh, g.dw, g.groups, bias, channels_last};
}

memory::desc any_of(const memory::desc& d) { return memory::desc(d.dims(), d.data_type(), tag::any); }

// The plain (user) layouts of one slot's tensors in the primitive's data type, and oneDNN's
// description of the convolution. Images are NCHW, or NHWC (channels_last) for channels-last
// tensors, which the primitive then reads and writes as they are. Weight and bias gradients are f32
// in every case (the slots' partial sums are added in f32).
struct Plain {
  memory::desc src, wei, dst, bias, wei_grad;
  memory::dims strides, dilates, pad_l, pad_r;
  bool channels_last = false;
  // What the primitive is created with: the images' own layout when channels-last, else any
  // (oneDNN picks its blocked layout and the images are copied into and out of it).
  memory::desc src_arg() const { return channels_last ? src : any_of(src); }
  memory::desc dst_arg() const { return channels_last ? dst : any_of(dst); }
};

// False when oneDNN's output-size rule cannot express the geometry (our bottom/right padding is
// implied by OH/OW and may be "negative"; oneDNN wants pad_r >= 0 with the same floor division).
bool describe(const Conv2dGeometry& g, int64_t n, dt type, bool channels_last, Plain& p) {
  const int64_t keh = (g.kH - 1) * g.dh + 1, kew = (g.kW - 1) * g.dw + 1;
  int64_t prh = (g.OH - 1) * g.sh + keh - g.H - g.ph, prw = (g.OW - 1) * g.sw + kew - g.W - g.pw;
  // Any pad_r in [need, need + stride - 1] gives the same output size: take the least >= 0.
  if (prh < 0) prh = prh + g.sh - 1 >= 0 ? 0 : -1;
  if (prw < 0) prw = prw + g.sw - 1 >= 0 ? 0 : -1;
  if (prh < 0 || prw < 0 || g.ph < 0 || g.pw < 0) return false;
  const tag images = channels_last ? tag::nhwc : tag::nchw;
  p.channels_last = channels_last;
  p.src = memory::desc({n, g.C, g.H, g.W}, type, images);
  p.dst = memory::desc({n, g.O, g.OH, g.OW}, type, images);
  auto weights = [&](dt t) {
    return g.groups == 1 ? memory::desc({g.O, g.C, g.kH, g.kW}, t, tag::oihw)
                         : memory::desc({g.groups, g.O / g.groups, g.C / g.groups, g.kH, g.kW}, t, tag::goihw);
  };
  p.wei = weights(type);
  p.wei_grad = weights(dt::f32);
  p.bias = memory::desc({g.O}, dt::f32, tag::x);
  p.strides = {g.sh, g.sw};
  p.dilates = {g.dh - 1, g.dw - 1};
  p.pad_l = {g.ph, g.pw};
  p.pad_r = {prh, prw};
  return true;
}


dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

dnnl::convolution_forward::primitive_desc forward_pd(const Plain& p, bool bias) {
  using cf = dnnl::convolution_forward;
  const auto d = bias ? cf::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, p.src_arg(),
                                 any_of(p.wei), p.bias, p.dst_arg(), p.strides, p.dilates, p.pad_l, p.pad_r)
                      : cf::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, p.src_arg(),
                                 any_of(p.wei), p.dst_arg(), p.strides, p.dilates, p.pad_l, p.pad_r);
  return cf::primitive_desc(d, user_scratchpad(), dnnl_engine());
}

// One cached convolution: the primitive and its descriptor (the layouts it wants).
struct Cached {
  dnnl::primitive prim;
  dnnl::primitive_desc_base pd;
  Plain plain;
};

// The primitive for (pass, data type, geometry, sub-batch, bias), created on first use; null when
// oneDNN has no implementation for it, or only its reference one in bf16 (remembered too).
const Cached* lookup(Pass pass, dt type, const Conv2dGeometry& g, int64_t n, bool bias, bool channels_last) {
  static std::mutex mu;
  static std::map<Key, std::unique_ptr<Cached>> cache;
  const Key k = key_of(pass, type, g, n, bias, channels_last);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(k);
  if (it != cache.end()) return it->second.get();
  std::unique_ptr<Cached> c;
  Plain p;
  if (describe(g, n, type, channels_last, p)) {
    try {
      const auto fwd = forward_pd(p, bias);
      c = std::make_unique<Cached>();
      c->plain = p;
      if (pass == Pass::Forward) {
        c->pd = fwd;
        c->prim = dnnl::convolution_forward(fwd);
      } else if (pass == Pass::InputGrad) {
        using cb = dnnl::convolution_backward_data;
        cb::primitive_desc pd(cb::desc(dnnl::algorithm::convolution_direct, p.src_arg(), any_of(p.wei), p.dst_arg(),
                                       p.strides, p.dilates, p.pad_l, p.pad_r),
                              user_scratchpad(), dnnl_engine(), fwd);
        c->pd = pd;
        c->prim = cb(pd);
      } else {
        using cw = dnnl::convolution_backward_weights;
        const auto d = bias ? cw::desc(dnnl::algorithm::convolution_direct, p.src_arg(), any_of(p.wei_grad), p.bias,
                                       p.dst_arg(), p.strides, p.dilates, p.pad_l, p.pad_r)
                            : cw::desc(dnnl::algorithm::convolution_direct, p.src_arg(), any_of(p.wei_grad),
                                       p.dst_arg(), p.strides, p.dilates, p.pad_l, p.pad_r);
        cw::primitive_desc pd(d, user_scratchpad(), dnnl_engine(), fwd);
        c->pd = pd;
        c->prim = cw(pd);
      }
      // oneDNN's reference bf16 kernels are plain loops, far slower than the widened f32 ones.
      if (type == dt::bf16 && std::strncmp(c->pd.impl_info_str(), "ref", 3) == 0) c.reset();
    } catch (const dnnl::error&) {
      c.reset();  // unimplemented for this geometry: the caller takes its own path
    }
  }
  return (cache[k] = std::move(c)).get();
}

// Per-thread buffers for the blocked copies and the scratchpad, one per role, kept and grown between
// calls: a fresh oneDNN allocation per call page-faulted every time (a 128x16x32x32 reorder into new
// memory took 11.7 ms, 0.7 GB/s; DNNL_VERBOSE, one thread).
enum Role { kIn0, kIn1, kWeights, kWeightGrad, kPartial, kOut, kScratch, kStaging, kRoles };
void* buffer(Role r, size_t bytes) {
  thread_local ThreadBuffer bufs[kRoles];
  return bufs[r].reserve(bytes);
}

// One operand of a slot: its data and dtype, f32 or f16/bf16 (converted on the way in and out).
struct Operand {
  const void* data;
  DType type;
  Operand at(int64_t elements) const {
    return {static_cast<const char*>(data) + elements * static_cast<int64_t>(element_size(type)), type};
  }
  void* mutable_data() const { return const_cast<void*>(data); }
};
Operand operand(const Tensor& t) { return {t.raw_data(), t.dtype()}; }

// The channel block of `want` when it is oneDNN's nChw8c / nChw16c for the NCHW f32 `plain`, else 0.
int64_t channel_block(const memory::desc& plain, const memory::desc& want) {
  if (plain.dims().size() != 4) return 0;
  for (auto [t, b] : {std::pair{tag::nChw8c, 8}, std::pair{tag::nChw16c, 16}})
    if (want == memory::desc(plain.dims(), dt::f32, t)) return b;
  return 0;
}

// Whether a user operand of type `user` is stored as oneDNN's type `t` (f32 as f32, bf16 as bf16).
bool stored_as(DType user, dt t) { return (user == DType::F32 && t == dt::f32) || (user == DType::BF16 && t == dt::bf16); }

// A user operand in the layout `want`: the operand itself when its type is the primitive's and the
// layouts agree, else a copy in the role's buffer (read = true: converted and reordered now; false: reordered and
// converted back by write_back after the call). Images go to and from a channel-blocked layout
// through the kernel set's channel-block copies (f16/bf16 converted in the same pass; f32 too, one
// route for every dtype: in cache 1.4x oneDNN 2.6's reorder, inside a step both are bound by memory,
// bench/README.md performance log 12); any other layout goes through oneDNN's reorder (f16/bf16: of
// an f32 copy in the plain layout).
struct Arg {
  // How the operand reaches `used`, chosen once for both directions.
  // `plain` is in the primitive's type; f16/bf16 operands of an f32 primitive are converted.
  enum class Route {
    Direct,   // the primitive's type in the wanted layout: used is the user's buffer
    Reorder,  // the primitive's type to another layout (weights; any bf16 one): oneDNN's reorder
    Flat,     // f16/bf16 for an f32 primitive, in the wanted (plain) layout: a flat conversion
    Blocked,  // any dtype for an f32 primitive, to nChw8c/nChw16c: the channel-block copy
    Staged,   // f16/bf16 for an f32 primitive, to any other layout: a flat conversion to plain f32,
              // then oneDNN's reorder
  };
  memory::desc plain;
  Operand user;
  memory used;
  const Conversions& cv;
  Route route = Route::Direct;
  int64_t block = 0;

  Arg(const memory::desc& plain_md, Operand op, const memory::desc& want, Role role, dnnl::stream& s, bool read,
      const Conversions& conversions)
      : plain(plain_md), user(op), cv(conversions) {
    const bool same = stored_as(user.type, plain.data_type());
    if (!same && plain.data_type() != dt::f32)
      MINIDL_FAIL("conv2d (oneDNN)", "a ", dtype_name(user.type), " operand cannot feed a bf16 primitive");
    if (plain == want) route = same ? Route::Direct : Route::Flat;
    else if ((block = channel_block(plain, want))) route = Route::Blocked;
    else route = same ? Route::Reorder : Route::Staged;
    used = route == Route::Direct ? memory(plain, dnnl_engine(), user.mutable_data())
                                  : memory(want, dnnl_engine(), buffer(role, want.get_size()));
    if (!read) return;
    switch (route) {
      case Route::Direct: break;
      case Route::Reorder: {
        memory src(plain, dnnl_engine(), user.mutable_data());
        dnnl::reorder(src, used).execute(s, src, used);
        break;
      }
      case Route::Flat: cv.widen(user.data, user.type, float_data(), elements()); break;
      case Route::Blocked: cv.widen_blocked(user.data, user.type, float_data(), images(), channels(), pixels(), block); break;
      case Route::Staged: {
        memory staged = staging();
        cv.widen(user.data, user.type, static_cast<float*>(staged.get_data_handle()), elements());
        dnnl::reorder(staged, used).execute(s, staged, used);
        break;
      }
    }
  }
  void write_back(dnnl::stream& s) {
    if (route != Route::Direct && route != Route::Reorder) s.wait();  // our conversions run after oneDNN's work
    switch (route) {
      case Route::Direct: break;
      case Route::Reorder: {
        memory dst(plain, dnnl_engine(), user.mutable_data());
        dnnl::reorder(used, dst).execute(s, used, dst);
        break;
      }
      case Route::Flat: cv.narrow(float_data(), user.type, user.mutable_data(), elements()); break;
      case Route::Blocked: cv.narrow_blocked(float_data(), user.type, user.mutable_data(), images(), channels(), pixels(), block); break;
      case Route::Staged: {
        memory staged = staging();
        dnnl::reorder(used, staged).execute(s, used, staged);
        s.wait();
        cv.narrow(static_cast<const float*>(staged.get_data_handle()), user.type, user.mutable_data(), elements());
        break;
      }
    }
  }
  float* float_data() const { return static_cast<float*>(used.get_data_handle()); }
  memory staging() const { return memory(plain, dnnl_engine(), buffer(kStaging, plain.get_size())); }
  int64_t elements() const { return static_cast<int64_t>(plain.get_size() / sizeof(float)); }
  int64_t images() const { return plain.dims()[0]; }
  int64_t channels() const { return plain.dims()[1]; }
  int64_t pixels() const { return plain.dims()[2] * plain.dims()[3]; }
};

// Slots for a batch of n images, as the im2col path counts them (conv.cpp's image_slots); 0 when
// the batch is smaller than the thread count (that path splits each GEMM across threads instead).
int slots_for(int64_t n) {
  if (in_parallel()) return 1;
  const int nt = max_threads();
  return n >= nt ? nt : 0;
}

// Images per oneDNN call within a slot: the whole sub-batch (0), or runs of a few images when
// f16/bf16 images are widened for an f32 primitive (conv_dnnl.h, run_kib()). Widened whole, a slot's
// f32 copy went out to memory and came back when oneDNN read it: 14% of a 1-thread ResNet-20 bf16
// step on Zen 3 was the conversions (bench/README.md, performance log 37).
int64_t run_images(dt type, const Conv2dGeometry& g, std::initializer_list<DType> images) {
  bool widening = false;
  for (DType d : images) widening = widening || d != DType::F32;
  const int64_t budget = run_kib() * 1024;
  if (type != dt::f32 || !widening || budget == 0) return 0;
  const int64_t per_image = 4 * std::max(g.C * g.H * g.W, g.O * g.OH * g.OW);
  return std::max<int64_t>(1, budget / per_image);
}

// Calls f(first image, images, first run) for the runs of `run` images (0: one run) that cover
// images [n0, n0 + n).
template <class F>
void for_runs(int64_t n0, int64_t n, int64_t run, F&& f) {
  const int64_t step = run > 0 ? run : n;
  for (int64_t i = 0; i < n; i += step) f(n0 + i, std::min(step, n - i), i == 0);
}

// The primitives of one pass for every run size the slots' sub-batches take, all looked up before
// anything runs (so a geometry oneDNN refuses leaves nothing half done).
class Primitives {
 public:
  bool build(Pass pass, dt type, const Conv2dGeometry& g, bool bias, bool channels_last, int slots, int64_t run) {
    SingleOmpThread one;  // primitive creation plans for the thread count it sees
    run_ = run;
    for (int s = 0; s < slots; ++s)
      for_runs(0, g.N * (s + 1) / slots - g.N * s / slots, run, [&](int64_t, int64_t n, bool) {
        for (const auto& [size, c] : by_size_)
          if (size == n) return;
        by_size_.emplace_back(n, lookup(pass, type, g, n, bias, channels_last));
      });
    for (const auto& entry : by_size_)
      if (!entry.second) return false;
    return true;
  }
  const Cached& of(int64_t images) const {
    for (const auto& [size, c] : by_size_)
      if (size == images) return *c;
    MINIDL_FAIL("conv2d (oneDNN)", "no primitive for a run of ", images, " images");
  }
  int64_t run() const { return run_; }

 private:
  int64_t run_ = 0;
  std::vector<std::pair<int64_t, const Cached*>> by_size_;
};

// Runs f(slot, first image, images, stream) for each slot on minidl's pool, with OpenMP limited to
// the calling thread inside (oneDNN then opens no parallel region).
template <class F>
void on_slots(dt type, const Conv2dGeometry& g, int slots, F&& f) {
  parallel_chunks(slots, [&](int64_t s) {
    SingleOmpThread one;
    dnnl::stream& stream = dnnl_thread_stream();
    const int64_t n0 = g.N * s / slots, n1 = g.N * (s + 1) / slots;
    f(static_cast<int>(s), n0, n1 - n0, stream);
    stream.wait();
  });
  g_calls.fetch_add(1);
  if (type == dt::bf16) g_native_bf16_calls.fetch_add(1);
}

// Calls f(first image, images, first run, primitive) for each run of images [n0, n0 + n) of a slot,
// waiting for oneDNN's work after each (the next run reuses the buffers).
template <class F>
void each_run(const Primitives& prims, int64_t n0, int64_t n, dnnl::stream& stream, F&& f) {
  for_runs(n0, n, prims.run(), [&](int64_t r0, int64_t rn, bool first) {
    f(r0, rn, first, prims.of(rn));
    stream.wait();
    g_runs.fetch_add(1, std::memory_order_relaxed);
  });
}

// Runs f(slot, first image, images, primitives, stream) for each slot; false when a primitive is
// missing.
template <class F>
bool run_slots(Pass pass, dt type, const Conv2dGeometry& g, bool bias, bool channels_last, int slots, int64_t run,
               F&& f) {
  Primitives prims;
  if (!prims.build(pass, type, g, bias, channels_last, slots, run)) return false;
  on_slots(type, g, slots, [&](int s, int64_t n0, int64_t n, dnnl::stream& stream) { f(s, n0, n, prims, stream); });
  return true;
}

// The weights in the layout a run's primitive wants, converted once per slot and again only when a
// later run's primitive wants another layout.
struct SlotWeights {
  std::optional<Arg> arg;
  const memory& in_layout_of(const Plain& p, Operand w, const memory::desc& wanted, dnnl::stream& s,
                             const Conversions& cv) {
    if (!arg || arg->used.get_desc() != wanted) arg.emplace(p.wei, w, wanted, kWeights, s, true, cv);
    return arg->used;
  }
};

// A tensor in f32 (f16/bf16 widened by a cast), or undefined.
Tensor f32(const Tensor& t) { return !t.defined() || t.dtype() == DType::F32 ? t : cast(t.detach(), DType::F32); }

// Whether oneDNN should run this pass of this geometry, by measurement: not the weight gradient of
// a convolution over a single input channel (an MNIST model's first layer), where oneDNN's kernel
// (plain source layout) measured 0.46-0.51x of the im2col path on LeNet-5's 1->6 5x5 layer
// (bench/README.md, performance log 1 and 11).
bool worth_it(Pass pass, const Conv2dGeometry& g) { return !(pass == Pass::WeightGrad && g.C == 1 && g.groups == 1); }

// The slots for this pass, 0 when oneDNN does not take it (switched off, f64, a small batch, a
// pass it runs slower than the im2col path).
int slots_for(Pass pass, const Tensor& t, const Conv2dGeometry& g) {
  const DType d = t.dtype();
  if (!enabled() || (d != DType::F32 && d != DType::F16 && d != DType::BF16) || !worth_it(pass, g)) return 0;
  return slots_for(g.N);
}

// Runs the f32 kernel `f` with its results in f32 buffers narrowed into `out` (and `out2`, the
// bias gradient, when defined) afterwards: for the weight gradient, whose slots are summed in f32.
template <class F>
bool widened(const Tensor& out, const Tensor& out2, F&& f) {
  if (out.dtype() == DType::F32) return f(out, out2);
  Tensor o = empty(out.shape(), DType::F32), o2 = out2.defined() ? empty(out2.shape(), DType::F32) : Tensor();
  if (!f(o, o2)) return false;
  out.copy_(o);
  if (out2.defined()) out2.copy_(o2);
  return true;
}

memory scratchpad(const Cached& c) {
  const memory::desc d = c.pd.query_md(dnnl::query::scratchpad_md);
  return memory(d, dnnl_engine(), buffer(kScratch, d.get_size()));
}
memory::desc want(const Cached& c, dnnl::query q) { return c.pd.query_md(q); }

// x, w, y: f32 or f16/bf16 (on an f32 primitive converted inside the reorders; bf16 on a bf16 one
// reordered as it is); b: f32 or undefined.
bool forward_slots(dt type, Operand y, Operand x, Operand w, const Tensor& b, const Conv2dGeometry& g, int slots,
                   int64_t run, bool cl, const Conversions& cv) {
  const bool bias = b.defined();
  return run_slots(Pass::Forward, type, g, bias, cl, slots, run, [&](int, int64_t n0, int64_t n, const Primitives& prims, dnnl::stream& s) {
    SlotWeights wei;
    each_run(prims, n0, n, s, [&](int64_t r0, int64_t, bool, const Cached& c) {
      const Plain& p = c.plain;
      Arg src(p.src, x.at(r0 * g.C * g.H * g.W), want(c, dnnl::query::src_md), kIn0, s, true, cv);
      Arg dst(p.dst, y.at(r0 * g.O * g.OH * g.OW), want(c, dnnl::query::dst_md), kOut, s, false, cv);
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src.used},
                                           {DNNL_ARG_WEIGHTS, wei.in_layout_of(p, w, want(c, dnnl::query::weights_md), s, cv)},
                                           {DNNL_ARG_DST, dst.used}, {DNNL_ARG_SCRATCHPAD, scratchpad(c)}};
      if (bias) args[DNNL_ARG_BIAS] = memory(p.bias, dnnl_engine(), const_cast<float*>(b.data_ptr<float>()));
      c.prim.execute(s, args);
      dst.write_back(s);
    });
  });
}

// gx: f32, or f16/bf16 when there is no bias b (conv_transpose2d's, added in f32 afterwards).
bool input_grad_slots(dt type, Operand gx, Operand gy, Operand w, const Tensor& b, const Conv2dGeometry& g,
                      int slots, int64_t run, bool cl, const Conversions& cv) {
  const float* bp = b.defined() ? b.data_ptr<float>() : nullptr;
  return run_slots(Pass::InputGrad, type, g, false, cl, slots, run, [&](int, int64_t n0, int64_t n, const Primitives& prims, dnnl::stream& s) {
    SlotWeights wei;
    each_run(prims, n0, n, s, [&](int64_t r0, int64_t rn, bool, const Cached& c) {
      const Plain& p = c.plain;
      const Operand gx_run = gx.at(r0 * g.C * g.H * g.W);
      Arg diff_dst(p.dst, gy.at(r0 * g.O * g.OH * g.OW), want(c, dnnl::query::diff_dst_md), kIn0, s, true, cv);
      Arg diff_src(p.src, gx_run, want(c, dnnl::query::diff_src_md), kOut, s, false, cv);
      c.prim.execute(s, {{DNNL_ARG_DIFF_DST, diff_dst.used},
                         {DNNL_ARG_WEIGHTS, wei.in_layout_of(p, w, want(c, dnnl::query::weights_md), s, cv)},
                         {DNNL_ARG_DIFF_SRC, diff_src.used}, {DNNL_ARG_SCRATCHPAD, scratchpad(c)}});
      diff_src.write_back(s);
      if (bp) {  // conv_transpose2d's bias, per input channel
        s.wait();
        float* gxp = static_cast<float*>(gx_run.mutable_data());
        for (int64_t i = 0; i < rn * g.C; ++i) {
          float* r = gxp + i * g.H * g.W;
          const float v = bp[i % g.C];
          for (int64_t k = 0; k < g.H * g.W; ++k) r[k] += v;
        }
      }
    });
  });
}

// dst[i] += src[i]: a slot's or a run's part of a weight gradient added to the sum, in f32.
void add_into(float* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] += src[i];
}

// The weight gradient summed over slots in f32: slot 0 writes straight into gw/gb, the others into
// partials added after, in slot order.
class WeightGradSums {
 public:
  WeightGradSums(const Tensor& gw, const Tensor& gb, int slots)
      : gw_(gw.data_ptr<float>()), gb_(gb.defined() ? gb.data_ptr<float>() : nullptr), wn_(gw.numel()),
        bn_(gb.defined() ? gb.numel() : 0), partial_(static_cast<size_t>(slots - 1) * (wn_ + bn_)) {}
  float* weights(int slot) { return slot == 0 ? gw_ : partial_.data() + (slot - 1) * (wn_ + bn_); }
  float* bias(int slot) { return bn_ == 0 ? nullptr : slot == 0 ? gb_ : weights(slot) + wn_; }
  void add_partials() {
    for (size_t p = 0; p < partial_.size(); p += wn_ + bn_) {
      add_into(gw_, partial_.data() + p, wn_);
      if (bn_) add_into(gb_, partial_.data() + p + wn_, bn_);
    }
  }

 private:
  float* gw_;
  float* gb_;
  int64_t wn_, bn_;
  std::vector<float> partial_;
};

// One run's weight gradient written into wdst (and bdst when the primitive has a bias) when it is
// the slot's first run, else added to them (in f32, run by run). diff_dst: gy already in a oneDNN
// layout (the input gradient's copy), used when it is the one this primitive wants.
void weight_grad_run(const Cached& c, Operand x, Operand gy, const memory* diff_dst, float* wdst, float* bdst,
                     bool first, dnnl::stream& s, const Conversions& cv) {
  const Plain& p = c.plain;
  const int64_t wn = static_cast<int64_t>(p.wei_grad.get_size() / sizeof(float)), bn = bdst ? p.bias.dims()[0] : 0;
  float* wout = first ? wdst : static_cast<float*>(buffer(kPartial, (wn + bn) * sizeof(float)));
  float* bout = !bdst ? nullptr : first ? bdst : wout + wn;
  Arg src(p.src, x, want(c, dnnl::query::src_md), kIn1, s, true, cv);
  const memory::desc dst_md = want(c, dnnl::query::diff_dst_md);
  std::optional<Arg> own;
  if (!diff_dst || diff_dst->get_desc() != dst_md) own.emplace(p.dst, gy, dst_md, kIn0, s, true, cv);
  Arg diff_wei(p.wei_grad, {wout, DType::F32}, want(c, dnnl::query::diff_weights_md), kWeightGrad, s, false, cv);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src.used}, {DNNL_ARG_DIFF_DST, own ? own->used : *diff_dst},
                                       {DNNL_ARG_DIFF_WEIGHTS, diff_wei.used}, {DNNL_ARG_SCRATCHPAD, scratchpad(c)}};
  if (bout) args[DNNL_ARG_DIFF_BIAS] = memory(p.bias, dnnl_engine(), bout);
  c.prim.execute(s, args);
  diff_wei.write_back(s);
  if (first) return;
  s.wait();
  add_into(wdst, wout, wn);
  if (bn) add_into(bdst, bout, bn);
}

// gw, gb: f32 (the slots' partial sums are added in f32); x, gy: f32 or f16/bf16.
bool weight_grad_slots(dt type, const Tensor& gw, const Tensor& gb, Operand x, Operand gy, const Conv2dGeometry& g,
                       int slots, int64_t run, bool cl, const Conversions& cv) {
  WeightGradSums sums(gw, gb, slots);
  const bool ok = run_slots(Pass::WeightGrad, type, g, gb.defined(), cl, slots, run, [&](int slot, int64_t n0, int64_t n, const Primitives& prims, dnnl::stream& s) {
    each_run(prims, n0, n, s, [&](int64_t r0, int64_t, bool first, const Cached& c) {
      weight_grad_run(c, x.at(r0 * g.C * g.H * g.W), gy.at(r0 * g.O * g.OH * g.OW), nullptr, sums.weights(slot),
                      sums.bias(slot), first, s, cv);
    });
  });
  if (ok) sums.add_partials();
  return ok;
}

// Both gradients per run, gy reordered (or widened) once for the two primitives. gx: f32 or
// f16/bf16; gw, gb: f32.
bool backward_slots(dt type, Operand gx, const Tensor& gw, const Tensor& gb, Operand x, Operand gy, Operand w,
                    const Conv2dGeometry& g, int slots, int64_t run, bool cl, const Conversions& cv) {
  Primitives data_pass, weight_pass;
  if (!data_pass.build(Pass::InputGrad, type, g, false, cl, slots, run) ||
      !weight_pass.build(Pass::WeightGrad, type, g, gb.defined(), cl, slots, run))
    return false;
  WeightGradSums sums(gw, gb, slots);
  on_slots(type, g, slots, [&](int slot, int64_t n0, int64_t n, dnnl::stream& s) {
    SlotWeights wei;
    each_run(data_pass, n0, n, s, [&](int64_t r0, int64_t rn, bool first, const Cached& c) {
      const Plain& p = c.plain;
      const Operand gy_run = gy.at(r0 * g.O * g.OH * g.OW);
      Arg diff_dst(p.dst, gy_run, want(c, dnnl::query::diff_dst_md), kIn0, s, true, cv);
      {
        Arg diff_src(p.src, gx.at(r0 * g.C * g.H * g.W), want(c, dnnl::query::diff_src_md), kOut, s, false, cv);
        c.prim.execute(s, {{DNNL_ARG_DIFF_DST, diff_dst.used},
                           {DNNL_ARG_WEIGHTS, wei.in_layout_of(p, w, want(c, dnnl::query::weights_md), s, cv)},
                           {DNNL_ARG_DIFF_SRC, diff_src.used}, {DNNL_ARG_SCRATCHPAD, scratchpad(c)}});
        diff_src.write_back(s);
        s.wait();  // the scratchpad is the weight gradient's next
      }
      weight_grad_run(weight_pass.of(rn), x.at(r0 * g.C * g.H * g.W), gy_run, &diff_dst.used, sums.weights(slot),
                      sums.bias(slot), first, s, cv);
    });
  });
  sums.add_partials();
  return true;
}

// The images' layout: cl = true when they are all channels-last, false when all NCHW-contiguous;
// false for a mix (the caller's path then copies them to NCHW).
bool same_layout(std::initializer_list<const Tensor*> images, bool& cl) {
  cl = false;
  for (const Tensor* t : images) cl = cl || t->suggest_memory_format() == MemoryFormat::ChannelsLast;
  for (const Tensor* t : images)
    if (!t->is_contiguous(cl ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous)) return false;
  return true;
}

// Runs f(type) with the bf16 primitives when every operand is bf16 and native_bf16(), and with the
// f32 ones when that is not so or oneDNN has no native kernel for the geometry (nothing has run
// then: the slot primitives are all looked up first).
template <class F>
bool on_primitives(std::initializer_list<DType> operands, F&& f) {
  bool bf16 = native_bf16();
  for (DType d : operands) bf16 = bf16 && d == DType::BF16;
  return (bf16 && f(dt::bf16)) || f(dt::f32);
}
}  // namespace

bool forward(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dGeometry& g,
             const Conversions& cv) {
  const int slots = slots_for(Pass::Forward, x, g);
  bool cl = false;
  return slots > 0 && same_layout({&y, &x}, cl) && on_primitives({y.dtype(), x.dtype(), w.dtype()}, [&](dt type) {
    return forward_slots(type, operand(y), operand(x), operand(w), f32(b), g, slots,
                         run_images(type, g, {y.dtype(), x.dtype()}), cl, cv);
  });
}

bool input_grad(const Tensor& gx, const Tensor& gy, const Tensor& w, const Tensor& b, const Conv2dGeometry& g,
                const Conversions& cv) {
  const int slots = slots_for(Pass::InputGrad, gy, g);
  bool cl = false;
  if (slots == 0 || !same_layout({&gx, &gy}, cl) || (cl && b.defined())) return false;
  if (!b.defined())
    return on_primitives({gx.dtype(), gy.dtype(), w.dtype()}, [&](dt type) {
      return input_grad_slots(type, operand(gx), operand(gy), operand(w), Tensor(), g, slots,
                              run_images(type, g, {gx.dtype(), gy.dtype()}), cl, cv);
    });
  return widened(gx, Tensor(), [&](const Tensor& gx32, const Tensor&) {
    return input_grad_slots(dt::f32, operand(gx32), operand(gy), operand(w), f32(b), g, slots,
                            run_images(dt::f32, g, {gy.dtype()}), cl, cv);
  });
}

bool weight_grad(const Tensor& gw, const Tensor& gb, const Tensor& x, const Tensor& gy, const Conv2dGeometry& g,
                 const Conversions& cv) {
  const int slots = slots_for(Pass::WeightGrad, x, g);
  bool cl = false;
  return slots > 0 && same_layout({&x, &gy}, cl) && widened(gw, gb, [&](const Tensor& gw32, const Tensor& gb32) {
    return on_primitives({x.dtype(), gy.dtype()}, [&](dt type) {
      return weight_grad_slots(type, gw32, gb32, operand(x), operand(gy), g, slots,
                               run_images(type, g, {x.dtype(), gy.dtype()}), cl, cv);
    });
  });
}

bool backward(const Tensor& gx, const Tensor& gw, const Tensor& gb, const Tensor& x, const Tensor& gy, const Tensor& w,
              const Conv2dGeometry& g, const Conversions& cv) {
  // Joint only where oneDNN takes both passes; otherwise the caller runs each pass on its own path.
  const int slots = std::min(slots_for(Pass::InputGrad, gy, g), slots_for(Pass::WeightGrad, x, g));
  bool cl = false;
  return slots > 0 && same_layout({&gx, &x, &gy}, cl) && widened(gw, gb, [&](const Tensor& gw32, const Tensor& gb32) {
    return on_primitives({gx.dtype(), x.dtype(), gy.dtype(), w.dtype()}, [&](dt type) {
      return backward_slots(type, operand(gx), gw32, gb32, operand(x), operand(gy), operand(w), g, slots,
                            run_images(type, g, {gx.dtype(), x.dtype(), gy.dtype()}), cl, cv);
    });
  });
}

bool prefers_channels_last(const Conv2dGeometry& g) {
  // Measured (bench/README.md, performance log 19): oneDNN's NHWC kernels match its blocked ones on
  // 8k-channel layers; other channel counts (LeNet-5's 6) and grouped convolutions stay on NCHW.
  const bool channels_ok = (g.C % 8 == 0 || g.C <= 4) && g.O % 8 == 0;
  Plain p;
  return enabled() && g.groups == 1 && channels_ok && slots_for(g.N) > 0 && describe(g, g.N, dt::f32, true, p);
}
#endif

}  // namespace minidl::kernels::cpu::dnnl_conv
