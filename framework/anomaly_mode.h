// The anomaly-mode switch (torch.autograd.set_detect_anomaly / detect_anomaly). While it is on,
// every op that records a graph node checks its outputs for NaN/inf (ops/anomaly.h) and the backward
// engine checks the gradients each node returns; the first non-finite value raises a minidl::Error
// naming the op, its module path and the graph node. Off (the default) no check runs at all.
// One switch for the whole process, as PyTorch's: worker threads see it too.
#pragma once

namespace minidl {

struct AnomalyMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// Turns anomaly mode on (or off) for the scope and restores the previous setting on exit
// (torch.autograd.detect_anomaly()).
class DetectAnomaly {
 public:
  explicit DetectAnomaly(bool enabled = true) : prev_(AnomalyMode::is_enabled()) { AnomalyMode::set_enabled(enabled); }
  ~DetectAnomaly() { AnomalyMode::set_enabled(prev_); }
  DetectAnomaly(const DetectAnomaly&) = delete;
  DetectAnomaly& operator=(const DetectAnomaly&) = delete;

 private:
  bool prev_;
};

}  // namespace minidl
