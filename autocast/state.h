// Autocast state: per thread and per device type, the enabled flag and dtype, the cache flag, the
// nesting depth, the scope names that label graph nodes, and the marker of a running policy-wrapped
// op. The RAII scope (torch.autocast) saves and restores all of it. No ops live here: the ops layer
// reads this state when it casts inputs (ops/autocast_hook.h) and tags nodes (ops/node.h).
// Semantics follow torch.amp.autocast; differences are marked "Deviation".
#pragma once
#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autocast/policy.h"
#include "framework/dtype.h"

namespace minidl::amp {

// ---- state queries and setters (per thread, per device type)
bool is_autocast_enabled(DeviceType device = DeviceType::CPU);
void set_autocast_enabled(DeviceType device, bool enabled);
DType get_autocast_dtype(DeviceType device = DeviceType::CPU);
void set_autocast_dtype(DeviceType device, DType dtype);
bool is_autocast_cache_enabled();
void set_autocast_cache_enabled(bool enabled);
int autocast_nesting();  // live autocast scopes on this thread
bool is_autocast_supported(DeviceType device, DType dtype);  // CPU: f16, bf16; CUDA: also f32

// RAII scope (torch.autocast). With no dtype it keeps the current one (defaults: CPU bf16, CUDA
// f16). enabled=false turns autocast off for the region. An unsupported dtype with enabled=true
// warns and disables. Everything is restored on exit, also on exceptions; leaving the outermost
// scope clears the cast cache. `scope_name` labels the graph nodes recorded inside (reports).
class autocast {
 public:
  explicit autocast(DeviceType device = DeviceType::CPU, std::optional<DType> dtype = std::nullopt, bool enabled = true,
                    std::optional<bool> cache_enabled = std::nullopt, std::string scope_name = "");
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  DeviceType device_;
  bool prev_enabled_;
  DType prev_dtype_;
  bool prev_cache_;
  bool pushed_scope_;
};

// Turns autocast off on every device type for its lifetime (the backward engine runs under one).
class AutocastDisabled {
 public:
  AutocastDisabled();
  ~AutocastDisabled();
  AutocastDisabled(const AutocastDisabled&) = delete;
  AutocastDisabled& operator=(const AutocastDisabled&) = delete;

 private:
  std::array<bool, kNumDeviceTypes> prev_;
};

// Names the graph nodes recorded in a region. Nested names join with dots; an absolute name (a
// module's full path, "block.conv1") replaces what encloses it.
class ScopeName {
 public:
  explicit ScopeName(const std::string& name, bool absolute = false);
  ~ScopeName();
  ScopeName(const ScopeName&) = delete;
  ScopeName& operator=(const ScopeName&) = delete;
};
std::string current_scope_name();  // dotted path of the active names; "" outside any

// While alive, a policy-wrapped op is running with the casts its policy asked for: ops it calls
// are not re-cast, and nodes recorded meanwhile carry its policy.
class OpScope {
 public:
  explicit OpScope(CastPolicy policy);
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  std::optional<CastPolicy> prev_;
};
// The policy of the innermost running policy-wrapped op; nullopt outside any.
std::optional<CastPolicy> active_op_policy();

// ---- state for other threads (autocast state is per thread, as in PyTorch)
struct ThreadState {
  std::array<bool, kNumDeviceTypes> enabled{};
  std::array<DType, kNumDeviceTypes> dtype{};
  bool cache_enabled = true;
  bool grad_enabled = true;
  std::vector<std::string> scope_names;
};
ThreadState capture_thread_state();
class ThreadStateGuard {  // applies a captured state for its lifetime on the current thread
 public:
  explicit ThreadStateGuard(const ThreadState& s);
  ~ThreadStateGuard();
  ThreadStateGuard(const ThreadStateGuard&) = delete;
  ThreadStateGuard& operator=(const ThreadStateGuard&) = delete;

 private:
  ThreadState prev_;
};
// Wraps f so that, wherever it runs, it runs with the caller's autocast and grad state.
template <class F>
auto propagate_state(F f) {
  return [state = capture_thread_state(), f = std::move(f)](auto&&... args) mutable {
    ThreadStateGuard guard(state);
    return f(std::forward<decltype(args)>(args)...);
  };
}

}  // namespace minidl::amp
