// minidl-bench-rnn-lab: one LSTM training step (forward and backward of sum(output * w), no
// optimizer) on the CPU, in sequences per second, for bench/rnn_compare.sh to put beside PyTorch's
// nn.LSTM on the same shapes (bench/compare/torch_rnn.py). minidl's LSTM is PyTorch's formulas in
// differentiable ops (ops/recurrent.h), about ten small ops per step with no fused cell kernel; this
// says what that costs.
//
//   minidl-bench-rnn-lab SEQ BATCH INPUT HIDDEN LAYERS [seconds=2] [precision=f32|bf16]
// prints one JSON line: {"steps": n, "sequences_per_s": x, ...}, the median over 5 timed runs.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "minidl.h"

using namespace minidl;

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s SEQ BATCH INPUT HIDDEN LAYERS [seconds=2] [precision=f32|bf16]\n", argv[0]);
    return 2;
  }
  const int64_t L = std::atoll(argv[1]), N = std::atoll(argv[2]), I = std::atoll(argv[3]), H = std::atoll(argv[4]);
  const int64_t layers = std::atoll(argv[5]);
  const double budget = argc > 6 ? std::atof(argv[6]) : 2.0;
  const std::string precision = argc > 7 ? argv[7] : "f32";
  manual_seed(0);
  nn::LSTM lstm(nn::LSTMOptions(I, H).num_layers(layers));
  const Tensor x = randn({L, N, I}), w = randn({L, N, H});
  auto step = [&] {
    lstm.zero_grad();
    Tensor loss;
    if (precision == "bf16") {
      amp::autocast scope(DeviceType::CPU, DType::BF16);
      loss = sum(mul(lstm.forward(x).output.to(DType::F32), w));
    } else {
      loss = sum(mul(lstm.forward(x).output, w));
    }
    loss.backward();
  };
  for (int i = 0; i < 3; ++i) step();  // warm-up: allocator caches, weight casts
  std::vector<double> rates;
  int64_t steps = 0;
  for (int run = 0; run < 5; ++run) {
    int64_t n = 0;
    const auto t0 = std::chrono::steady_clock::now();
    double elapsed = 0;
    do {
      step();
      ++n;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } while (elapsed < budget / 5);
    rates.push_back(static_cast<double>(n * N) / elapsed);
    steps += n;
  }
  std::sort(rates.begin(), rates.end());
  std::printf("{\"side\": \"minidl\", \"precision\": \"%s\", \"threads\": %d, \"steps\": %lld, \"sequences_per_s\": %.1f, "
              "\"min\": %.1f, \"max\": %.1f}\n",
              precision.c_str(), omp_get_max_threads(), static_cast<long long>(steps), rates[2], rates[0], rates[4]);
  return 0;
}
