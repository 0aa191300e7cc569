// minidl-gpu-step: times one training step of the MLP 784-256-256-10 on CUDA (SGD lr 0.05,
// momentum 0.9, cross-entropy), in f32 or under fp16 autocast with a GradScaler, on synthetic data
// already on the GPU: the same work bench/gpu/torch_mlp.py times in PyTorch. Prints one line
//   RESULT framework=minidl batch=128 amp=fp16 ms_per_step=... samples_per_s=... device_allocs=...
// (device_allocs: cudaMalloc calls during the timed steps; the caching allocator should make it 0).
// Usage: minidl-gpu-step --batch 128 --amp fp16|off [--steps 300] [--warmup 30]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "amp/grad_scaler.h"
#include "framework/cuda.h"
#include "minidl.h"
#include "nn/models.h"

using namespace minidl;

int main(int argc, char** argv) {
  int64_t batch = 128, steps = 300, warmup = 30;
  std::string amp_mode = "off";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--batch")) batch = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--steps")) steps = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--warmup")) warmup = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--amp")) amp_mode = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (!cuda::is_available()) {
    std::fprintf(stderr, "minidl-gpu-step: no CUDA GPU\n");
    return 1;
  }
  const bool fp16 = amp_mode == "fp16";
  const Device dev = Device::cuda(0);
  manual_seed(0);
  auto model = std::make_shared<nn::models::MLP>(784, std::vector<int64_t>{256, 256}, 10);
  model->to(dev);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  amp::GradScaler scaler(dev, amp::GradScalerOptions().enabled_(fp16));
  // Eight resident batches, cycled, so no step reuses the previous step's input.
  std::vector<Tensor> xs, ys;
  for (int i = 0; i < 8; ++i) {
    xs.push_back(rand({batch, 784}).to(dev));
    ys.push_back(randint(0, 10, {batch}).to(dev));
  }
  auto step = [&](int64_t i) {
    opt.zero_grad();
    Tensor loss;
    {
      amp::autocast scope(DeviceType::CUDA, DType::F16, fp16);
      loss = cross_entropy(model->forward(xs[i % 8]), ys[i % 8]);
    }
    scaler.scale(loss).backward();
    scaler.step(opt);
    scaler.update();
    return loss;
  };
  Tensor last;
  for (int64_t i = 0; i < warmup; ++i) last = step(i);
  cuda::synchronize();
  const auto before = cuda::memory_stats();
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < steps; ++i) last = step(i);
  cuda::synchronize();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto after = cuda::memory_stats();
  std::printf("RESULT framework=minidl batch=%lld amp=%s ms_per_step=%.4f samples_per_s=%.0f device_allocs=%lld "
              "final_loss=%.4f peak_allocated_mb=%.1f\n",
              static_cast<long long>(batch), fp16 ? "fp16" : "off", 1e3 * s / static_cast<double>(steps),
              static_cast<double>(batch * steps) / s, static_cast<long long>(after.device_allocs - before.device_allocs),
              last.item(), static_cast<double>(after.peak_allocated) / 1048576.0);
  return 0;
}
