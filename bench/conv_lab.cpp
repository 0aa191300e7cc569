// minidl-bench-conv-lab: the CPU conv kernels pass by pass on the zoo's CNN layer shapes, oneDNN
// (ops/cpu/conv_dnnl.cpp) against the im2col + GEMM path, alternated, min of N per cell (the least
// disturbed run on a shared machine). How the choice in bench/README.md's performance log was made.
//
//   minidl-bench-conv-lab [reps=5]        (OMP_NUM_THREADS=1 for the single-thread figures)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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
}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  namespace dc = kernels::cpu::dnnl_conv;
  if (!dc::compiled()) {
    std::printf("built without oneDNN: nothing to compare\n");
    return 0;
  }
  const auto& K = kernels::registry();
  const Device cpu = Device::cpu();
  std::printf("conv passes, f32, %d threads, min of %d alternated runs (ms); ratio = im2col / oneDNN\n",
              omp_get_max_threads(), reps);
  std::printf("%-9s %-28s %5s | %8s %8s %5s | %8s %8s %5s | %8s %8s %5s\n", "model", "layer", "count", "fwd i2c", "dnnl",
              "x", "dX i2c", "dnnl", "x", "dW i2c", "dnnl", "x");
  double total[3][2] = {{0, 0}, {0, 0}, {0, 0}};  // [model][backend], weighted by count
  for (const Layer& l : kLayers) {
    kernels::Conv2dGeometry g;
    g.N = l.N, g.C = l.C, g.H = g.W = l.H, g.O = l.O, g.kH = g.kW = l.k, g.sh = g.sw = l.stride, g.ph = g.pw = l.pad;
    g.OH = g.OW = (l.H + 2 * l.pad - l.k) / l.stride + 1;
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
    char name[64];
    std::snprintf(name, sizeof name, "%lldx%lld %lld->%lld k%lld s%lld", (long long)l.H, (long long)l.H, (long long)l.C,
                  (long long)l.O, (long long)l.k, (long long)l.stride);
    std::printf("%-9s %-28s %5d |", l.model, name, l.count);
    for (int p = 0; p < 3; ++p)
      std::printf(" %8.2f %8.2f %4.2fx%s", best[p][0] * 1e3, best[p][1] * 1e3, best[p][0] / best[p][1], p < 2 ? " |" : "\n");
    const int m = l.model[0] == 'r' ? 0 : l.model[0] == 'c' ? 1 : 2;
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
