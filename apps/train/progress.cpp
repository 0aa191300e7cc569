#include "apps/train/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

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

std::string fit_bar(const std::string& stats, double fraction, int columns) {
  constexpr int kMaxBar = 24, kMinBar = 8;
  const int usable = std::max(columns - 1, 1);  // the last column would wrap
  const int room = usable - static_cast<int>(stats.size()) - 3;  // "[", "] "
  if (room < kMinBar) return stats.substr(0, static_cast<size_t>(usable));
  const int width = std::min(kMaxBar, room);
  const int filled = static_cast<int>(width * std::clamp(fraction, 0.0, 1.0));
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(static_cast<size_t>(width), '.');
  return "[" + bar + "] " + stats;
}

int terminal_columns() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* env = std::getenv("COLUMNS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return 80;
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
    const double fraction = s.steps ? static_cast<double>(s.step) / static_cast<double>(s.steps) : 0.0;
    std::printf("\r\033[K%s", fit_bar(line(s), fraction, terminal_columns()).c_str());
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
