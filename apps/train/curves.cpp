// The training curves chart (the SVG beside the metrics CSV): two panels with axes, "nice" ticks
// (1, 2 or 5 times a power of ten), tick labels and axis labels. Left: the training loss of every
// step, with each epoch's train and test loss marked where the epoch ended; right: train and test
// accuracy per epoch. Legends sit in each panel's header, above the plot area, so they never cover
// data; single points (one epoch, one step) are drawn as markers.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "apps/train/summary.h"

namespace minidl::train {

namespace {
constexpr double kPanelW = 300, kPanelH = 200;  // plot area
constexpr double kTop = 62, kLeft = 70, kGap = 110;  // header (title + legend), y labels, between panels
constexpr int kMaxLinePoints = 800;                  // longer step series are averaged into buckets
const char* const kAxis = "#333333";

struct Series {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;  // (x, y), finite only
  bool line = true;     // a polyline through the points (when there are two or more)
  bool markers = false; // a dot at every point
};

struct Panel {
  std::string title, xlabel, ylabel;
  bool integer_x = false;  // ticks on whole numbers only (steps, epochs)
  std::vector<Series> series;
};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::fabs(v) < 1e-12 ? 0.0 : v);
  return buf;
}

// Tick positions covering [lo, hi]: about five steps of 1, 2 or 5 times a power of ten.
std::vector<double> nice_ticks(double& lo, double& hi, bool integer) {
  if (!(hi > lo)) {
    const double pad = std::max(std::fabs(lo) * 0.1, integer ? 1.0 : 0.5);
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  if (integer) step = std::max(step, 1.0);
  lo = std::floor(lo / step) * step;
  hi = std::ceil(hi / step) * step;
  std::vector<double> ticks;
  for (double t = lo; t <= hi + step * 1e-9; t += step) ticks.push_back(t);
  return ticks;
}

void draw_panel(std::ostringstream& os, double x0, double y0, const Panel& p) {
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  for (const Series& s : p.series)
    for (const auto& [x, y] : s.points) {
      xlo = std::min(xlo, x), xhi = std::max(xhi, x);
      ylo = std::min(ylo, y), yhi = std::max(yhi, y);
    }
  os << "<text x='" << x0 << "' y='" << y0 - 40 << "' font-size='14' font-weight='bold'>" << p.title << "</text>\n";
  // Legend: the header row above the plot area.
  double lx = x0;
  for (const Series& s : p.series) {
    if (s.line)
      os << "<line x1='" << lx << "' y1='" << y0 - 18 << "' x2='" << lx + 18 << "' y2='" << y0 - 18 << "' stroke='" << s.color
         << "' stroke-width='3'/>\n";
    else
      os << "<circle cx='" << lx + 9 << "' cy='" << y0 - 18 << "' r='3.5' fill='" << s.color << "'/>\n";
    os << "<text x='" << lx + 22 << "' y='" << y0 - 14 << "' font-size='12'>" << s.name << "</text>\n";
    lx += 34 + 7.0 * static_cast<double>(s.name.size());
  }
  if (!std::isfinite(xlo)) {  // nothing finite to draw
    os << "<text x='" << x0 + kPanelW / 2 << "' y='" << y0 + kPanelH / 2 << "' font-size='12' text-anchor='middle'>no data</text>\n";
    return;
  }
  const double ypad = 0.04 * (yhi - ylo);  // keeps points off the x axis and the top edge
  ylo -= ypad;
  yhi += ypad;
  const std::vector<double> xt = nice_ticks(xlo, xhi, p.integer_x), yt = nice_ticks(ylo, yhi, false);
  auto X = [&](double x) { return x0 + kPanelW * (x - xlo) / (xhi - xlo); };
  auto Y = [&](double y) { return y0 + kPanelH - kPanelH * (y - ylo) / (yhi - ylo); };
  // Grid and ticks; the axes are drawn on whole pixels + 0.5 so they render as one crisp pixel.
  for (double t : yt) {
    const double y = std::round(Y(t)) + 0.5;
    os << "<line x1='" << x0 << "' y1='" << y << "' x2='" << x0 + kPanelW << "' y2='" << y << "' stroke='#e6e6e6'/>\n"
       << "<line x1='" << x0 - 5 << "' y1='" << y << "' x2='" << x0 << "' y2='" << y << "' stroke='" << kAxis << "'/>\n"
       << "<text x='" << x0 - 8 << "' y='" << y + 4 << "' font-size='11' text-anchor='end'>" << num(t) << "</text>\n";
  }
  for (double t : xt) {
    const double x = std::round(X(t)) + 0.5;
    os << "<line x1='" << x << "' y1='" << y0 + kPanelH << "' x2='" << x << "' y2='" << y0 + kPanelH + 5 << "' stroke='"
       << kAxis << "'/>\n<text x='" << x << "' y='" << y0 + kPanelH + 18 << "' font-size='11' text-anchor='middle'>" << num(t)
       << "</text>\n";
  }
  for (const Series& s : p.series) {
    if (s.line && s.points.size() >= 2) {
      os << "<polyline fill='none' stroke='" << s.color << "' stroke-width='1.5' points='";
      for (const auto& [x, y] : s.points) os << X(x) << ',' << Y(y) << ' ';
      os << "'/>\n";
    }
    if (s.markers || s.points.size() == 1)
      for (const auto& [x, y] : s.points)
        os << "<circle cx='" << X(x) << "' cy='" << Y(y) << "' r='3.5' fill='" << s.color << "'/>\n";
  }
  // The axes last, over the data that touches them.
  const double ax = std::round(x0) + 0.5, ay = std::round(y0 + kPanelH) + 0.5;
  os << "<line x1='" << ax << "' y1='" << y0 << "' x2='" << ax << "' y2='" << ay << "' stroke='" << kAxis << "'/>\n"
     << "<line x1='" << ax << "' y1='" << ay << "' x2='" << x0 + kPanelW << "' y2='" << ay << "' stroke='" << kAxis << "'/>\n"
     << "<text x='" << x0 + kPanelW / 2 << "' y='" << y0 + kPanelH + 36 << "' font-size='12' text-anchor='middle'>" << p.xlabel
     << "</text>\n<text transform='translate(" << x0 - 48 << ',' << y0 + kPanelH / 2
     << ") rotate(-90)' font-size='12' text-anchor='middle'>" << p.ylabel << "</text>\n";
}

// At most kMaxLinePoints points: consecutive steps averaged into equal buckets.
std::vector<std::pair<double, double>> step_points(const std::vector<StepLoss>& steps) {
  std::vector<std::pair<double, double>> finite;
  for (const StepLoss& s : steps)
    if (std::isfinite(s.loss)) finite.emplace_back(static_cast<double>(s.step), s.loss);
  if (finite.size() <= static_cast<size_t>(kMaxLinePoints)) return finite;
  std::vector<std::pair<double, double>> out;
  const size_t per = (finite.size() + kMaxLinePoints - 1) / kMaxLinePoints;
  for (size_t i = 0; i < finite.size(); i += per) {
    const size_t end = std::min(finite.size(), i + per);
    double sx = 0, sy = 0;
    for (size_t k = i; k < end; ++k) sx += finite[k].first, sy += finite[k].second;
    out.emplace_back(sx / static_cast<double>(end - i), sy / static_cast<double>(end - i));
  }
  return out;
}

void add_point(Series& s, double x, double y) {
  if (std::isfinite(x) && std::isfinite(y)) s.points.emplace_back(x, y);
}
}  // namespace

