#include "apps/train/config.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <cstdlib>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

#include <CLI/CLI.hpp>

namespace minidl::train {

namespace {
// Integer flag ranges: the loader adds batch sizes to sample positions, workers are threads.
constexpr int64_t kMaxEpochs = 1000000, kMaxBatch = int64_t{1} << 24, kMaxWorkers = 256;
constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

[[noreturn]] void fail(const std::string& msg) { throw FlagError(msg); }

double parse_double(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    const double out = std::stod(v, &used);
    if (used != v.size()) throw std::invalid_argument(v);
    return out;
  } catch (const std::exception&) {
    fail("invalid value '" + v + "' for " + flag + " (expected a number)");
  }
}

// An integer in [lo, hi]: anything else (not an integer, beyond int64, out of the range) fails
// naming the flag and the range.
int64_t parse_int(const std::string& flag, const std::string& v, int64_t lo, int64_t hi) {
  const std::string range = " (expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "])";
  errno = 0;
  char* end = nullptr;
  const long long out = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || end != v.c_str() + v.size()) fail("invalid value '" + v + "' for " + flag + range);
  if (errno == ERANGE || out < lo || out > hi) fail("value " + v + " for " + flag + " is out of range" + range);
  return out;
}

// Exits 2 naming flag and path when path cannot be written: its folder is missing or not
// writable, or the path is a folder or an existing file that is not writable.
void check_writable(const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) fail(flag + " " + path + " is a directory, expected a file path");
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) fail(flag + " " + path + ": the folder " + dir.string() + " does not exist");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    fail(flag + " " + path + ": the folder " + dir.string() + " is not writable (" + std::strerror(errno) + ")");
  if (fs::exists(p, ec) && ::access(p.c_str(), W_OK) != 0)
    fail(flag + " " + path + " is not writable (" + std::strerror(errno) + ")");
}

void one_of(const std::string& flag, const std::string& v, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (v == a) return;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  fail("invalid value '" + v + "' for " + flag + " (expected one of: " + list + ")");
}
}  // namespace

