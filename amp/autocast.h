// Autocast: thread-local mixed-precision state per device type, the RAII scope that sets it, the
// weight-cast cache, and the entry hook every policy-wrapped op calls first. Semantics follow
// torch.amp.autocast; differences are marked "Deviation".
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "amp/policy.h"
#include "framework/autograd/node.h"
#include "framework/tensor.h"

namespace minidl::amp {

// ---- state queries and setters (per thread, per device type)
bool is_autocast_enabled(DeviceType device = DeviceType::CPU);
void set_autocast_enabled(DeviceType device, bool enabled);
DType get_autocast_dtype(DeviceType device = DeviceType::CPU);
void set_autocast_dtype(DeviceType device, DType dtype);
bool is_autocast_cache_enabled();
void set_autocast_cache_enabled(bool enabled);
int autocast_nesting();          // live autocast scopes on this thread
void clear_autocast_cache();
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

// ---- the op entry hook
// While alive, the op it was made for is running with the casts its policy asked for; ops it calls
// are not re-cast, and nodes recorded meanwhile are tagged with its policy.
class OpGuard {
 public:
  explicit OpGuard(CastPolicy policy);
  ~OpGuard();
  OpGuard(const OpGuard&) = delete;
  OpGuard& operator=(const OpGuard&) = delete;
  OpGuard(OpGuard&&) = delete;

 private:
  CastPolicy prev_;
};

struct AutocastCall {
  autograd::TensorList inputs;  // the inputs cast per the op's policy
  std::unique_ptr<OpGuard> guard;
};
// Returns nullopt when autocast does not apply: disabled for the inputs' device type, already
// inside a policy-wrapped op, or policy None. Otherwise the caller re-runs the op on `inputs`
// while the call object lives:
//   if (auto ac = amp::autocast_op("mm", {a, b})) return mm(ac->inputs[0], ac->inputs[1]);
// Throws for Banned ops.
std::optional<AutocastCall> autocast_op(const char* op, const autograd::TensorList& inputs);

// Casts x to dtype for autocast: eligible tensors only (floating, not f64), through the cache for
// f32 parameters (leaves that require grad). Ineligible tensors are returned unchanged.
Tensor autocast_cast(const Tensor& x, DType dtype, DeviceType device);

struct CastCacheStats {
  size_t entries = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
};
CastCacheStats cast_cache_stats();  // this thread's cache

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

// ---- precision-report hook: called for every recorded node with its outputs (reports only)
using NodeObserver = void (*)(void* ctx, autograd::Node& node, const autograd::TensorList& outputs);
void set_node_observer(NodeObserver observer, void* ctx);  // this thread; nullptr to stop

}  // namespace minidl::amp
