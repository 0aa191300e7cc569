// What a training run reports: per-epoch metrics (EPOCH lines, the metrics CSV and its chart) and
// the final JSON summary.
#pragma once
#include <string>
#include <vector>

#include "framework/json.h"

namespace minidl::train {

struct EpochMetrics {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0, train_accuracy = 0;
  double test_loss = 0, test_accuracy = 0;
  double lr = 0, samples_per_s = 0, epoch_s = 0;
  double scale = 1;
  int64_t skipped = 0;
  int64_t end_step = 0;  // optimizer steps done when the epoch ended (0: unknown, an older checkpoint)
};

// "EPOCH 1/3 train_loss=..."; scale= and skipped= only with a GradScaler (fp16).
std::string epoch_line(const EpochMetrics& m, int64_t epochs, bool with_scaler);
Json to_json(const EpochMetrics& m);
EpochMetrics epoch_from_json(const Json& j);

// One optimizer step's training loss (step counts from 1 over the whole run).
struct StepLoss {
  int64_t step = 0;
  double loss = 0;
};

// Writes the CSV (atomically) and, beside it, an SVG chart of the curves (curves_svg).
void write_metrics(const std::string& csv_path, const std::vector<EpochMetrics>& history,
                   const std::vector<StepLoss>& steps);
// Two panels with axes, ticks and labels: the training loss per step (with each epoch's test loss
// where the epoch ended) and the train/test accuracy per epoch; legends beside the plot areas, not
// over the data. A single epoch (or a single step) still draws its points.
std::string curves_svg(const std::vector<EpochMetrics>& history, const std::vector<StepLoss>& steps);
double peak_rss_mb();
// Strict JSON has no NaN or infinity: every non-finite number of the object becomes null, and
// summary["null_reasons"][key] says what it was.
void null_nonfinite(Json& summary);

}  // namespace minidl::train