std::string curves_svg(const std::vector<EpochMetrics>& history, const std::vector<StepLoss>& steps) {
  Panel loss{"Loss", "step", "loss", true, {}};
  loss.series.push_back({"train (per step)", "#1f77b4", step_points(steps), true, false});
  Series epoch_train{"train (epoch)", "#0b3d66", {}, false, true}, epoch_test{"test (epoch)", "#d62728", {}, true, true};
  Panel acc{"Accuracy", "epoch", "accuracy", true, {}};
  Series acc_train{"train", "#1f77b4", {}, true, true}, acc_test{"test", "#d62728", {}, true, true};
  for (const EpochMetrics& m : history) {
    // Older checkpoints lack the epoch's last step: such epochs are marked on the accuracy panel only.
    if (m.end_step > 0) {
      add_point(epoch_train, static_cast<double>(m.end_step), m.train_loss);
      add_point(epoch_test, static_cast<double>(m.end_step), m.test_loss);
    }
    add_point(acc_train, static_cast<double>(m.epoch), m.train_accuracy);
    add_point(acc_test, static_cast<double>(m.epoch), m.test_accuracy);
  }
  loss.series.push_back(epoch_train);
  loss.series.push_back(epoch_test);
  acc.series.push_back(acc_train);
  acc.series.push_back(acc_test);
  std::ostringstream os;
  const double width = kLeft + kPanelW + kGap + kPanelW + 30, height = kTop + kPanelH + 50;
  os << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='" << height
     << "' font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n";
  draw_panel(os, kLeft, kTop, loss);
  draw_panel(os, kLeft + kPanelW + kGap, kTop, acc);
  os << "</svg>\n";
  return os.str();
}

}  // namespace minidl::train
