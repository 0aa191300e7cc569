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
};

std::string epoch_line(const EpochMetrics& m, int64_t epochs);  // "EPOCH 1/3 train_loss=..."
Json to_json(const EpochMetrics& m);
EpochMetrics epoch_from_json(const Json& j);
// Writes the CSV (atomically) and, beside it, an SVG chart of the loss and accuracy curves.
void write_metrics(const std::string& csv_path, const std::vector<EpochMetrics>& history);
std::string curves_svg(const std::vector<EpochMetrics>& history);
double peak_rss_mb();
// Strict JSON has no NaN or infinity: every non-finite number of the object becomes null, and
// summary["null_reasons"][key] says what it was.
void null_nonfinite(Json& summary);

}  // namespace minidl::train
