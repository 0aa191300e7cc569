// minidl-bench-step: samples/s of the training step the CPU target is about: MLP 784-256-256-10,
// batch 128, SGD with momentum, f32 and bf16 autocast, with batches either made up front or served
// by a DataLoader with 2 worker threads (an in-memory data set, as MNIST is once loaded). PyTorch
// 1.13 does ~33k samples/s here (DESIGN.md 5); the target is >= 1.5x that. Repetitions of the
// configurations are interleaved and medians reported. scripts/bench.sh runs it under several
// OpenMP wait policies (how the idle pool thread waits matters on 2 cores with loader threads).
//
//   build-bench/bench/minidl-bench-step [reps=5] [steps=200]
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/dataloader.h"
#include "data/tensor_dataset.h"
#include "minidl.h"

namespace {
using namespace minidl;

struct Mlp : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2, fc3;
  Mlp() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(784, 256));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(256, 256));
    fc3 = register_module("fc3", std::make_shared<nn::Linear>(256, 10));
  }
  Tensor forward(const Tensor& x) { return fc3->forward(relu(fc2->forward(relu(fc1->forward(x))))); }
};

constexpr int64_t kBatch = 128;
constexpr int64_t kSamples = 128 * 100;  // 100 batches per epoch

struct Config {
  const char* name;
  bool loader;  // batches from a DataLoader with 2 workers, else prepared up front
  bool bf16;    // forward under CPU autocast (bf16)
};

class Runner {
 public:
  Runner()
      : data_(randn({kSamples, 784})),
        target_(randint(0, 10, {kSamples})),
        dataset_(data_, target_),
        loader_(dataset_, data::LoaderOptions().batch_size(kBatch).shuffle(true).workers(2)),
        model_(std::make_shared<Mlp>()),
        opt_(model_->parameters(), optim::SGDOptions(0.01).momentum(0.9)) {
    for (int64_t b = 0; b < kSamples / kBatch; ++b)
      batches_.push_back({data_.narrow(0, b * kBatch, kBatch).contiguous(), target_.narrow(0, b * kBatch, kBatch).contiguous()});
  }

  // Runs `steps` training steps; returns seconds.
  double run(const Config& c, int steps) {
    auto t0 = std::chrono::steady_clock::now();
    int done = 0;
    while (done < steps) {
      if (c.loader) {
        for (auto& batch : loader_) {
          step(batch.data, batch.target, c.bf16);
          if (++done == steps) break;
        }
      } else {
        for (auto& b : batches_) {
          step(b.first, b.second, c.bf16);
          if (++done == steps) break;
        }
      }
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  // Seconds spent in forward (incl. loss), backward and the optimizer (incl. zero_grad), summed
  // over the steps run since the last reset.
  double phase[3] = {0, 0, 0};

 private:
  static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

  void step(const Tensor& x, const Tensor& y, bool bf16) {
    const double t0 = now();
    Tensor loss;
    {
      amp::autocast scope(DeviceType::CPU, DType::BF16, bf16);
      loss = nn::functional::cross_entropy(model_->forward(x), y);
    }
    const double t1 = now();
    loss.backward();
    const double t2 = now();
    opt_.step();
    opt_.zero_grad();
    const double t3 = now();
    phase[0] += t1 - t0, phase[1] += t2 - t1, phase[2] += t3 - t2;
  }

  Tensor data_, target_;
  data::TensorDataset dataset_;
  data::DataLoader loader_;
  std::shared_ptr<Mlp> model_;
  optim::SGD opt_;
  std::vector<std::pair<Tensor, Tensor>> batches_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 200;
  const Config configs[] = {
      {"f32, batches prepared", false, false},
      {"f32, DataLoader 2 workers", true, false},
      {"bf16 autocast, batches prepared", false, true},
      {"bf16 autocast, DataLoader 2 workers", true, true},
  };
  auto env = [](const char* v) { return std::getenv(v) ? std::getenv(v) : "(unset)"; };
  std::printf("minidl-bench-step: MLP 784-256-256-10, batch %lld, SGD momentum; OMP threads %d; MINIDL_SPIN_US=%s "
              "OMP_DYNAMIC=%s OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s; %d reps x %d steps, interleaved\n",
              (long long)kBatch, omp_get_max_threads(), env("MINIDL_SPIN_US"), env("OMP_DYNAMIC"), env("OMP_WAIT_POLICY"),
              env("GOMP_SPINCOUNT"), reps, steps);
  Runner runner;
  for (const Config& c : configs) runner.run(c, 30);  // warm-up: allocator, caches, first-touch
  std::vector<std::vector<double>> secs(std::size(configs));
  std::vector<std::array<double, 3>> phases(std::size(configs), {0, 0, 0});
  for (int r = 0; r < reps; ++r)
    for (size_t i = 0; i < std::size(configs); ++i) {
      for (double& p : runner.phase) p = 0;
      secs[i].push_back(runner.run(configs[i], steps));
      for (int p = 0; p < 3; ++p) phases[i][p] += runner.phase[p] / (reps * steps);
    }
  std::printf("  %-38s %9s  %13s  %10s   forward  backward  optimizer (ms, mean)\n", "", "samples/s", "ms/step", "vs 33k");
  for (size_t i = 0; i < std::size(configs); ++i) {
    const double s = median(secs[i]);
    std::printf("  %-38s %9.0f  %13.3f  %9.2fx   %7.3f  %8.3f  %9.3f\n", configs[i].name, steps * kBatch / s,
                s / steps * 1e3, steps * kBatch / s / 33000.0, phases[i][0] * 1e3, phases[i][1] * 1e3, phases[i][2] * 1e3);
  }
  return 0;
}
