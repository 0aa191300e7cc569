#include "framework/anomaly_mode.h"

#include <atomic>

namespace minidl {

namespace {
std::atomic<bool> g_anomaly_enabled{false};
}  // namespace

bool AnomalyMode::is_enabled() { return g_anomaly_enabled.load(std::memory_order_relaxed); }
void AnomalyMode::set_enabled(bool enabled) { g_anomaly_enabled.store(enabled, std::memory_order_relaxed); }

}  // namespace minidl
