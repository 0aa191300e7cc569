// Progress output for long training: a live bar redrawn in place on a terminal, periodic step
// lines otherwise (logs, CI), both rate-limited so printing never costs training time.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace minidl::train {

struct StepStats {
  int64_t epoch = 0, epochs = 0;
  int64_t step = 0, steps = 0;  // within the epoch
  double loss = 0, accuracy = 0, lr = 0, samples_per_s = 0, eta_s = 0;
  double scale = 0;              // 0: no GradScaler
  int64_t skipped = 0;
};

// The live bar's text for a terminal `columns` wide: "[####....] epoch 1/3 step ...", never
// reaching the last column (a line that does would wrap and leave a stale copy behind at every
// redraw). The bar narrows first, then goes, then the text is cut.
std::string fit_bar(const std::string& stats, double fraction, int columns);

// The terminal's width: TIOCGWINSZ on stdout, else $COLUMNS, else 80.
int terminal_columns();

class Progress {
 public:
  explicit Progress(bool enabled);
  void update(const StepStats& s);  // may print, at most every few hundred ms (lines: seconds)
  void finish_epoch();              // clears the live bar before the EPOCH line

 private:
  std::string line(const StepStats& s) const;
  bool enabled_;
  bool tty_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_;
};

std::string format_duration(double seconds);  // "1m05s"

}  // namespace minidl::train
