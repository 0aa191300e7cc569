// CUDA 2-D convolution through cuDNN 9's legacy API, with the CPU kernels' contracts (ops/kernels.h:
// Conv2dGeometry, contiguous NCHW operands of one dtype): forward (cudnnConvolutionForward),
// input gradient (cudnnConvolutionBackwardData) and weight gradient
// (cudnnConvolutionBackwardFilter), with stride, padding, dilation and groups. f16/bf16 data compute
// in f32 (CUDNN_DATA_FLOAT) with tensor-op math allowed; f32 runs in plain FMA math (no TF32, so
// results agree with the CPU, as cuBLAS in gemm.cu); f64 in f64.
//
// - Each (device, pass, dtype, geometry) is prepared once: descriptors, the algorithm (timed by
//   cudnnFind*AlgorithmEx, or cuDNN's heuristics under MINIDL_CUDNN_SEARCH=heuristic) and its
//   workspace size; a call then makes one cuDNN call. The workspace is a scratch tensor from the
//   caching allocator.
// - cuDNN pads symmetrically: a geometry whose bottom/right padding differs from its top/left
//   (padding="same" with an even kernel) runs on an explicitly zero-padded copy of the input.
// - Bias (forward: b[o]; input gradient: b[c]) is added by a small kernel; the bias gradient is the
//   CUDA sum reduction of gy over (N, H, W).
// - Layout is NCHW throughout. Whether NHWC (channels-last) is faster for f16/bf16 on the H200 is to
//   be measured on the GPU before changing the layout.
#include <cudnn.h>

#include <array>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "framework/cuda.h"
#include "ops/cuda/common.cuh"

