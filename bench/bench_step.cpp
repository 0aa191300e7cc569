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
//   build-bench/bench/minidl-bench-step --one MODEL f32|bf16|fp16 STEPS REPS [BATCH] [--device cpu|cuda]
//   build-bench/bench/minidl-bench-step --suite MODEL:BATCH[,...] PREC[,...] SECONDS REPS [--device cpu|cuda]
//   build-bench/bench/minidl-bench-step --conv-layout SECONDS REPS [BATCH [f16|bf16|f32]] [--device cpu|cuda]
// The second form (used by bench/compare/) runs one workload and prints one JSON line: samples/s
// per repetition, seconds from the start of main to the end of the first step, threads.
// The third (bench/gpu/run.sh's steps stage, beside bench/compare/torch_models.py --suite) runs every
// workload x precision in one process, one JSON line each; each repetition runs as many steps as
// take about SECONDS by the warm-up's timing (at least 3).
// The fourth times f16 (by default) conv2d forward + backward on ResNet-20's convolution shapes with the images
// NCHW and channels-last (bench/gpu/run.sh's conv_layout stage, beside torch_models.py --conv-layout);
// one JSON line per shape and layout.
// On --device cuda the batches live on the GPU before the clock starts, the clock is read after
// cuda::synchronize(), warm-up steps are not timed, and fp16/bf16 mean CUDA autocast (fp16 with a
// GradScaler on the GPU). Without a usable GPU it says so and exits with status 2.
#include <omp.h>

