// minidl-bench-norm-lab: batch norm followed by ReLU on the zoo's activation shapes, the fused op
// (batch_norm_relu) against the composite relu(batch_norm(...)), forward and backward (training
// mode, f32 and bf16, NCHW and channels-last), alternated, min and median of N per cell; then each
// row kernel (channels-last images as [N*H*W, C]) alone, min of N, against a copy of the same
// tensor. How performance logs 14 and 21 in bench/README.md were measured.
//
//   minidl-bench-norm-lab [reps=15]        (OMP_NUM_THREADS=1 for the single-thread figures)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "minidl.h"
#include "ops/kernels.h"

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
// Each batch norm kernel on rows of channels, min of reps, in GB/s of the tensors it reads and
// writes, beside a copy of the same tensor (the memory's speed for this size).
void row_kernels(int reps) {
  const kernels::Registry& K = kernels::registry();
  const Device cpu = Device::cpu();
  std::printf("\nrow kernels, [N*H*W, C], %d threads, min of %d (ms, GB/s)\n", omp_get_max_threads(), reps);
  std::printf("%-18s %-5s | %14s | %14s | %14s | %14s | %14s\n", "shape", "dtype", "copy", "stats", "apply+relu",
              "bwd", "bwd masked");
  for (const Shape4& s : kShapes)
    for (DType dt : {DType::F32, DType::BF16}) {
      const int64_t M = s.N * s.H * s.H, C = s.C;
      const TensorOptions o(dt);
      Tensor x = cast(randn({M, C}), dt), gy = cast(randn({M, C}), dt), y = empty({M, C}, o), gx = empty({M, C}, o);
      Tensor mean = zeros({C}), var = ones({C}), scale = ones({C}), shift = zeros({C}), s1 = zeros({C}), s2 = zeros({C});
      Tensor dst = empty({M, C}, o);
      const double tensor_gb = static_cast<double>(M * C) * element_size(dt) / 1e9;
      auto best = [&](auto&& f) {
        double b = 1e30;
        for (int r = 0; r < reps + 1; ++r) {
          const auto t0 = std::chrono::steady_clock::now();
          f();
          if (r > 0) b = std::min(b, seconds(t0));
        }
        return b;
      };
      const double t_copy = best([&] { dst.copy_(x); });
      const double t_stats = best([&] { K.batch_norm_stats.get(cpu, dt)(mean, var, x); });
      const double t_apply = best([&] { K.batch_norm_apply.get(cpu, dt)(y, x, scale, shift, true, Tensor()); });
      const double t_bwd = best([&] { K.batch_norm_backward.get(cpu, dt)(gx, s1, s2, gy, x, mean, var, scale, true, Tensor()); });
      const double t_masked = best([&] { K.batch_norm_backward.get(cpu, dt)(gx, s1, s2, gy, x, mean, var, scale, true, y); });
      // Tensors read and written: copy 2, stats 1, apply 2, backward 5 (gy, x twice; gx), masked 7.
      auto cell = [&](double t, int tensors) { std::printf(" | %6.3f %5.1f", t * 1e3, tensors * tensor_gb / t); };
      std::printf("%-18s %-5s", s.where, dtype_name(dt));
      cell(t_copy, 2);
      cell(t_stats, 1);
      cell(t_apply, 2);
      cell(t_bwd, 5);
      cell(t_masked, 7);
      std::printf("\n");
    }
}
}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
  std::printf("batch norm + ReLU, training, forward then backward, %d threads, %d alternated runs (ms: min / median)\n",
              omp_get_max_threads(), reps);
  std::printf("%-18s %-5s %-3s | %17s | %17s | %12s\n", "shape", "dtype", "fmt", "composite", "fused", "fused speed");
  for (MemoryFormat fmt : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast})
  for (const Shape4& s : kShapes)
    for (DType dt : {DType::F32, DType::BF16}) {
      const Shape shape{s.N, s.C, s.H, s.H};
      Tensor x0 = cast(randn(shape), dt).contiguous(fmt), gy = cast(randn(shape), dt).contiguous(fmt);
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
      std::printf("%-18s %-5s %-3s | %7.3f / %7.3f | %7.3f / %7.3f | %4.2fx / %4.2fx\n", s.where, dtype_name(dt), fmt == MemoryFormat::ChannelsLast ? "cl" : "", c_min * 1e3,
                  median(t[0]) * 1e3, f_min * 1e3, median(t[1]) * 1e3, c_min / f_min, median(t[0]) / median(t[1]));
    }
  row_kernels(reps);
  return 0;
}
