// minidl-bench-step: samples/s of whole training steps (forward + loss, backward, SGD with momentum)
// for the three models the CPU targets are about, each in f32, bf16 autocast and fp16 autocast with a
// GradScaler, all measured in the same run with repetitions interleaved and medians reported:
//   mlp    784-256-256-10, batch 128 (also fed by a DataLoader with 2 workers, as the train program is)
//   lenet  LeNet-5 on 1x28x28, batch 64
//   cnn    SmallCNN (VGG-style, 3x32x32), batch 64
//   resnet20  ResNet-20 (CIFAR variant, 3x32x32), batch 128
// Ratios: each precision against f32 of the same model, and each model against PyTorch 1.13 on this
// machine (DESIGN.md 5: ~33k, ~7k and ~390 samples/s in f32; targets >= 1.5x, 1.2x, 1.2x). These are
// fixed numbers from another run; bench/compare/run.sh measures PyTorch side by side instead.
//
//   build-bench/bench/minidl-bench-step [reps=5] [models=mlp,lenet,cnn,resnet20]
//   build-bench/bench/minidl-bench-step --one MODEL f32|bf16|fp16 STEPS REPS [BATCH]
// The second form (used by bench/compare/) runs one workload and prints one JSON line: samples/s
// per repetition, seconds from the start of main to the end of the first step, threads.
#include <omp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "data/dataloader.h"
#include "data/tensor_dataset.h"
#include "minidl.h"

namespace {
using namespace minidl;

enum class Precision { F32, BF16, FP16 };
const char* name_of(Precision p) { return p == Precision::F32 ? "f32" : p == Precision::BF16 ? "bf16 autocast" : "fp16 autocast+scaler"; }

struct ModelSpec {
  const char* name;
  Shape input;  // one sample
  int64_t batch;
  int steps;            // per repetition
  double pytorch_f32;   // samples/s of PyTorch 1.13 here (DESIGN.md 5); 0: none recorded
};

const ModelSpec kModels[] = {
    {"mlp", {784}, 128, 200, 33000},
    {"lenet", {1, 28, 28}, 64, 60, 7000},
    {"cnn", {3, 32, 32}, 64, 6, 390},
    {"resnet20", {3, 32, 32}, 128, 3, 0},  // no fixed PyTorch number: see bench/compare/
};

struct Config {
  Precision precision;
  bool loader;  // batches from a DataLoader with 2 workers, else prepared up front
};

// One model with its data, optimizer and scaler; runs training steps in any configuration.
class Runner {
 public:
  explicit Runner(const ModelSpec& spec)
      : spec_(spec),
        data_(randn(with_batch(spec.input, kBatches * spec.batch))),
        target_(randint(0, 10, {kBatches * spec.batch})),
        dataset_(data_, target_),
        loader_(dataset_, data::LoaderOptions().batch_size(spec.batch).shuffle(true).workers(2)),
        model_(nn::models::make_model(spec.name)),
        opt_(model_->parameters(), optim::SGDOptions(0.01).momentum(0.9)),
        scaler_(amp::GradScalerOptions()) {
    for (int64_t b = 0; b < kBatches; ++b)
      batches_.push_back({data_.narrow(0, b * spec.batch, spec.batch).contiguous(),
                          target_.narrow(0, b * spec.batch, spec.batch).contiguous()});
  }