#include <CLI/CLI.hpp>

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
#include "bench/host_sampler.h"
#include "framework/cuda.h"
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
  // On a CUDA device the model, and the prepared batches, are moved there up front (the DataLoader
  // configurations stay CPU-only).
  explicit Runner(const ModelSpec& spec, Device device = Device::cpu())
      : spec_(spec),
        device_(device),
        data_(randn(with_batch(spec.input, kBatches * spec.batch))),
        target_(randint(0, 10, {kBatches * spec.batch})),
        dataset_(data_, target_),
        loader_(dataset_, data::LoaderOptions().batch_size(spec.batch).shuffle(true).workers(2)),
        model_(model_on(spec.name, device)),
        opt_(model_->parameters(), optim::SGDOptions(0.01).momentum(0.9)),
        scaler_(device, amp::GradScalerOptions()) {
    for (int64_t b = 0; b < kBatches; ++b)
      batches_.push_back({data_.narrow(0, b * spec.batch, spec.batch).contiguous().to(device),
                          target_.narrow(0, b * spec.batch, spec.batch).contiguous().to(device)});
    sync();
  }

  // Runs `steps` training steps; returns seconds (on CUDA from an idle device to the last step's
  // completion).
  double run(const Config& c, int steps) {
    sync();
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
    sync();
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
  static std::shared_ptr<nn::Layer> model_on(const std::string& name, Device device) {
    auto m = nn::models::make_model(name);
    m->to(device);
    return m;
  }
  void sync() const {
    if (device_.is_cuda()) cuda::synchronize(device_.index);
  }

  void step(const Tensor& x, const Tensor& y, Precision p) {
    const double t0 = now();
    Tensor loss;
    {
      amp::autocast scope(device_.type, p == Precision::FP16 ? DType::F16 : DType::BF16, p != Precision::F32);
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
  Device device_;
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

// A mode's values and the one flag the modes share, --device cpu|cuda[:N] (read in main by CLI11).
struct Args {
  std::vector<std::string> pos;
  Device device = Device::cpu();
};

// --device cuda needs a usable GPU; there is no silent fall-back to the CPU.
bool device_usable(Device d) {
  if (!d.is_cuda()) return true;
  if (cuda::is_available() && d.index < cuda::device_count()) return true;
  std::fprintf(stderr, "minidl-bench-step: --device %s: %s\n", d.str().c_str(),
               !cuda::is_compiled()     ? "this build has no CUDA backend (configure with -DMINIDL_CUDA=ON); use --device cpu"
               : !cuda::is_available() ? "no usable CUDA GPU here (no device, or no working driver); use --device cpu"
                                       : "no such device");
  return false;
}

bool parse_precision(const std::string& s, Precision& p) {
  if (s == "f32") p = Precision::F32;
  else if (s == "bf16") p = Precision::BF16;
  else if (s == "fp16") p = Precision::FP16;
  else return false;
  return true;
}

const ModelSpec* find_model(const std::string& name) {
  for (const ModelSpec& m : kModels)
    if (name == m.name) return &m;
  return nullptr;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t b = 0;
  for (size_t e; (e = s.find(sep, b)) != std::string::npos; b = e + 1) out.push_back(s.substr(b, e - b));
  out.push_back(s.substr(b));
  return out;
}

int64_t device_allocs(Device d) { return d.is_cuda() ? cuda::memory_stats(d.index).device_allocs : 0; }

// One workload's JSON line. `first` is the seconds to the end of the first step (--one: from the
// start of the process; --suite: from the start of this workload's set-up). On CUDA also the GPU's
// name and the device allocations (cudaMalloc calls) during the timed repetitions, and (--one) the
// host's waits for the device per timed step (cuda::host_sync_count).
void print_result(const ModelSpec& spec, const std::string& prec, Device dev, double first, int steps,
                  const std::vector<double>& rates, int64_t allocs, double syncs_per_step = -1) {
  std::printf("{\"side\": \"minidl\", \"model\": \"%s\", \"precision\": \"%s\", \"batch\": %lld, \"threads\": %d, "
              "\"first_step_s\": %.4f, \"samples_per_s\": [",
              spec.name, prec.c_str(), (long long)spec.batch, omp_get_max_threads(), first);
  for (size_t r = 0; r < rates.size(); ++r) std::printf("%s%.2f", r ? ", " : "", rates[r]);
  std::printf("], \"os_threads\": %d, \"cpu_kernels\": \"%s\", \"device\": \"%s\", \"steps\": %d", os_threads(),
              kernels::cpu_kernels_description().c_str(), dev.str().c_str(), steps);
  if (dev.is_cuda())
    std::printf(", \"gpu\": \"%s\", \"device_allocs\": %lld", cuda::get_device_properties(dev.index).name.c_str(),
                (long long)allocs);
  if (dev.is_cuda() && syncs_per_step >= 0) std::printf(", \"host_syncs_per_step\": %.2f", syncs_per_step);
  std::printf("}\n");
  std::fflush(stdout);
}

// --one MODEL PRECISION STEPS REPS [BATCH] [--device D]: one workload, one JSON line (bench/compare/
// runs one process per workload so that each gets its own peak RSS and time to the first step).
// With MINIDL_BENCH_SAMPLE=FILE set, a host profile of the timed steps goes to FILE.
int run_one(const Args& a) {
  if (a.pos.size() != 4 && a.pos.size() != 5) {
    std::fprintf(stderr, "usage: minidl-bench-step --one MODEL f32|bf16|fp16 STEPS REPS [BATCH] [--device cpu|cuda]\n");
    return 2;
  }
  const std::string prec = a.pos[1];
  const int steps = std::atoi(a.pos[2].c_str()), reps = std::atoi(a.pos[3].c_str());
  const ModelSpec* spec = find_model(a.pos[0]);
  Precision p = Precision::F32;
  const bool prec_ok = parse_precision(prec, p);
  const int64_t batch = a.pos.size() == 5 ? std::atoll(a.pos[4].c_str()) : (spec ? spec->batch : 0);
  if (!spec || !prec_ok || steps < 1 || reps < 1 || batch < 1) {
    std::fprintf(stderr, "minidl-bench-step --one: unknown model or precision, or steps/reps/batch < 1\n");
    return 2;
  }
  if (!device_usable(a.device)) return 2;
  ModelSpec sized = *spec;
  sized.batch = batch;  // the batch-size scaling runs of bench/compare/
  Runner runner(sized, a.device);
  runner.run({p, false}, 1);
  const double first = std::chrono::duration<double>(std::chrono::steady_clock::now() - kStart).count();
  runner.run({p, false}, std::max(2, steps / 5));  // warm-up
  const int64_t allocs0 = device_allocs(a.device), syncs0 = cuda::host_sync_count();
  // MINIDL_BENCH_SAMPLE=FILE: a host profile of the timed steps (bench/host_sampler.h). The timed
  // steps are also the region a device profiler started with its recording off records.
  const char* sample_path = std::getenv("MINIDL_BENCH_SAMPLE");
  if (sample_path) bench::HostSampler::start();
  cuda::profiler_start();
  std::vector<double> rates;
  for (int r = 0; r < reps; ++r) rates.push_back(steps * sized.batch / runner.run({p, false}, steps));
  cuda::profiler_stop();
  if (sample_path && !bench::HostSampler::stop(sample_path))
    std::fprintf(stderr, "minidl-bench-step: cannot write the host profile to %s\n", sample_path);
  const double syncs_per_step = double(cuda::host_sync_count() - syncs0) / (double(steps) * reps);
  print_result(sized, prec, a.device, first, steps, rates, device_allocs(a.device) - allocs0, syncs_per_step);
  return 0;
}

// --suite MODEL:BATCH[,...] PREC[,...] SECONDS REPS [--device D]: every workload in every precision,
// one after the other in this process (workload-major), one JSON line each. Per workload: one step
// (first_step_s), two warm-up steps, three more timed to size the repetitions, then REPS repetitions
// of max(3, SECONDS / that step time) steps. bench/compare/torch_models.py --suite does the same.
int run_suite(const Args& a) {
  const char* usage = "usage: minidl-bench-step --suite MODEL:BATCH[,...] f32|bf16|fp16[,...] SECONDS REPS [--device cpu|cuda]\n";
  if (a.pos.size() != 4) {
    std::fprintf(stderr, "%s", usage);
    return 2;
  }
  std::vector<ModelSpec> workloads;
  for (const std::string& w : split(a.pos[0], ',')) {
    const auto parts = split(w, ':');
    const ModelSpec* spec = parts.size() == 2 ? find_model(parts[0]) : nullptr;
    const int64_t batch = parts.size() == 2 ? std::atoll(parts[1].c_str()) : 0;
    if (!spec || batch < 1) {
      std::fprintf(stderr, "minidl-bench-step --suite: bad workload '%s' (MODEL:BATCH, MODEL one of mlp, lenet, cnn, resnet20)\n%s",
                   w.c_str(), usage);
      return 2;
    }
    workloads.push_back(*spec);
    workloads.back().batch = batch;
  }
  std::vector<std::pair<std::string, Precision>> precs;
  for (const std::string& s : split(a.pos[1], ',')) {
    Precision p;
    if (!parse_precision(s, p)) {
      std::fprintf(stderr, "minidl-bench-step --suite: unknown precision '%s'\n%s", s.c_str(), usage);
      return 2;
    }
    precs.push_back({s, p});
  }
  const double seconds = std::atof(a.pos[2].c_str());
  const int reps = std::atoi(a.pos[3].c_str());
  if (!(seconds > 0) || reps < 1) {
    std::fprintf(stderr, "minidl-bench-step --suite: SECONDS must be > 0 and REPS >= 1\n%s", usage);
    return 2;
  }
  if (!device_usable(a.device)) return 2;
  int failed = 0;
  for (const ModelSpec& spec : workloads)
    for (const auto& [name, p] : precs) try {
      const auto t0 = std::chrono::steady_clock::now();
      Runner runner(spec, a.device);
      runner.run({p, false}, 1);
      const double first = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      runner.run({p, false}, 2);                              // warm-up
      const double step_s = runner.run({p, false}, 3) / 3;  // warm-up, timed
      const int steps = static_cast<int>(std::clamp(seconds / step_s, 3.0, 1e5));
      const int64_t allocs0 = device_allocs(a.device);
      std::vector<double> rates;
      for (int r = 0; r < reps; ++r) rates.push_back(steps * spec.batch / runner.run({p, false}, steps));
      print_result(spec, name, a.device, first, steps, rates, device_allocs(a.device) - allocs0);
    } catch (const std::exception& e) {
      // One failing workload (a missing kernel, say) does not take the others' results with it.
      ++failed;
      std::string what = e.what();
      for (char& ch : what)
        if (ch == '"' || ch == '\\' || static_cast<unsigned char>(ch) < 0x20) ch = ' ';
      std::fprintf(stderr, "minidl-bench-step --suite: %s b%lld %s failed: %s\n", spec.name, (long long)spec.batch,
                   name.c_str(), e.what());
      std::printf("{\"side\": \"minidl\", \"model\": \"%s\", \"precision\": \"%s\", \"batch\": %lld, \"error\": \"%s\"}\n",
                  spec.name, name.c_str(), (long long)spec.batch, what.c_str());
      std::fflush(stdout);
    }
  return failed ? 1 : 0;
}

// ResNet-20's convolutions (CIFAR, 3x32x32 images): input channels, output channels, input height =
// width, kernel, stride, and how many of the model's 21 convolutions have that shape (padding k / 2).
struct ConvShape {
  int64_t cin, cout, hw, k, stride, count;
};
const ConvShape kResNet20Convs[] = {
    {3, 16, 32, 3, 1, 1},  {16, 16, 32, 3, 1, 6}, {16, 32, 32, 3, 2, 1}, {16, 32, 32, 1, 2, 1},
    {32, 32, 16, 3, 1, 5}, {32, 64, 16, 3, 2, 1}, {32, 64, 16, 1, 2, 1}, {64, 64, 8, 3, 1, 5},
};

// --conv-layout SECONDS REPS [BATCH=128 [DTYPE=f16]] [--device D]: conv2d forward + backward (input and
// weight gradients, no bias) of each ResNet-20 shape, images (x and the output gradient) NCHW and
// channels-last, the weight contiguous as minidl's Conv2d holds it. Per shape: three warm-up passes
// per layout, five timed to size the repetitions, then REPS repetitions alternating the layouts.
// One JSON line per shape and layout: ms per forward + backward, per repetition, the ms until the
// passes were queued (host_ms), and the layout of the output conv2d returned.
int run_conv_layout(const Args& a) {
  if (a.pos.size() < 2 || a.pos.size() > 4) {
    std::fprintf(stderr, "usage: minidl-bench-step --conv-layout SECONDS REPS [BATCH=128 [f16|bf16|f32]] [--device cpu|cuda]\n");
    return 2;
  }
  const std::string dtype_arg = a.pos.size() == 4 ? a.pos[3] : "f16";
  const DType dtype = dtype_arg == "f16" ? DType::F16 : dtype_arg == "bf16" ? DType::BF16 : DType::F32;
  const double seconds = std::atof(a.pos[0].c_str());
  const int reps = std::atoi(a.pos[1].c_str());
  const int64_t batch = a.pos.size() >= 3 ? std::atoll(a.pos[2].c_str()) : 128;
  if (!(seconds > 0) || reps < 1 || batch < 1 || (dtype_arg != "f16" && dtype_arg != "bf16" && dtype_arg != "f32")) {
    std::fprintf(stderr, "minidl-bench-step --conv-layout: SECONDS must be > 0, REPS and BATCH >= 1, DTYPE f16, bf16 or f32\n");
    return 2;
  }
  if (!device_usable(a.device)) return 2;
  const Device dev = a.device;
  auto sync = [&] {
    if (dev.is_cuda()) cuda::synchronize(dev.index);
  };
  const MemoryFormat formats[2] = {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast};
  const char* format_names[2] = {"nchw", "channels_last"};
  for (const ConvShape& c : kResNet20Convs) {
    const int64_t pad = c.k / 2, out_hw = (c.hw + 2 * pad - c.k) / c.stride + 1;
    const Tensor w = (randn({c.cout, c.cin, c.k, c.k}) * 0.1).to(dtype).to(dev);
    Tensor x[2], gy[2];
    for (int f = 0; f < 2; ++f) {
      x[f] = randn({batch, c.cin, c.hw, c.hw}).to(dtype).to(dev).contiguous(formats[f]);
      gy[f] = randn({batch, c.cout, out_hw, out_hw}).to(dtype).to(dev).contiguous(formats[f]);
    }
    MemoryFormat out_format[2] = {MemoryFormat::Contiguous, MemoryFormat::Contiguous};
    // Seconds until the last pass was queued (before the final wait): near the whole time when the
    // host's work per pass, not the device, sets the pace.
    double enqueued_s = 0;
    // n passes of forward + backward in layout f; seconds from an idle device to the last pass's end.
    auto run = [&](int f, int n) {
      sync();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < n; ++i) {
        Tensor xi = x[f].detach(), wi = w.detach();
        xi.requires_grad_(true);
        wi.requires_grad_(true);
        Tensor y = conv2d(xi, wi, Tensor(), {c.stride, c.stride}, {pad, pad});
        out_format[f] = y.suggest_memory_format();
        y.backward(gy[f]);
      }
      enqueued_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      sync();
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    double pass_s = 0;
    for (int f = 0; f < 2; ++f) {
      run(f, 3);                          // warm-up (cuDNN's algorithm choice, the allocator)
      pass_s = std::max(pass_s, run(f, 5) / 5);  // warm-up, timed
    }
    const int n = static_cast<int>(std::clamp(seconds / pass_s, 3.0, 1e5));
    std::vector<double> ms[2], host_ms[2];
    for (int r = 0; r < reps; ++r)
      for (int i = 0; i < 2; ++i) {
        const int f = r % 2 ? 1 - i : i;
        ms[f].push_back(run(f, n) / n * 1e3);
        host_ms[f].push_back(enqueued_s / n * 1e3);
      }
    for (int f = 0; f < 2; ++f) {
      std::printf("{\"side\": \"minidl\", \"conv\": \"%lldx%lldx%lldx%lld k%lld s%lld\", \"cin\": %lld, \"cout\": %lld, "
                  "\"hw\": %lld, \"k\": %lld, \"stride\": %lld, \"count\": %lld, \"batch\": %lld, \"dtype\": \"%s\", "
                  "\"layout\": \"%s\", \"output_layout\": \"%s\", \"device\": \"%s\", \"passes\": %d, \"ms\": [",
                  (long long)c.cin, (long long)c.cout, (long long)c.hw, (long long)c.hw, (long long)c.k, (long long)c.stride,
                  (long long)c.cin, (long long)c.cout, (long long)c.hw, (long long)c.k, (long long)c.stride,
                  (long long)c.count, (long long)batch, dtype_arg.c_str(), format_names[f],
                  out_format[f] == MemoryFormat::ChannelsLast ? "channels_last" : "nchw", dev.str().c_str(), n);
      for (size_t r = 0; r < ms[f].size(); ++r) std::printf("%s%.4f", r ? ", " : "", ms[f][r]);
      std::printf("], \"host_ms\": [");
      for (size_t r = 0; r < host_ms[f].size(); ++r) std::printf("%s%.4f", r ? ", " : "", host_ms[f][r]);
      std::printf("]}\n");
    }
    std::fflush(stdout);
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  // Flags by CLI11 (Debian's libcli11-dev, as minidl-train): a mode's values follow its flag, and
  // the positional REPS MODELS are the default mode's.
  CLI::App app{"minidl-bench-step: samples/s of the zoo's training steps (bench/README.md)"};
  std::vector<std::string> one, suite, conv_layout, positional;
  std::string device = "cpu";
  auto* one_opt = app.add_option("--one", one, "MODEL f32|bf16|fp16 STEPS REPS [BATCH]: one workload, one JSON line")
                      ->expected(4, 5);
  auto* suite_opt = app.add_option("--suite", suite, "MODEL:BATCH[,...] f32|bf16|fp16[,...] SECONDS REPS: every workload")
                        ->expected(4);
  auto* conv_opt = app.add_option("--conv-layout", conv_layout, "SECONDS REPS [BATCH=128 [f16|bf16|f32]]: conv2d NCHW "
                                  "against channels-last")->expected(2, 4);
  one_opt->excludes(suite_opt)->excludes(conv_opt);
  suite_opt->excludes(conv_opt);
  app.add_option("--device", device, "cpu or cuda[:N] (the --one, --suite and --conv-layout modes)");
  app.add_option("reps_and_models", positional, "REPS [mlp,lenet,cnn,resnet20]: the table of every model")->expected(0, 2);
  CLI11_PARSE(app, argc, argv);

  Device parsed_device = Device::cpu();
  try {
    parsed_device = Device::parse(device);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minidl-bench-step: --device %s: %s\n", device.c_str(), e.what());
    return 2;
  }
  const char* mode = !one.empty() ? "--one" : !suite.empty() ? "--suite" : !conv_layout.empty() ? "--conv-layout" : "";
  if (*mode) {
    if (!positional.empty()) {
      std::fprintf(stderr, "minidl-bench-step %s: unexpected argument '%s'\n", mode, positional[0].c_str());
      return 2;
    }
    try {
      if (!one.empty()) return run_one({one, parsed_device});
      if (!suite.empty()) return run_suite({suite, parsed_device});
      return run_conv_layout({conv_layout, parsed_device});
    } catch (const std::exception& e) {
      std::fprintf(stderr, "minidl-bench-step %s: %s\n", mode, e.what());
      return 1;
    }
  }
  if (!parsed_device.is_cpu()) {
    std::fprintf(stderr, "minidl-bench-step: the table of every model runs on the CPU; --device is for --one, --suite and --conv-layout\n");
    return 2;
  }
  const int reps = !positional.empty() ? std::atoi(positional[0].c_str()) : 5;
  const std::string which = positional.size() > 1 ? positional[1] : "mlp,lenet,cnn,resnet20";
  auto env = [](const char* v) { return std::getenv(v) ? std::getenv(v) : "(unset)"; };
  std::printf("minidl-bench-step: training steps, SGD momentum; threads %d; MINIDL_SPIN_US=%s OMP_WAIT_POLICY=%s; "
              "medians of %d interleaved reps; 'vs f32' is the same model's f32 row, 'vs PyTorch' its f32 samples/s here\n",
              omp_get_max_threads(), env("MINIDL_SPIN_US"), env("OMP_WAIT_POLICY"), reps);
  for (const ModelSpec& m : kModels)
    if (("," + which + ",").find("," + std::string(m.name) + ",") != std::string::npos) bench_model(m, reps);
  return 0;
}
