// minidl-bench-norm-lab: batch norm followed by ReLU on the zoo's activation shapes, the fused op
// (batch_norm_relu) against the composite relu(batch_norm(...)), forward and backward (training
// mode, f32 and bf16), alternated, min and median of N per cell. How performance log 14 in
// bench/README.md was measured.
//
//   minidl-bench-norm-lab [reps=15]        (OMP_NUM_THREADS=1 for the single-thread figures)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "minidl.h"

namespace {
using namespace minidl;

struct Shape4 {
  const char* where;
  int64_t N, C, H;
};
// ResNet-20's three stages (b128) and SmallCNN's first block (b64), nn/models.cpp.
const Shape4 kShapes[] = {{"resnet20 stage 1", 128, 16, 32},
                          {"resnet20 stage 2", 128, 32, 16},
                          {"resnet20 stage 3", 128, 64, 8},
                          {"cnn block 1", 64, 32, 32}};

double seconds(const std::chrono::steady_clock::time_point& t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
  std::printf("batch norm + ReLU, training, forward then backward, %d threads, %d alternated runs (ms: min / median)\n",
              omp_get_max_threads(), reps);
  std::printf("%-18s %-5s | %17s | %17s | %12s\n", "shape", "dtype", "composite", "fused", "fused speed");
  for (const Shape4& s : kShapes)
    for (DType dt : {DType::F32, DType::BF16}) {
      const Shape shape{s.N, s.C, s.H, s.H};
      Tensor x0 = cast(randn(shape), dt), gy = cast(randn(shape), dt);
      Tensor w = ones({s.C}).requires_grad_(), b = zeros({s.C}).requires_grad_();
      Tensor rm = zeros({s.C}), rv = ones({s.C});
      std::vector<double> t[2];
      for (int r = 0; r < reps + 1; ++r)  // the first round warms the caches and the allocator
        for (int fused = 0; fused < 2; ++fused) {
          Tensor x = x0.detach().requires_grad_();
          const auto t0 = std::chrono::steady_clock::now();
          Tensor y = fused ? batch_norm_relu(x, rm, rv, w, b, true) : relu(batch_norm(x, rm, rv, w, b, true));
          y.backward(gy);
          const double e = seconds(t0);
          if (r > 0) t[fused].push_back(e);
          w.set_grad(Tensor());
          b.set_grad(Tensor());
        }
      const double c_min = *std::min_element(t[0].begin(), t[0].end()), f_min = *std::min_element(t[1].begin(), t[1].end());
      std::printf("%-18s %-5s | %7.3f / %7.3f | %7.3f / %7.3f | %4.2fx / %4.2fx\n", s.where, dtype_name(dt), c_min * 1e3,
                  median(t[0]) * 1e3, f_min * 1e3, median(t[1]) * 1e3, c_min / f_min, median(t[0]) / median(t[1]));
    }
  return 0;
}