namespace minidl::kernels::cuda {

namespace {

// One cuDNN handle per device, bound to the device's stream, created on first use.
cudnnHandle_t handle(int device) {
  struct Slot {
    std::once_flag once;
    cudnnHandle_t h = nullptr;
  };
  static std::vector<Slot> slots(static_cast<size_t>(minidl::cuda::device_count()));
  Slot& s = slots.at(static_cast<size_t>(device));
  std::call_once(s.once, [&] {
    minidl::cuda::DeviceGuard g(device);
    cudnnHandle_t h = nullptr;
    MINIDL_CUDNN_CHECK(cudnnCreate(&h));
    try {
      MINIDL_CUDNN_CHECK(cudnnSetStream(h, minidl::cuda::stream(device)));
    } catch (...) {
      cudnnDestroy(h);  // call_once runs again on the next call, creating another
      throw;
    }
    s.h = h;
  });
  return s.h;
}

cudnnDataType_t data_type(DType t) {
  switch (t) {
    case DType::F32: return CUDNN_DATA_FLOAT;
    case DType::F64: return CUDNN_DATA_DOUBLE;
    case DType::F16: return CUDNN_DATA_HALF;
    case DType::BF16: return CUDNN_DATA_BFLOAT16;
    default: MINIDL_FAIL("conv2d", "cuDNN convolution takes f32, f64, f16 or bf16, got ", dtype_name(t));
  }
}

int as_int(int64_t v) {
  MINIDL_CHECK(v >= 0 && v <= INT32_MAX, "conv2d", "size ", v, " does not fit cuDNN's int arguments");
  return static_cast<int>(v);
}

// The convolution as cuDNN runs it: the input it reads (the real one, or a zero-padded copy when the
// padding is asymmetric) and the symmetric padding it applies.
struct Plan {
  bool padded_copy = false;
  int64_t H = 0, W = 0, ph = 0, pw = 0;
};

int64_t symmetric_out(int64_t in, int64_t pad, int64_t k, int64_t d, int64_t s) { return (in + 2 * pad - d * (k - 1) - 1) / s + 1; }

Plan plan_for(const Conv2dGeometry& g) {
  if (symmetric_out(g.H, g.ph, g.kH, g.dh, g.sh) == g.OH && symmetric_out(g.W, g.pw, g.kW, g.dw, g.sw) == g.OW)
    return {false, g.H, g.W, g.ph, g.pw};
  // The copy is exactly as tall and wide as the last output's window reaches: cuDNN with no padding
  // then produces OH x OW.
  return {true, (g.OH - 1) * g.sh + (g.kH - 1) * g.dh + 1, (g.OW - 1) * g.sw + (g.kW - 1) * g.dw + 1, 0, 0};
}

// The input rows and columns that land inside the padded copy (the others are never read).
int64_t rows_kept(const Conv2dGeometry& g, const Plan& p) { return std::max<int64_t>(0, std::min(g.H, p.H - g.ph)); }
int64_t cols_kept(const Conv2dGeometry& g, const Plan& p) { return std::max<int64_t>(0, std::min(g.W, p.W - g.pw)); }

// The [N, C, rows, cols] window of an NCHW tensor t starting at (r0, c0).
Tensor window(const Tensor& t, int64_t rows, int64_t cols, int64_t r0, int64_t c0) {
  const int64_t H = t.size(2), W = t.size(3);
  return make_view(t, {t.size(0), t.size(1), rows, cols}, {t.size(1) * H * W, H * W, W, 1}, t.offset() + r0 * W + c0);
}

Tensor zeros_on_device(const Shape& shape, const Tensor& like) {
  Tensor z = scratch(shape, like.dtype(), like);
  registry().fill.get(like.device(), like.dtype())(z, 0.0);
  return z;
}

// x zero-padded to the plan's [N, C, H, W], with the input's top-left at (ph, pw).
Tensor padded_input(const Tensor& x, const Conv2dGeometry& g, const Plan& p) {
  Tensor xp = zeros_on_device({g.N, g.C, p.H, p.W}, x);
  const int64_t r = rows_kept(g, p), c = cols_kept(g, p);
  if (r > 0 && c > 0) copy_on_device(window(xp, r, c, g.ph, g.pw), window(x, r, c, 0, 0));
  return xp;
}

// RAII cuDNN descriptors of one convolution.
struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  // A failing call leaves the constructor by an exception, when no destructor runs: the descriptors
  // created before it are destroyed here.
  Descriptors(const Conv2dGeometry& g, const Plan& p, DType t) {
    try {
      const cudnnDataType_t dt = data_type(t);
      const cudnnDataType_t compute = t == DType::F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
      MINIDL_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x));
      MINIDL_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y));
      MINIDL_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w));
      MINIDL_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
      MINIDL_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, dt, as_int(g.N), as_int(g.C), as_int(p.H), as_int(p.W)));
      MINIDL_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, dt, as_int(g.N), as_int(g.O), as_int(g.OH), as_int(g.OW)));
      MINIDL_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w, dt, CUDNN_TENSOR_NCHW, as_int(g.O), as_int(g.C / g.groups), as_int(g.kH),
                                                    as_int(g.kW)));
      MINIDL_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv, as_int(p.ph), as_int(p.pw), as_int(g.sh), as_int(g.sw), as_int(g.dh),
                                                         as_int(g.dw), CUDNN_CROSS_CORRELATION, compute));
      MINIDL_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv, as_int(g.groups)));
      MINIDL_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, is_low_precision(t) ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
    } catch (...) {
      destroy();
      throw;
    }
  }
  ~Descriptors() { destroy(); }
  // Destroy calls cannot fail for valid descriptors; a destructor must not throw.
  void destroy() noexcept {
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (x) cudnnDestroyTensorDescriptor(x);
    conv = nullptr, w = nullptr, y = nullptr, x = nullptr;
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
};

enum class Pass : int { Forward, Data, Filter };

// The algorithm a pass runs and the math type to run it with: for f16/bf16 the one cuDNN reports
// (tensor ops allowed); for f32/f64 always CUDNN_FMA_MATH (CUDNN_DEFAULT_MATH would permit TF32 on
// Ampere and later), skipping algorithms that exist only as tensor-op kernels.
struct Choice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_FMA_MATH;
};