std::string usage() {
  return R"(usage: minidl-train [flags]
Trains a model on MNIST, Fashion-MNIST or CIFAR-10 and prints progress, one EPOCH line per epoch and
a JSON summary as the last line of stdout.

  --model NAME          mlp (784-256-256-10), lenet, cnn, resnet20, vit   [mlp]
  --dataset NAME        fashion-mnist, mnist, cifar10                      [fashion-mnist]
  --data DIR            data folder (IDX files, or CIFAR-10 binary batches) [data/<dataset>]
  --epochs N            passes over the training set                       [3]
  --batch-size B        samples per step                                   [128]
  --lr X                learning rate                                      [0.05]
  --lr-schedule S       constant, step (x0.1 at 1/2 and 3/4 of the steps),  [constant]
                        cosine (annealed to 0) or onecycle (peak at --lr), stepped every step
  --warmup-steps N      linear warm-up from lr/3 over the first N steps    [0]
                        (before constant, step or cosine)
  --optimizer NAME      sgd, adam, adamw                                   [sgd]
  --momentum M          SGD momentum                                       [0.9]
  --weight-decay W      L2 (sgd, adam) or decoupled (adamw) decay          [0]
  --seed S              seeds initialisation, shuffling and augmentation   [1]
  --device D            cpu or cuda                                        [cpu]
  --amp MODE            off, bf16 or fp16 (autocast + GradScaler for fp16) [off]
  --workers N           data-loader threads                                [1]
  --checkpoint FILE     write a full training checkpoint after each epoch
  --resume FILE         continue exactly from a checkpoint
  --metrics FILE.csv    per-epoch metrics
  --json FILE           write the final JSON summary there too
  --precision-report F  write the AMP precision report (text) to F and a Graphviz graph to F.dot
                        (F.svg too when graphviz's dot is installed)
  --limit-train N       use only the first N training samples              [all]
  --max-steps N         stop after N optimizer steps                       [no limit]
  --nan-policy P        stop (exit status 3) or skip (skip the batch) on a  [stop]
                        non-finite training loss
  --detect-anomaly      anomaly mode: every op checks its outputs and every backward node its
                        gradients for NaN/inf; the first one stops the run (exit 1) naming the
                        op, its module and the forward op of the backward node (slower)
  --sync-bn             under mpirun: batch norm with the statistics of all ranks' samples
                        (PyTorch's SyncBatchNorm); one process: no effect
  --no-progress         no live progress bar or periodic step lines
  --help                this text

Exit status: 0 done, 1 error, 2 bad flag or unwritable output path, 3 non-finite training loss.
Integer flags are range-checked (e.g. --batch-size in [1, 2^24], --workers in [0, 256]).

Flags take their value as "--flag value" or "--flag=value"; --no-progress=false keeps progress on.

JSON summary keys: model, dataset, amp, device, epochs, steps, batch_size (per rank), world_size,
test_accuracy (fraction in [0, 1]), test_loss, train_loss, train_accuracy, train_samples_per_s,
peak_rss_mb, wall_s, final_scale, skipped_steps, saved_activation_bytes, nonfinite_loss_batches,
final_lr (the rate of the last step);
stopped (why a run stopped early) and null_reasons (why a value is null) when they apply.
)";
}

// The flags are read by CLI11 (Debian's libcli11-dev), a well-kept parser: "--flag value",
// "--flag=value", flag values ("--no-progress=false"), negative numbers as values. What a value
// means, its range and every message stay ours (the callbacks below), so errors keep their wording.
Config parse_flags(const std::vector<std::string>& args) {
  Config c;
  bool data_set = false;
  std::map<std::string, std::function<void(const std::string&)>> flags = {
      {"--model", [&](const std::string& v) { one_of("--model", v, {"mlp", "lenet", "cnn", "resnet20", "vit"}); c.model = v; }},
      {"--dataset", [&](const std::string& v) { one_of("--dataset", v, {"fashion-mnist", "mnist", "cifar10"}); c.dataset = v; }},
      {"--data", [&](const std::string& v) { c.data = v; data_set = true; }},
      {"--epochs", [&](const std::string& v) { c.epochs = parse_int("--epochs", v, 1, kMaxEpochs); }},
      {"--batch-size", [&](const std::string& v) { c.batch_size = parse_int("--batch-size", v, 1, kMaxBatch); }},
      {"--lr", [&](const std::string& v) { c.lr = parse_double("--lr", v); }},
      {"--lr-schedule", [&](const std::string& v) { one_of("--lr-schedule", v, {"constant", "step", "cosine", "onecycle"}); c.lr_schedule = v; }},
      {"--warmup-steps", [&](const std::string& v) { c.warmup_steps = parse_int("--warmup-steps", v, 0, kMaxInt); }},
      {"--optimizer", [&](const std::string& v) { one_of("--optimizer", v, {"sgd", "adam", "adamw"}); c.optimizer = v; }},
      {"--momentum", [&](const std::string& v) { c.momentum = parse_double("--momentum", v); }},
      {"--weight-decay", [&](const std::string& v) { c.weight_decay = parse_double("--weight-decay", v); }},
      {"--seed", [&](const std::string& v) { c.seed = static_cast<uint64_t>(parse_int("--seed", v, 0, kMaxInt)); }},
      {"--device", [&](const std::string& v) { one_of("--device", v, {"cpu", "cuda"}); c.device = v; }},
      {"--amp", [&](const std::string& v) { one_of("--amp", v, {"off", "bf16", "fp16"}); c.amp = v; }},
      {"--workers", [&](const std::string& v) { c.workers = static_cast<int>(parse_int("--workers", v, 0, kMaxWorkers)); }},
      {"--checkpoint", [&](const std::string& v) { c.checkpoint = v; }},
      {"--resume", [&](const std::string& v) { c.resume = v; }},
      {"--metrics", [&](const std::string& v) { c.metrics = v; }},
      {"--json", [&](const std::string& v) { c.json = v; }},
      {"--precision-report", [&](const std::string& v) { c.precision_report = v; }},
      {"--limit-train", [&](const std::string& v) { c.limit_train = parse_int("--limit-train", v, 0, kMaxInt); }},
      {"--max-steps", [&](const std::string& v) { c.max_steps = parse_int("--max-steps", v, 0, kMaxInt); }},
      {"--nan-policy", [&](const std::string& v) { one_of("--nan-policy", v, {"stop", "skip"}); c.nan_policy = v; }},
  };
  CLI::App app("minidl-train");
  app.set_help_flag();  // --help prints usage(), our text
  app.allow_extras();   // unknown arguments are refused below, in our words
  bool help = false;
  app.add_flag("-h,--help", help);
  for (auto& [name, set] : flags)
    app.add_option_function<std::string>(name, set)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last one wins
  bool no_progress = false;
  app.add_flag("--no-progress", no_progress);
  app.add_flag("--detect-anomaly", c.detect_anomaly);
  app.add_flag("--sync-bn", c.sync_bn);
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes the arguments last first
    app.parse(reversed);
  } catch (const CLI::ArgumentMismatch& e) {
    // A value flag at the end of the line: name the flag (CLI11's text names it).
    const std::string what = e.what();
    std::string flag;
    for (const auto& entry : flags)
      if (what.find(entry.first) != std::string::npos && entry.first.size() > flag.size()) flag = entry.first;
    fail(flag.empty() ? what : "flag " + flag + " needs a value");
  } catch (const CLI::ParseError& e) {
    fail(e.what());  // e.g. --no-progress=maybe
  }
  if (!app.remaining().empty()) {
    const std::string extra = app.remaining().front();
    fail("unknown flag '" + extra.substr(0, extra.find('=')) + "'");
  }
  c.progress = !no_progress;
  if (help) {
    c.help = true;
    return c;
  }
  if (!(c.lr > 0) || !std::isfinite(c.lr)) fail("--lr must be finite and > 0");
  if (c.warmup_steps > 0 && c.lr_schedule == "onecycle") fail("--warmup-steps does not apply to --lr-schedule onecycle (it warms up itself)");
  if (!(c.momentum >= 0) || !std::isfinite(c.momentum)) fail("--momentum must be finite and >= 0");
  if (!(c.weight_decay >= 0) || !std::isfinite(c.weight_decay)) fail("--weight-decay must be finite and >= 0");
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--checkpoint", c.checkpoint},
                                   {"--metrics", c.metrics}, {"--json", c.json}, {"--precision-report", c.precision_report}})
    check_writable(flag, path);
  const bool image28 = c.dataset != "cifar10";
  if ((c.model == "mlp" || c.model == "lenet" || c.model == "vit") && !image28) fail("--model " + c.model + " expects 28x28 images (mnist, fashion-mnist)");
  if ((c.model == "cnn" || c.model == "resnet20") && image28) fail("--model " + c.model + " expects 3x32x32 images (--dataset cifar10)");
  if (!data_set) c.data = "data/" + c.dataset;
  return c;
}

