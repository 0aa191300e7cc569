#include "apps/train/config.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>

namespace minidl::train {

namespace {
[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "minidl-train: %s\n(run minidl-train --help for the flags)\n", msg.c_str());
  std::exit(2);
}

template <class T>
T parse_number(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    T out;
    if constexpr (std::is_same_v<T, double>) out = std::stod(v, &used);
    else if constexpr (std::is_same_v<T, uint64_t>) out = std::stoull(v, &used);
    else out = static_cast<T>(std::stoll(v, &used));
    if (used != v.size()) throw std::invalid_argument(v);
    return out;
  } catch (const std::exception&) {
    fail("invalid value '" + v + "' for " + flag + " (expected a number)");
  }
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

  --model NAME          mlp (784-256-256-10), lenet, cnn, resnet20        [mlp]
  --dataset NAME        fashion-mnist, mnist, cifar10                      [fashion-mnist]
  --data DIR            data folder (IDX files, or CIFAR-10 binary batches) [data/<dataset>]
  --epochs N            passes over the training set                       [3]
  --batch-size B        samples per step                                   [128]
  --lr X                learning rate                                      [0.05]
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
  --no-progress         no live progress bar or periodic step lines
  --help                this text

JSON summary keys: model, dataset, amp, epochs, steps, test_accuracy (fraction in [0, 1]),
test_loss, train_loss, train_accuracy, train_samples_per_s, peak_rss_mb, wall_s, final_scale,
skipped_steps, saved_activation_bytes.
)";
}

Config parse_args(int argc, char** argv) {
  Config c;
  bool data_set = false;
  std::map<std::string, std::function<void(const std::string&)>> flags = {
      {"--model", [&](const std::string& v) { one_of("--model", v, {"mlp", "lenet", "cnn", "resnet20"}); c.model = v; }},
      {"--dataset", [&](const std::string& v) { one_of("--dataset", v, {"fashion-mnist", "mnist", "cifar10"}); c.dataset = v; }},
      {"--data", [&](const std::string& v) { c.data = v; data_set = true; }},
      {"--epochs", [&](const std::string& v) { c.epochs = parse_number<int64_t>("--epochs", v); }},
      {"--batch-size", [&](const std::string& v) { c.batch_size = parse_number<int64_t>("--batch-size", v); }},
      {"--lr", [&](const std::string& v) { c.lr = parse_number<double>("--lr", v); }},
      {"--optimizer", [&](const std::string& v) { one_of("--optimizer", v, {"sgd", "adam", "adamw"}); c.optimizer = v; }},
      {"--momentum", [&](const std::string& v) { c.momentum = parse_number<double>("--momentum", v); }},
      {"--weight-decay", [&](const std::string& v) { c.weight_decay = parse_number<double>("--weight-decay", v); }},
      {"--seed", [&](const std::string& v) { c.seed = parse_number<uint64_t>("--seed", v); }},
      {"--device", [&](const std::string& v) { one_of("--device", v, {"cpu", "cuda"}); c.device = v; }},
      {"--amp", [&](const std::string& v) { one_of("--amp", v, {"off", "bf16", "fp16"}); c.amp = v; }},
      {"--workers", [&](const std::string& v) { c.workers = static_cast<int>(parse_number<int64_t>("--workers", v)); }},
      {"--checkpoint", [&](const std::string& v) { c.checkpoint = v; }},
      {"--resume", [&](const std::string& v) { c.resume = v; }},
      {"--metrics", [&](const std::string& v) { c.metrics = v; }},
      {"--json", [&](const std::string& v) { c.json = v; }},
      {"--precision-report", [&](const std::string& v) { c.precision_report = v; }},
      {"--limit-train", [&](const std::string& v) { c.limit_train = parse_number<int64_t>("--limit-train", v); }},
      {"--max-steps", [&](const std::string& v) { c.max_steps = parse_number<int64_t>("--max-steps", v); }},
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage().c_str(), stdout);
      std::exit(0);
    }
    if (arg == "--no-progress") {
      c.progress = false;
      continue;
    }
    std::string value;
    auto eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    auto it = flags.find(arg);
    if (it == flags.end()) fail("unknown flag '" + arg + "'");
    if (eq == std::string::npos) {
      if (i + 1 >= argc) fail("flag " + arg + " needs a value");
      value = argv[++i];
    }
    it->second(value);
  }
  if (c.epochs < 1) fail("--epochs must be >= 1");
  if (c.batch_size < 1) fail("--batch-size must be >= 1");
  if (!(c.lr > 0)) fail("--lr must be > 0");
  if (c.momentum < 0) fail("--momentum must be >= 0");
  if (c.weight_decay < 0) fail("--weight-decay must be >= 0");
  if (c.workers < 0) fail("--workers must be >= 0");
  if (c.limit_train < 0 || c.max_steps < 0) fail("--limit-train and --max-steps must be >= 0");
  const bool image28 = c.dataset != "cifar10";
  if ((c.model == "mlp" || c.model == "lenet") && !image28) fail("--model " + c.model + " expects 28x28 images (mnist, fashion-mnist)");
  if ((c.model == "cnn" || c.model == "resnet20") && image28) fail("--model " + c.model + " expects 3x32x32 images (--dataset cifar10)");
  if (!data_set) c.data = "data/" + c.dataset;
  return c;
}

std::string describe(const Config& c) {
  std::ostringstream os;
  os << "config: model=" << c.model << " dataset=" << c.dataset << " data=" << c.data << " epochs=" << c.epochs
     << " batch_size=" << c.batch_size << " lr=" << c.lr << " optimizer=" << c.optimizer << " momentum=" << c.momentum
     << " weight_decay=" << c.weight_decay << " seed=" << c.seed << " device=" << c.device << " amp=" << c.amp
     << " workers=" << c.workers;
  if (!c.checkpoint.empty()) os << " checkpoint=" << c.checkpoint;
  if (!c.resume.empty()) os << " resume=" << c.resume;
  if (c.limit_train) os << " limit_train=" << c.limit_train;
  if (c.max_steps) os << " max_steps=" << c.max_steps;
  return os.str();
}

}  // namespace minidl::train