// The first result usable here: cuDNN returns them best first (by measured time for Find, by
// predicted rank for the heuristics), each with its status.
template <class Perf>
Choice first_usable(const Perf* perf, int n, DType t, const char* what) {
  for (int i = 0; i < n; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    if (is_low_precision(t)) return {static_cast<int>(perf[i].algo), perf[i].mathType};
    if (perf[i].mathType == CUDNN_TENSOR_OP_MATH || perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;
    return {static_cast<int>(perf[i].algo), CUDNN_FMA_MATH};
  }
  MINIDL_FAIL(what, "cuDNN offers no algorithm for this convolution (", dtype_name(t), ")");
}

// How algorithms are chosen, from MINIDL_CUDNN_SEARCH, read once: "exhaustive" (the default) times
// every algorithm on the first call of each shape (cudnnFind*AlgorithmEx, as PyTorch with
// torch.backends.cudnn.benchmark = True; PyTorch's own default is the heuristics); "heuristic" takes
// cuDNN's first-ranked (cudnnGet*Algorithm_v7), with no timing at first use.
bool exhaustive_search() {
  static const bool exhaustive = [] {
    const char* v = std::getenv("MINIDL_CUDNN_SEARCH");
    if (v == nullptr || std::string(v) == "exhaustive") return true;
    MINIDL_CHECK(std::string(v) == "heuristic", "conv2d", "MINIDL_CUDNN_SEARCH must be 'exhaustive' or 'heuristic', got '", v, "'");
    return false;
  }();
  return exhaustive;
}

// The timed search may use this much workspace per algorithm; algorithms that need more are skipped.
constexpr size_t kSearchWorkspaceBytes = size_t{256} << 20;

// The device buffers a search runs on, in the descriptors' roles: x (the input, or the input
// gradient it writes for Data), w (the weight, or its gradient for Filter), y (the output, or the
// output gradient for Data and Filter). The search overwrites the pass's output, which the call
// then writes for real.
struct SearchBuffers {
  void* x;
  void* w;
  void* y;
};

// Everything one (device, pass, dtype, geometry) needs at each call, built on its first call and kept
// for the process: the descriptors (math type set), the algorithm, its workspace size. Later calls
// make no cuDNN call but the convolution itself.
struct Prepared {
  Descriptors d;
  Choice c;
  size_t workspace = 0;
  Prepared(const Conv2dGeometry& g, const Plan& p, DType t) : d(g, p, t) {}
};

Choice search(Pass pass, const Descriptors& d, DType t, int device, const SearchBuffers& io, const Tensor& like) {
  cudnnHandle_t h = handle(device);
  constexpr int kMax = 16;
  int n = 0;
  if (exhaustive_search()) {
    Tensor keep;
    void* ws = nullptr;
    size_t ws_bytes = kSearchWorkspaceBytes;
    try {
      keep = scratch({static_cast<int64_t>(ws_bytes)}, DType::U8, like);
      ws = keep.raw_data();
    } catch (const Error&) {
      ws_bytes = 0;  // no room for a workspace: the search times the algorithms that need none
    }
    if (pass == Pass::Forward) {
      cudnnConvolutionFwdAlgoPerf_t perf[kMax];
      MINIDL_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(h, d.x, io.x, d.w, io.w, d.conv, d.y, io.y, kMax, &n, perf, ws,
                                                               ws_bytes));
      return first_usable(perf, n, t, "conv2d");
    }
    if (pass == Pass::Data) {
      cudnnConvolutionBwdDataAlgoPerf_t perf[kMax];
      MINIDL_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(h, d.w, io.w, d.y, io.y, d.conv, d.x, io.x, kMax, &n, perf,
                                                                    ws, ws_bytes));
      return first_usable(perf, n, t, "conv2d_input_grad");
    }
    cudnnConvolutionBwdFilterAlgoPerf_t perf[kMax];
    MINIDL_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(h, d.x, io.x, d.y, io.y, d.conv, d.w, io.w, kMax, &n, perf,
                                                                    ws, ws_bytes));
    return first_usable(perf, n, t, "conv2d_weight_grad");
  }
  if (pass == Pass::Forward) {
    cudnnConvolutionFwdAlgoPerf_t perf[kMax];
    MINIDL_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, kMax, &n, perf));
    return first_usable(perf, n, t, "conv2d");
  }
  if (pass == Pass::Data) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[kMax];
    MINIDL_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, kMax, &n, perf));
    return first_usable(perf, n, t, "conv2d_input_grad");
  }
  cudnnConvolutionBwdFilterAlgoPerf_t perf[kMax];
  MINIDL_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, kMax, &n, perf));
  return first_usable(perf, n, t, "conv2d_weight_grad");
}

