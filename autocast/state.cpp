#include "autocast/state.h"

#include <cstdio>

#include "autocast/cast_cache.h"
#include "framework/error.h"
#include "framework/grad_mode.h"
#include "framework/warning.h"

namespace minidl::amp {

namespace {
struct DeviceState {
  bool enabled = false;
  DType dtype;
};

struct State {
  std::array<DeviceState, kNumDeviceTypes> device{{{false, DType::BF16}, {false, DType::F16}}};
  bool cache_enabled = true;
  int nesting = 0;
  std::optional<CastPolicy> op_policy;  // set inside a policy-wrapped op
  std::vector<std::string> scopes;      // an entry starting with '\x01' is absolute
};

State& state() {
  thread_local State s;
  return s;
}

DeviceState& dev(DeviceType t) { return state().device[static_cast<int>(t)]; }

void leave_region(State& s) {
  if (--s.nesting == 0) clear_autocast_cache();
}
}  // namespace

bool is_autocast_enabled(DeviceType d) { return dev(d).enabled; }
void set_autocast_enabled(DeviceType d, bool enabled) { dev(d).enabled = enabled; }
DType get_autocast_dtype(DeviceType d) { return dev(d).dtype; }
void set_autocast_dtype(DeviceType d, DType dtype) { dev(d).dtype = dtype; }
bool is_autocast_cache_enabled() { return state().cache_enabled; }
void set_autocast_cache_enabled(bool enabled) { state().cache_enabled = enabled; }
int autocast_nesting() { return state().nesting; }
// CPU: f16 and bf16 (PyTorch warns and disables otherwise). CUDA also takes f32 (PyTorch checks
// only bf16 support there); deviation: f64 and integer dtypes warn and disable on CUDA too.
bool is_autocast_supported(DeviceType device, DType dtype) {
  return dtype == DType::F16 || dtype == DType::BF16 || (device == DeviceType::CUDA && dtype == DType::F32);
}

autocast::autocast(DeviceType device, std::optional<DType> dtype, bool enabled, std::optional<bool> cache_enabled,
                   std::string scope_name)
    : device_(device),
      prev_enabled_(dev(device).enabled),
      prev_dtype_(dev(device).dtype),
      prev_cache_(state().cache_enabled),
      pushed_scope_(!scope_name.empty()) {
  DType target = dtype.value_or(prev_dtype_);
  if (enabled && !is_autocast_supported(device, target)) {
    warn(detail::concat("in ", device_type_name(device), " autocast, but the target dtype ", dtype_name(target),
                        " is not supported (use ", device == DeviceType::CUDA ? "f16, bf16 or f32" : "f16 or bf16",
                        "); disabling autocast"));
    enabled = false;
  }
  dev(device).enabled = enabled;
  if (enabled || dtype) dev(device).dtype = target;
  if (cache_enabled) state().cache_enabled = *cache_enabled;
  ++state().nesting;
  if (pushed_scope_) state().scopes.push_back(std::move(scope_name));
}

autocast::~autocast() {
  State& s = state();
  leave_region(s);
  dev(device_).enabled = prev_enabled_;
  dev(device_).dtype = prev_dtype_;
  s.cache_enabled = prev_cache_;
  if (pushed_scope_) s.scopes.pop_back();
}

AutocastDisabled::AutocastDisabled() {
  for (int i = 0; i < kNumDeviceTypes; ++i) {
    prev_[i] = state().device[i].enabled;
    state().device[i].enabled = false;
  }
}
AutocastDisabled::~AutocastDisabled() {
  for (int i = 0; i < kNumDeviceTypes; ++i) state().device[i].enabled = prev_[i];
}

ScopeName::ScopeName(const std::string& name, bool absolute) {
  state().scopes.push_back(absolute ? '\x01' + name : name);
}
ScopeName::~ScopeName() { state().scopes.pop_back(); }

std::string current_scope_name() {
  const auto& scopes = state().scopes;
  size_t start = 0;
  for (size_t i = scopes.size(); i-- > 0;)
    if (!scopes[i].empty() && scopes[i][0] == '\x01') {
      start = i;
      break;
    }
  std::string out;
  for (size_t i = start; i < scopes.size(); ++i) {
    std::string s = !scopes[i].empty() && scopes[i][0] == '\x01' ? scopes[i].substr(1) : scopes[i];
    if (s.empty()) continue;
    if (!out.empty()) out += '.';
    out += s;
  }
  return out;
}

OpScope::OpScope(CastPolicy policy) : prev_(state().op_policy) { state().op_policy = policy; }
OpScope::~OpScope() { state().op_policy = prev_; }
std::optional<CastPolicy> active_op_policy() { return state().op_policy; }

ThreadState capture_thread_state() {
  State& s = state();
  ThreadState t;
  for (int i = 0; i < kNumDeviceTypes; ++i) {
    t.enabled[i] = s.device[i].enabled;
    t.dtype[i] = s.device[i].dtype;
  }
  t.cache_enabled = s.cache_enabled;
  t.grad_enabled = GradMode::is_enabled();
  t.scope_names = s.scopes;
  return t;
}

namespace {
// Sets this thread's autocast and grad state to t (the nesting depth is the caller's business).
void apply(State& s, const ThreadState& t) {
  for (int i = 0; i < kNumDeviceTypes; ++i) {
    s.device[i].enabled = t.enabled[i];
    s.device[i].dtype = t.dtype[i];
  }
  s.cache_enabled = t.cache_enabled;
  GradMode::set_enabled(t.grad_enabled);
  s.scopes = t.scope_names;
}
}  // namespace

ThreadStateGuard::ThreadStateGuard(const ThreadState& t) : prev_(capture_thread_state()) {
  apply(state(), t);
  ++state().nesting;
}

ThreadStateGuard::~ThreadStateGuard() {
  State& s = state();
  leave_region(s);
  apply(s, prev_);
}

}  // namespace minidl::amp