Config parse_args(int argc, char** argv) {
  try {
    Config c = parse_flags(std::vector<std::string>(argv + 1, argv + argc));
    if (c.help) {
      std::fputs(usage().c_str(), stdout);
      std::exit(0);
    }
    return c;
  } catch (const FlagError& e) {
    std::fprintf(stderr, "minidl-train: %s\n(run minidl-train --help for the flags)\n", e.what());
    std::exit(2);
  }
}

std::string describe(const Config& c) {
  std::ostringstream os;
  os << "config: model=" << c.model << " dataset=" << c.dataset << " data=" << c.data << " epochs=" << c.epochs
     << " batch_size=" << c.batch_size << " lr=" << c.lr << " lr_schedule=" << c.lr_schedule;
  if (c.warmup_steps) os << " warmup_steps=" << c.warmup_steps;
  os << " optimizer=" << c.optimizer << " momentum=" << c.momentum
     << " weight_decay=" << c.weight_decay << " seed=" << c.seed << " device=" << c.device << " amp=" << c.amp
     << " workers=" << c.workers;
  if (!c.checkpoint.empty()) os << " checkpoint=" << c.checkpoint;
  if (!c.resume.empty()) os << " resume=" << c.resume;
  if (c.limit_train) os << " limit_train=" << c.limit_train;
  if (c.max_steps) os << " max_steps=" << c.max_steps;
  if (c.nan_policy != "stop") os << " nan_policy=" << c.nan_policy;
  if (c.detect_anomaly) os << " detect_anomaly=on";
  if (c.sync_bn) os << " sync_bn=on";
  return os.str();
}

}  // namespace minidl::train