const Prepared& prepare(Pass pass, const Conv2dGeometry& g, const Plan& p, DType t, int device, const SearchBuffers& io,
                        const Tensor& like) {
  using Key = std::array<int64_t, 19>;
  static std::mutex mu;
  static std::map<Key, std::unique_ptr<Prepared>> cache;  // entries never move nor go: references stay valid
  const Key key = {device, static_cast<int64_t>(pass), static_cast<int64_t>(t), g.N, g.C, p.H, p.W, g.O, g.kH, g.kW,
                   g.OH, g.OW, g.sh, g.sw, p.ph, p.pw, g.dh, g.dw, g.groups};
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  auto prep = std::make_unique<Prepared>(g, p, t);
  const Descriptors& d = prep->d;
  prep->c = search(pass, d, t, device, io, like);
  MINIDL_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, prep->c.math));
  cudnnHandle_t h = handle(device);
  if (pass == Pass::Forward)
    MINIDL_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h, d.x, d.w, d.conv, d.y,
                                                              static_cast<cudnnConvolutionFwdAlgo_t>(prep->c.algo), &prep->workspace));
  else if (pass == Pass::Data)
    MINIDL_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
        h, d.w, d.y, d.conv, d.x, static_cast<cudnnConvolutionBwdDataAlgo_t>(prep->c.algo), &prep->workspace));
  else
    MINIDL_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        h, d.x, d.y, d.conv, d.w, static_cast<cudnnConvolutionBwdFilterAlgo_t>(prep->c.algo), &prep->workspace));
  return *cache.emplace(key, std::move(prep)).first->second;
}

// alpha = 1, beta = 0 in the scaling type cuDNN wants for the dtype (double for f64, else float).
struct Scaling {
  float f1 = 1, f0 = 0;
  double d1 = 1, d0 = 0;
  bool dbl;
  explicit Scaling(DType t) : dbl(t == DType::F64) {}
  const void* one() const { return dbl ? static_cast<const void*>(&d1) : static_cast<const void*>(&f1); }
  const void* zero() const { return dbl ? static_cast<const void*>(&d0) : static_cast<const void*>(&f0); }
};

// A workspace of `bytes` (null when none is needed), held by `keep`.
void* workspace(size_t bytes, const Tensor& like, Tensor& keep) {
  if (bytes == 0) return nullptr;
  keep = scratch({static_cast<int64_t>(bytes)}, DType::U8, like);
  return keep.raw_data();
}

// t[n, c, ...] += b[c] for a contiguous [N, C, S] tensor.
template <class T>
__global__ void add_channel_bias_kernel(T* t, const T* b, int64_t C, int64_t S, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x)
    t[i] = convert<T>(load(t[i]) + load(b[(i / S) % C]));
}

void add_channel_bias(const Tensor& t, const Tensor& b) {
  const int64_t n = t.numel();
  if (n == 0) return;
  visit_floating(t.dtype(), "conv2d bias", [&](auto tag) {
    using T = typename decltype(tag)::type;
    add_channel_bias_kernel<T><<<grid_for(n, t.device().index), kThreads, 0, stream_of(t)>>>(
        static_cast<T*>(t.raw_data()), static_cast<const T*>(b.raw_data()), t.size(1), t.size(2) * t.size(3), n);
    MINIDL_CUDA_CHECK_LAUNCH("conv2d bias");
  });
}

void forward(const Tensor& y, const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dGeometry& g) {
  minidl::cuda::DeviceGuard guard(x.device());
  if (y.numel() == 0) return;
  const DType t = x.dtype();
  const int dev = x.device().index;
  const Plan p = plan_for(g);
  const Tensor xin = p.padded_copy ? padded_input(x, g, p) : x;
  const Prepared& pr = prepare(Pass::Forward, g, p, t, dev, {xin.raw_data(), w.raw_data(), y.raw_data()}, x);
  Tensor keep;
  void* ws = workspace(pr.workspace, x, keep);
  const Scaling s(t);
  MINIDL_CUDNN_CHECK(cudnnConvolutionForward(handle(dev), s.one(), pr.d.x, xin.raw_data(), pr.d.w, w.raw_data(), pr.d.conv,
                                             static_cast<cudnnConvolutionFwdAlgo_t>(pr.c.algo), ws, pr.workspace, s.zero(),
                                             pr.d.y, y.raw_data()));
  if (b.defined()) add_channel_bias(y, b);
}

