// minidl-bench-conv-lab: the CPU conv kernels pass by pass on the zoo's CNN layer shapes, oneDNN
// (ops/cpu/conv_dnnl.cpp) against the im2col + GEMM path, alternated, min of N per cell (the least
// disturbed run on a shared machine). How the choice in bench/README.md's performance log was made.
//
//   minidl-bench-conv-lab [reps=5]        (OMP_NUM_THREADS=1 for the single-thread figures)
//   minidl-bench-conv-lab runs [reps=5] [bf16|f16|f32] [KiB,KiB,...=0,128,256,512]
// The second form times forward + joint backward (conv2d + conv2d_backward, as a training step
// calls them; the input layer's weight gradient alone) on oneDNN with f16/bf16 channels-last images widened to its f32 primitives, for each
// size of the runs a slot's images are widened in (dnnl_conv::set_run_kib; 0: the whole slot at
// once), alternated, min of N: how run_kib()'s default was chosen (f32, which is never widened, for
// the baseline: its columns differ by the machine's spread only).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "minidl.h"
#include "ops/cpu/conv_dnnl.h"
#include "ops/kernels.h"

namespace {
using namespace minidl;

struct Layer {
  const char* model;
  int64_t N, C, H, O, k, stride, pad;
  int count;  // how many convs of this shape one forward has
};

// ResNet-20 (b128), SmallCNN (b64) and LeNet-5 (b64), nn/models.cpp.
const Layer kLayers[] = {
    {"resnet20", 128, 3, 32, 16, 3, 1, 1, 1},   {"resnet20", 128, 16, 32, 16, 3, 1, 1, 6},
    {"resnet20", 128, 16, 32, 32, 3, 2, 1, 1},  {"resnet20", 128, 16, 32, 32, 1, 2, 0, 1},
    {"resnet20", 128, 32, 16, 32, 3, 1, 1, 5},  {"resnet20", 128, 32, 16, 64, 3, 2, 1, 1},
    {"resnet20", 128, 32, 16, 64, 1, 2, 0, 1},  {"resnet20", 128, 64, 8, 64, 3, 1, 1, 5},
    {"cnn", 64, 3, 32, 32, 3, 1, 1, 1},         {"cnn", 64, 32, 32, 32, 3, 1, 1, 1},
    {"cnn", 64, 32, 16, 64, 3, 1, 1, 1},        {"cnn", 64, 64, 16, 64, 3, 1, 1, 1},
    {"cnn", 64, 64, 8, 128, 3, 1, 1, 1},
    {"lenet", 64, 1, 28, 6, 5, 1, 2, 1},        {"lenet", 64, 6, 14, 16, 5, 1, 0, 1},
};
const char* const kModelNames[] = {"resnet20 b128", "cnn b64", "lenet b64"};

double seconds(const std::chrono::steady_clock::time_point& t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

kernels::Conv2dGeometry geometry_of(const Layer& l) {
  kernels::Conv2dGeometry g;
  g.N = l.N, g.C = l.C, g.H = g.W = l.H, g.O = l.O, g.kH = g.kW = l.k, g.sh = g.sw = l.stride, g.ph = g.pw = l.pad;
  g.OH = g.OW = (l.H + 2 * l.pad - l.k) / l.stride + 1;
  return g;
}

std::string layer_name(const Layer& l) {
  char name[64];
  std::snprintf(name, sizeof name, "%lldx%lld %lld->%lld k%lld s%lld", (long long)l.H, (long long)l.H, (long long)l.C,
                (long long)l.O, (long long)l.k, (long long)l.stride);
  return name;
}

int model_index(const Layer& l) { return l.model[0] == 'r' ? 0 : l.model[0] == 'c' ? 1 : 2; }

// `runs` mode: forward + joint backward of f16/bf16 channels-last layers per run size.
int compare_runs(int reps, DType dtype, const std::vector<int64_t>& kibs) {
  namespace dc = kernels::cpu::dnnl_conv;
  const auto& K = kernels::registry();
  const Device cpu = Device::cpu();
  const size_t nk = kibs.size();
  std::printf("conv forward + backward, %s channels-last on oneDNN's f32 primitives, %d threads, min of %d alternated "
              "runs (ms) per run size (KiB of f32 per image operand; 0 = the whole slot)\n",
              dtype_name(dtype), omp_get_max_threads(), reps);
  std::printf("%-9s %-28s %5s |", "model", "layer", "count");
  for (int64_t k : kibs) std::printf(" %7lld", (long long)k);
  std::printf(" | best / whole\n");
  std::vector<std::vector<double>> total(3, std::vector<double>(nk, 0.0));
  for (const Layer& l : kLayers) {
    const kernels::Conv2dGeometry g = geometry_of(l);
    if (!K.conv2d_channels_last.get(cpu, dtype)(g)) continue;  // the layers that run channels-last
    auto image = [&](Shape s) { return cast(randn(s), dtype).contiguous(MemoryFormat::ChannelsLast); };
    Tensor x = image({g.N, g.C, g.H, g.W}), gy = image({g.N, g.O, g.OH, g.OW});
    Tensor y = image({g.N, g.O, g.OH, g.OW}), gx = image({g.N, g.C, g.H, g.W});
    Tensor w = cast(randn({g.O, g.C, g.kH, g.kW}), dtype), gw = empty(w.shape(), dtype);
    std::vector<double> best(nk, 1e30);
    for (int r = 0; r < reps + 1; ++r)  // the first run warms caches and creates the primitives
      for (size_t i = 0; i < nk; ++i) {
        dc::set_run_kib(kibs[i]);
        const auto t0 = std::chrono::steady_clock::now();
        K.conv2d.get(cpu, dtype)(y, x, w, Tensor(), g);
        if (l.C <= 3) K.conv2d_weight_grad.get(cpu, dtype)(gw, Tensor(), x, gy, g);  // the input layer
        else K.conv2d_backward.get(cpu, dtype)(gx, gw, Tensor(), x, gy, w, g);
        if (r > 0) best[i] = std::min(best[i], seconds(t0));
      }
    std::printf("%-9s %-28s %5d |", l.model, layer_name(l).c_str(), l.count);
    for (size_t i = 0; i < nk; ++i) {
      std::printf(" %7.2f", best[i] * 1e3);
      total[model_index(l)][i] += l.count * best[i];
    }
    std::printf(" | %.2fx\n", *std::min_element(best.begin(), best.end()) / best[0]);
  }
  dc::set_run_kib(256);
  for (int m = 0; m < 3; ++m) {
    if (total[m][0] == 0) continue;
    std::printf("%s, the channels-last layers of one step (ms):", kModelNames[m]);
    for (size_t i = 0; i < nk; ++i) std::printf(" %lld KiB %.1f (%.2fx)", (long long)kibs[i], total[m][i] * 1e3, total[m][0] / total[m][i]);
    std::printf("\n");
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  namespace dc = kernels::cpu::dnnl_conv;
  if (!dc::compiled()) {
    std::printf("built without oneDNN: nothing to compare\n");
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "runs") {
    const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
    const std::string d = argc > 3 ? argv[3] : "bf16";
    const DType dtype = d == "f16" ? DType::F16 : d == "f32" ? DType::F32 : DType::BF16;  // f32: the baseline
    std::vector<int64_t> kibs;
    for (std::string list = argc > 4 ? argv[4] : "0,128,256,512"; !list.empty();) {
      const size_t comma = list.find(',');
      kibs.push_back(std::atoll(list.substr(0, comma).c_str()));
      list = comma == std::string::npos ? "" : list.substr(comma + 1);
    }
    return compare_runs(reps, dtype, kibs);
  }
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const auto& K = kernels::registry();
  const Device cpu = Device::cpu();
  std::printf("conv passes, f32, %d threads, min of %d alternated runs (ms); ratio = im2col / oneDNN\n",
              omp_get_max_threads(), reps);
  std::printf("%-9s %-28s %5s | %8s %8s %5s | %8s %8s %5s | %8s %8s %5s\n", "model", "layer", "count", "fwd i2c", "dnnl",
              "x", "dX i2c", "dnnl", "x", "dW i2c", "dnnl", "x");
  double total[3][2] = {{0, 0}, {0, 0}, {0, 0}};  // [model][backend], weighted by count
  for (const Layer& l : kLayers) {
    const kernels::Conv2dGeometry g = geometry_of(l);
    Tensor x = randn({g.N, g.C, g.H, g.W}), w = randn({g.O, g.C, g.kH, g.kW}), gy = randn({g.N, g.O, g.OH, g.OW});
    Tensor y = empty({g.N, g.O, g.OH, g.OW}), gx = empty({g.N, g.C, g.H, g.W}), gw = empty(w.shape());
    double best[3][2];
    for (auto& b : best) b[0] = b[1] = 1e30;
    for (int r = 0; r < reps + 1; ++r)  // the first run warms caches and creates the primitives
      for (int backend = 0; backend < 2; ++backend) {
        dc::set_enabled(backend == 1);
        auto t0 = std::chrono::steady_clock::now();
        K.conv2d.get(cpu, DType::F32)(y, x, w, Tensor(), g);
        const double f = seconds(t0);
        t0 = std::chrono::steady_clock::now();
        K.conv2d_input_grad.get(cpu, DType::F32)(gx, gy, w, Tensor(), g);
        const double d = seconds(t0);
        t0 = std::chrono::steady_clock::now();
        K.conv2d_weight_grad.get(cpu, DType::F32)(gw, Tensor(), x, gy, g);
        const double wg = seconds(t0);
        if (r == 0) continue;
        best[0][backend] = std::min(best[0][backend], f);
        best[1][backend] = std::min(best[1][backend], d);
        best[2][backend] = std::min(best[2][backend], wg);
      }
    std::printf("%-9s %-28s %5d |", l.model, layer_name(l).c_str(), l.count);
    for (int p = 0; p < 3; ++p)
      std::printf(" %8.2f %8.2f %4.2fx%s", best[p][0] * 1e3, best[p][1] * 1e3, best[p][0] / best[p][1], p < 2 ? " |" : "\n");
    const int m = model_index(l);
    const bool first = l.C <= 3;  // the input layer: no input gradient in training
    for (int b = 0; b < 2; ++b) total[m][b] += l.count * (first ? best[0][b] + best[2][b] : best[0][b] + best[1][b] + best[2][b]);
  }
  dc::set_enabled(true);
  for (int m = 0; m < 3; ++m)
    std::printf("%s: all conv passes of one training step (the first layer has no input gradient): im2col %.1f ms, "
                "oneDNN %.1f ms, %.2fx\n",
                kModelNames[m], total[m][0] * 1e3, total[m][1] * 1e3, total[m][0] / total[m][1]);
  return 0;
}
