#include "apps/train/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace minidl::train {

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  char buf[32];
  const int total = static_cast<int>(s + 0.5);
  if (total >= 3600) std::snprintf(buf, sizeof buf, "%dh%02dm", total / 3600, total % 3600 / 60);
  else if (total >= 60) std::snprintf(buf, sizeof buf, "%dm%02ds", total / 60, total % 60);
  else std::snprintf(buf, sizeof buf, "%ds", total);
  return buf;
}

Progress::Progress(bool enabled) : enabled_(enabled), tty_(isatty(STDOUT_FILENO) == 1), last_(std::chrono::steady_clock::now()) {}

std::string Progress::line(const StepStats& s) const {
  char buf[256];
  int n = std::snprintf(buf, sizeof buf, "epoch %lld/%lld step %lld/%lld  loss %.4f  acc %.2f%%  lr %.4g  %.0f samples/s  eta %s",
                        (long long)s.epoch, (long long)s.epochs, (long long)s.step, (long long)s.steps, s.loss,
                        s.accuracy * 100, s.lr, s.samples_per_s, format_duration(s.eta_s).c_str());
  if (s.scale > 0 && n > 0 && n < (int)sizeof buf)
    std::snprintf(buf + n, sizeof buf - n, "  scale %.0f  skipped %lld", s.scale, (long long)s.skipped);
  return buf;
}

void Progress::update(const StepStats& s) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_).count();
  if (tty_) {
    if (since < 0.2 && s.step != s.steps) return;
    const int width = 24;
    const int filled = s.steps ? static_cast<int>(width * s.step / s.steps) : 0;
    std::string bar(filled, '#');
    bar.resize(width, '.');
    std::printf("\r\033[K[%s] %s", bar.c_str(), line(s).c_str());
    std::fflush(stdout);
    drawn_ = true;
  } else {
    if (since < 5.0) return;
    std::printf("%s\n", line(s).c_str());
    std::fflush(stdout);
  }
  last_ = now;
}

void Progress::finish_epoch() {
  if (enabled_ && tty_ && drawn_) {
    std::printf("\r\033[K");
    std::fflush(stdout);
  }
  drawn_ = false;
}

}  // namespace minidl::train