void input_grad(const Tensor& gx, const Tensor& gy, const Tensor& w, const Tensor& b, const Conv2dGeometry& g) {
  minidl::cuda::DeviceGuard guard(gy.device());
  if (gx.numel() == 0) return;
  const DType t = gy.dtype();
  const int dev = gy.device().index;
  const Plan p = plan_for(g);
  if (gy.numel() == 0) {
    registry().fill.get(gx.device(), t)(gx, 0.0);
  } else {
    Tensor gxp = p.padded_copy ? scratch({g.N, g.C, p.H, p.W}, t, gx) : gx;
    const Prepared& pr = prepare(Pass::Data, g, p, t, dev, {gxp.raw_data(), w.raw_data(), gy.raw_data()}, gy);
    Tensor keep;
    void* ws = workspace(pr.workspace, gy, keep);
    const Scaling s(t);
    MINIDL_CUDNN_CHECK(cudnnConvolutionBackwardData(handle(dev), s.one(), pr.d.w, w.raw_data(), pr.d.y, gy.raw_data(), pr.d.conv,
                                                    static_cast<cudnnConvolutionBwdDataAlgo_t>(pr.c.algo), ws, pr.workspace,
                                                    s.zero(), pr.d.x, gxp.raw_data()));
    if (p.padded_copy) {
      // gx is the padded gradient's window at (ph, pw); input rows/columns the convolution never
      // read get 0.
      registry().fill.get(gx.device(), t)(gx, 0.0);
      const int64_t r = rows_kept(g, p), cc = cols_kept(g, p);
      if (r > 0 && cc > 0) copy_on_device(window(gx, r, cc, 0, 0), window(gxp, r, cc, g.ph, g.pw));
    }
  }
  if (b.defined()) add_channel_bias(gx, b);
}

void weight_grad(const Tensor& gw, const Tensor& gb, const Tensor& x, const Tensor& gy, const Conv2dGeometry& g) {
  minidl::cuda::DeviceGuard guard(gy.device());
  const DType t = gy.dtype();
  const int dev = gy.device().index;
  if (gb.defined())
    registry().reduce.get(gy.device(), t)(ReduceOp::Sum, make_view(gb, {1, g.O, 1, 1}, {g.O, 1, 1, 1}, gb.offset()), Tensor(), gy,
                                          {0, 2, 3});
  if (gw.numel() == 0) return;
  if (gy.numel() == 0 || x.numel() == 0) {
    registry().fill.get(gw.device(), t)(gw, 0.0);
    return;
  }
  const Plan p = plan_for(g);
  const Tensor xin = p.padded_copy ? padded_input(x, g, p) : x;
  const Prepared& pr = prepare(Pass::Filter, g, p, t, dev, {xin.raw_data(), gw.raw_data(), gy.raw_data()}, gy);
  Tensor keep;
  void* ws = workspace(pr.workspace, gy, keep);
  const Scaling s(t);
  MINIDL_CUDNN_CHECK(cudnnConvolutionBackwardFilter(handle(dev), s.one(), pr.d.x, xin.raw_data(), pr.d.y, gy.raw_data(), pr.d.conv,
                                                    static_cast<cudnnConvolutionBwdFilterAlgo_t>(pr.c.algo), ws, pr.workspace,
                                                    s.zero(), pr.d.w, gw.raw_data()));
}
// cuDNN's two passes share nothing: run them in turn.
void backward(const Tensor& gx, const Tensor& gw, const Tensor& gb, const Tensor& x, const Tensor& gy, const Tensor& w,
              const Conv2dGeometry& g) {
  input_grad(gx, gy, w, Tensor(), g);
  weight_grad(gw, gb, x, gy, g);
}
}  // namespace

void register_conv(Registry& r) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    r.conv2d.set(DeviceType::CUDA, t, forward);
    r.conv2d_input_grad.set(DeviceType::CUDA, t, input_grad);
    r.conv2d_weight_grad.set(DeviceType::CUDA, t, weight_grad);
    r.conv2d_backward.set(DeviceType::CUDA, t, backward);
  }
}

}  // namespace minidl::kernels::cuda
