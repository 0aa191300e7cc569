// minidl-train's command line: every flag, its default, validation, and the resolved configuration
// printed once at start. A bad flag or value is a clear error and exit status 2.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace minidl::train {

struct Config {
  std::string model = "mlp";              // mlp | lenet | cnn | resnet20
  std::string dataset = "fashion-mnist";  // fashion-mnist | mnist | cifar10
  std::string data;                       // folder; default data/<dataset>
  int64_t epochs = 3;
  int64_t batch_size = 128;
  double lr = 0.05;
  std::string lr_schedule = "constant";  // constant | step | cosine | onecycle (apps/train/schedule.h)
  int64_t warmup_steps = 0;              // linear warm-up steps before the schedule
  std::string optimizer = "sgd";  // sgd | adam | adamw
  double momentum = 0.9;
  double weight_decay = 0.0;
  uint64_t seed = 1;
  std::string device = "cpu";  // cpu | cuda
  std::string amp = "off";     // off | bf16 | fp16
  int workers = 1;             // data-loader threads
  std::string checkpoint;      // written at the end of every epoch (atomic)
  std::string resume;          // checkpoint to continue from
  std::string metrics;         // per-epoch CSV
  std::string json;            // the final JSON summary, also printed as the last stdout line
  std::string precision_report;  // AMP precision report (text); a .dot/.svg beside it
  int64_t limit_train = 0;     // use only the first N training samples (0: all)
  int64_t max_steps = 0;       // stop after N optimizer steps in total (0: no limit)
  bool progress = true;        // live progress bar on a terminal / periodic lines otherwise
  std::string nan_policy = "stop";  // stop | skip: what a non-finite training loss does
  bool detect_anomaly = false;      // check every op's outputs and gradients for NaN/inf
  bool sync_bn = false;             // data parallel: batch norm over the global batch
  bool help = false;                // --help was given: print usage() and exit 0
};

// A bad flag or value, or an output path that cannot be written (exit status 2).
struct FlagError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses the flags (args without the program name). Throws FlagError on a bad flag (an integer out
// of its range included) or an output path (--checkpoint, --metrics, --json, --precision-report)
// that cannot be written; stops at --help with help set. Writes nothing, exits nothing: the fuzz
// target tests/fuzz/fuzz_train_flags.cpp calls it on arbitrary arguments.
Config parse_flags(const std::vector<std::string>& args);

// parse_flags on argv; on --help prints the usage and exits 0; on a FlagError prints it and the usage
// hint to stderr and exits 2.
Config parse_args(int argc, char** argv);
std::string usage();
std::string describe(const Config& c);  // the resolved configuration, one line

}  // namespace minidl::train
