#include "apps/train/summary.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "serialize/serialize.h"

namespace minidl::train {

std::string epoch_line(const EpochMetrics& m, int64_t epochs) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "EPOCH %lld/%lld train_loss=%.4f train_acc=%.4f test_loss=%.4f test_acc=%.4f lr=%.5g "
                "samples_per_s=%.0f epoch_s=%.2f scale=%.6g skipped=%lld",
                (long long)m.epoch, (long long)epochs, m.train_loss, m.train_accuracy, m.test_loss, m.test_accuracy, m.lr,
                m.samples_per_s, m.epoch_s, m.scale, (long long)m.skipped);
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
  return m;
}

namespace {
void write_text(const std::string& path, const std::string& text) {
  write_file_atomically(path, [&](const ByteSink& sink) { sink(text.data(), text.size()); });
}

// One polyline per series over epochs, scaled into a panel.
void panel(std::ostringstream& os, double x0, double y0, double w, double h, const std::string& title,
           const std::vector<std::pair<std::string, std::vector<double>>>& series, const char* const* colors) {
  double lo = 1e300, hi = -1e300;
  size_t n = 0;
  for (auto& [name, v] : series)
    for (double y : v) { lo = std::min(lo, y); hi = std::max(hi, y); n = std::max(n, v.size()); }
  if (n == 0) return;
  if (hi - lo < 1e-12) { hi += 0.5; lo -= 0.5; }
  os << "<rect x='" << x0 << "' y='" << y0 << "' width='" << w << "' height='" << h << "' fill='none' stroke='#999'/>\n";
  os << "<text x='" << x0 + 4 << "' y='" << y0 - 6 << "' font-size='13'>" << title << " (" << lo << " .. " << hi << ")</text>\n";
  for (size_t s = 0; s < series.size(); ++s) {
    const auto& v = series[s].second;
    os << "<polyline fill='none' stroke='" << colors[s] << "' stroke-width='2' points='";
    for (size_t i = 0; i < v.size(); ++i) {
      double x = x0 + (n == 1 ? w / 2 : w * i / (n - 1));
      double y = y0 + h - h * (v[i] - lo) / (hi - lo);
      os << x << ',' << y << ' ';
    }
    os << "'/>\n<text x='" << x0 + w - 90 << "' y='" << y0 + 16 + 14 * s << "' font-size='12' fill='" << colors[s] << "'>"
       << series[s].first << "</text>\n";
  }
}
}  // namespace

std::string curves_svg(const std::vector<EpochMetrics>& h) {
  std::vector<double> trl, tel, tra, tea;
  for (const auto& m : h) {
    trl.push_back(m.train_loss);
    tel.push_back(m.test_loss);
    tra.push_back(m.train_accuracy);
    tea.push_back(m.test_accuracy);
  }
  static const char* colors[] = {"#1f77b4", "#d62728"};
  std::ostringstream os;
  os << "<svg xmlns='http://www.w3.org/2000/svg' width='760' height='300' font-family='sans-serif'>\n"
     << "<rect width='100%' height='100%' fill='white'/>\n";
  panel(os, 30, 40, 320, 220, "loss per epoch", {{"train", trl}, {"test", tel}}, colors);
  panel(os, 410, 40, 320, 220, "accuracy per epoch", {{"train", tra}, {"test", tea}}, colors);
  os << "</svg>\n";
  return os.str();
}

void write_metrics(const std::string& csv_path, const std::vector<EpochMetrics>& history) {
  std::ostringstream os;
  os << "epoch,train_loss,train_accuracy,test_loss,test_accuracy,lr,samples_per_s,epoch_s,scale,skipped\n";
  for (const auto& m : history)
    os << m.epoch << ',' << m.train_loss << ',' << m.train_accuracy << ',' << m.test_loss << ',' << m.test_accuracy << ','
       << m.lr << ',' << m.samples_per_s << ',' << m.epoch_s << ',' << m.scale << ',' << m.skipped << '\n';
  write_text(csv_path, os.str());
  std::string svg = csv_path;
  auto dot = svg.rfind('.');
  svg = (dot == std::string::npos ? svg : svg.substr(0, dot)) + ".svg";
  write_text(svg, curves_svg(history));
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