  // Runs `steps` training steps; returns seconds.
  double run(const Config& c, int steps) {
    auto t0 = std::chrono::steady_clock::now();
    int done = 0;
    while (done < steps) {
      if (c.loader) {
        for (auto& batch : loader_) {
          step(batch.data, batch.target, c.precision);
          if (++done == steps) break;
        }
      } else {
        for (auto& b : batches_) {
          step(b.first, b.second, c.precision);
          if (++done == steps) break;
        }
      }
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  // Seconds spent in forward (incl. loss), backward and the optimizer (incl. zero_grad and the
  // scaler's unscale/update), summed over the steps run since the last reset.
  std::array<double, 3> phase{0, 0, 0};

 private:
  static constexpr int64_t kBatches = 20;
  static Shape with_batch(Shape s, int64_t n) {
    s.insert(s.begin(), n);
    return s;
  }
  static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

  void step(const Tensor& x, const Tensor& y, Precision p) {
    const double t0 = now();
    Tensor loss;
    {
      amp::autocast scope(DeviceType::CPU, p == Precision::FP16 ? DType::F16 : DType::BF16, p != Precision::F32);
      loss = nn::functional::cross_entropy(model_->forward(x), y);
    }
    const double t1 = now();
    if (p == Precision::FP16) scaler_.scale(loss).backward();
    else loss.backward();
    const double t2 = now();
    if (p == Precision::FP16) {
      scaler_.step(opt_);
      scaler_.update();
    } else {
      opt_.step();
    }
    opt_.zero_grad();
    const double t3 = now();
    phase[0] += t1 - t0, phase[1] += t2 - t1, phase[2] += t3 - t2;
  }

  ModelSpec spec_;
  Tensor data_, target_;
  data::TensorDataset dataset_;
  data::DataLoader loader_;
  std::shared_ptr<nn::Layer> model_;
  optim::SGD opt_;
  amp::GradScaler scaler_;
  std::vector<std::pair<Tensor, Tensor>> batches_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void bench_model(const ModelSpec& m, int reps) {
  std::vector<Config> configs = {{Precision::F32, false}, {Precision::BF16, false}, {Precision::FP16, false}};
  if (std::string(m.name) == "mlp") {
    configs.push_back({Precision::F32, true});
    configs.push_back({Precision::BF16, true});
  }
  Runner runner(m);
  for (const Config& c : configs) runner.run(c, std::max(3, m.steps / 5));  // warm-up: allocator, caches
  std::vector<std::vector<double>> secs(configs.size());
  std::vector<std::array<double, 3>> phases(configs.size(), {0, 0, 0});
  for (int r = 0; r < reps; ++r)
    for (size_t i = 0; i < configs.size(); ++i) {
      runner.phase = {0, 0, 0};
      secs[i].push_back(runner.run(configs[i], m.steps));
      for (int p = 0; p < 3; ++p) phases[i][p] += runner.phase[p] / (reps * m.steps);
    }
  std::printf("\n%s, batch %lld, %d steps x %d reps\n", m.name, (long long)m.batch, m.steps, reps);
  std::printf("  %-44s %9s %9s %8s %11s   forward  backward  optimizer (ms, mean)\n", "", "samples/s", "ms/step",
              "vs f32", "vs PyTorch");
  const double f32_rate = m.steps * m.batch / median(secs[0]);
  for (size_t i = 0; i < configs.size(); ++i) {
    const double s = median(secs[i]), rate = m.steps * m.batch / s;
    const std::string name = std::string(name_of(configs[i].precision)) + (configs[i].loader ? ", DataLoader 2 workers" : ", batches prepared");
    char vs_pytorch[16] = "          -";
    if (m.pytorch_f32 > 0) std::snprintf(vs_pytorch, sizeof vs_pytorch, "%10.2fx", rate / m.pytorch_f32);
    std::printf("  %-44s %9.0f %9.3f %7.2fx %s   %7.3f  %8.3f  %9.3f\n", name.c_str(), rate, s / m.steps * 1e3,
                rate / f32_rate, vs_pytorch, phases[i][0] * 1e3, phases[i][1] * 1e3, phases[i][2] * 1e3);
  }
}
const auto kStart = std::chrono::steady_clock::now();  // ~ process start (static initialisation)

// Threads of this process now (/proc/self/status): the pool's, the loader's, and any OpenMP team a
// library opened (there should be none beside the pool: bench/README.md, "Threads").
int os_threads() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  int n = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "Threads: %d", &n) == 1) break;
  std::fclose(f);
  return n;
}

// --one MODEL PRECISION STEPS REPS: one workload, one JSON line (bench/compare/ runs one process per
// workload so that each gets its own peak RSS and time to the first step).
int run_one(int argc, char** argv) {
  if (argc != 6 && argc != 7) {
    std::fprintf(stderr, "usage: minidl-bench-step --one MODEL f32|bf16|fp16 STEPS REPS [BATCH]\n");
    return 2;
  }
  const std::string model = argv[2], prec = argv[3];
  const int steps = std::atoi(argv[4]), reps = std::atoi(argv[5]);
  const ModelSpec* spec = nullptr;
  for (const ModelSpec& m : kModels)
    if (model == m.name) spec = &m;
  const Precision p = prec == "f32" ? Precision::F32 : prec == "bf16" ? Precision::BF16 : Precision::FP16;
  const int64_t batch = argc == 7 ? std::atoll(argv[6]) : (spec ? spec->batch : 0);
  if (!spec || (prec != "f32" && prec != "bf16" && prec != "fp16") || steps < 1 || reps < 1 || batch < 1) {
    std::fprintf(stderr, "minidl-bench-step --one: unknown model or precision, or steps/reps/batch < 1\n");
    return 2;
  }
  ModelSpec sized = *spec;
  sized.batch = batch;  // the batch-size scaling runs of bench/compare/
  spec = &sized;
  Runner runner(*spec);
  runner.run({p, false}, 1);
  const double first = std::chrono::duration<double>(std::chrono::steady_clock::now() - kStart).count();
  runner.run({p, false}, std::max(2, steps / 5));  // warm-up
  std::printf("{\"side\": \"minidl\", \"model\": \"%s\", \"precision\": \"%s\", \"batch\": %lld, \"threads\": %d, "
              "\"first_step_s\": %.4f, \"samples_per_s\": [",
              spec->name, prec.c_str(), (long long)spec->batch, omp_get_max_threads(), first);
  for (int r = 0; r < reps; ++r) std::printf("%s%.2f", r ? ", " : "", steps * spec->batch / runner.run({p, false}, steps));
  std::printf("], \"os_threads\": %d, \"cpu_kernels\": \"%s\"}\n", os_threads(), kernels::cpu_kernels_description().c_str());
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--one") return run_one(argc, argv);
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  const std::string which = argc > 2 ? argv[2] : "mlp,lenet,cnn,resnet20";
  auto env = [](const char* v) { return std::getenv(v) ? std::getenv(v) : "(unset)"; };
  std::printf("minidl-bench-step: training steps, SGD momentum; threads %d; MINIDL_SPIN_US=%s OMP_WAIT_POLICY=%s; "
              "medians of %d interleaved reps; 'vs f32' is the same model's f32 row, 'vs PyTorch' its f32 samples/s here\n",
              omp_get_max_threads(), env("MINIDL_SPIN_US"), env("OMP_WAIT_POLICY"), reps);
  for (const ModelSpec& m : kModels)
    if (("," + which + ",").find("," + std::string(m.name) + ",") != std::string::npos) bench_model(m, reps);
  return 0;
}
