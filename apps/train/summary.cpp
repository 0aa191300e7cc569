#include "apps/train/summary.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "serialize/serialize.h"

namespace minidl::train {

std::string epoch_line(const EpochMetrics& m, int64_t epochs, bool with_scaler) {
  char buf[320];
  int n = std::snprintf(buf, sizeof buf,
                        "EPOCH %lld/%lld train_loss=%.4f train_acc=%.4f test_loss=%.4f test_acc=%.4f lr=%.5g "
                        "samples_per_s=%.0f epoch_s=%.2f",
                        (long long)m.epoch, (long long)epochs, m.train_loss, m.train_accuracy, m.test_loss, m.test_accuracy,
                        m.lr, m.samples_per_s, m.epoch_s);
  if (with_scaler && n > 0 && n < static_cast<int>(sizeof buf))
    std::snprintf(buf + n, sizeof buf - n, " scale=%.6g skipped=%lld", m.scale, (long long)m.skipped);
  return buf;
}

Json to_json(const EpochMetrics& m) {
  Json j = Json::object();
  j["epoch"] = m.epoch;
  j["train_loss"] = m.train_loss;
  j["train_accuracy"] = m.train_accuracy;
  j["test_loss"] = m.test_loss;
  j["test_accuracy"] = m.test_accuracy;
  j["lr"] = m.lr;
  j["samples_per_s"] = m.samples_per_s;
  j["epoch_s"] = m.epoch_s;
  j["scale"] = m.scale;
  j["skipped"] = m.skipped;
  j["end_step"] = m.end_step;
  return j;
}

EpochMetrics epoch_from_json(const Json& j) {
  EpochMetrics m;
  m.epoch = j.at("epoch").as_int();
  m.train_loss = j.at("train_loss").as_double();
  m.train_accuracy = j.at("train_accuracy").as_double();
  m.test_loss = j.at("test_loss").as_double();
  m.test_accuracy = j.at("test_accuracy").as_double();
  m.lr = j.at("lr").as_double();
  m.samples_per_s = j.at("samples_per_s").as_double();
  m.epoch_s = j.at("epoch_s").as_double();
  m.scale = j.at("scale").as_double();
  m.skipped = j.at("skipped").as_int();
  if (j.contains("end_step")) m.end_step = j.at("end_step").as_int();
  return m;
}

namespace {
void write_text(const std::string& path, const std::string& text) {
  write_file_atomically(path, [&](const ByteSink& sink) { sink(text.data(), text.size()); });
}

}  // namespace

void write_metrics(const std::string& csv_path, const std::vector<EpochMetrics>& history,
                   const std::vector<StepLoss>& steps) {
  std::ostringstream os;
  os << "epoch,train_loss,train_accuracy,test_loss,test_accuracy,lr,samples_per_s,epoch_s,scale,skipped\n";
  for (const auto& m : history)
    os << m.epoch << ',' << m.train_loss << ',' << m.train_accuracy << ',' << m.test_loss << ',' << m.test_accuracy << ','
       << m.lr << ',' << m.samples_per_s << ',' << m.epoch_s << ',' << m.scale << ',' << m.skipped << '\n';
  write_text(csv_path, os.str());
  std::string svg = csv_path;
  auto dot = svg.rfind('.');
  svg = (dot == std::string::npos ? svg : svg.substr(0, dot)) + ".svg";
  write_text(svg, curves_svg(history, steps));
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;  // Linux reports KiB
}

void null_nonfinite(Json& summary) {
  Json reasons = Json::object();
  for (const auto& [key, value] : summary.members())
    if (value.is_number() && !std::isfinite(value.as_double())) {
      const double v = value.as_double();
      reasons[key] = std::string("not finite: the value was ") + (std::isnan(v) ? "nan" : (v > 0 ? "+inf" : "-inf"));
    }
  for (const auto& [key, reason] : reasons.members()) summary[key] = nullptr;
  if (reasons.size() > 0) summary["null_reasons"] = reasons;
}

}  // namespace minidl::train
