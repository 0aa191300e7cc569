#include "amp/autocast.h"

#include <cstdio>
#include <unordered_map>

#include "framework/autograd/engine.h"
#include "framework/autograd/grad_mode.h"
#include "framework/error.h"
#include "ops/ops.h"

namespace minidl::amp {

namespace {
struct DeviceState {
  bool enabled = false;
  DType dtype;
};

struct CacheEntry {
  std::weak_ptr<TensorImpl> source;
  uint32_t version;
  Tensor cast;
};

struct State {
  std::array<DeviceState, kNumDeviceTypes> device{{{false, DType::BF16}, {false, DType::F16}}};
  bool cache_enabled = true;
  int nesting = 0;
  int op_depth = 0;  // > 0 inside a policy-wrapped op
  CastPolicy op_policy = CastPolicy::None;
  std::vector<std::string> scopes;  // an entry starting with '\x01' is absolute
  std::unordered_map<const TensorImpl*, CacheEntry> cache;
  CastCacheStats stats;
  NodeObserver observer = nullptr;
  void* observer_ctx = nullptr;
};

State& state() {
  thread_local State s;
  return s;
}

DeviceState& dev(DeviceType t) { return state().device[static_cast<int>(t)]; }

// Every recorded node carries the precision it ran in.
void tag_node(autograd::Node& node, const autograd::TensorList& outputs) {
  State& s = state();
  autograd::AmpTag& tag = node.amp;
  DeviceType device = outputs.empty() ? DeviceType::CPU : outputs[0].device().type;
  tag.compute_dtype = outputs.empty() ? DType::F32 : outputs[0].dtype();
  tag.autocast_enabled = dev(device).enabled;
  tag.autocast_dtype = dev(device).dtype;
  tag.policy = s.op_depth > 0 ? policy_name(s.op_policy) : (tag.autocast_enabled ? "none" : "off");
  if (!s.scopes.empty()) tag.scope = current_scope_name();
  if (s.observer) s.observer(s.observer_ctx, node, outputs);
}

// Backward always runs with autocast off (on the engine's thread).
struct BackwardAutocastOff {
  std::array<bool, kNumDeviceTypes> prev;
  BackwardAutocastOff() {
    for (int i = 0; i < kNumDeviceTypes; ++i) {
      prev[i] = state().device[i].enabled;
      state().device[i].enabled = false;
    }
  }
  ~BackwardAutocastOff() {
    for (int i = 0; i < kNumDeviceTypes; ++i) state().device[i].enabled = prev[i];
  }
};

const bool g_installed = [] {
  autograd::set_node_tagger(tag_node);
  autograd::set_backward_scope_factory([] { return std::shared_ptr<void>(std::make_shared<BackwardAutocastOff>()); });
  return true;
}();

bool eligible(const Tensor& t, DeviceType device) {
  return t.defined() && t.is_floating_point() && t.dtype() != DType::F64 && t.device().type == device;
}
}  // namespace

bool is_autocast_enabled(DeviceType d) { return dev(d).enabled; }
void set_autocast_enabled(DeviceType d, bool enabled) { dev(d).enabled = enabled; }
DType get_autocast_dtype(DeviceType d) { return dev(d).dtype; }
void set_autocast_dtype(DeviceType d, DType dtype) { dev(d).dtype = dtype; }
bool is_autocast_cache_enabled() { return state().cache_enabled; }
void set_autocast_cache_enabled(bool enabled) { state().cache_enabled = enabled; }
int autocast_nesting() { return state().nesting; }
void clear_autocast_cache() { state().cache.clear(); }
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
    std::fprintf(stderr,
                 "minidl warning: in %s autocast, but the target dtype %s is not supported (use %s); "
                 "disabling autocast\n",
                 device_type_name(device), dtype_name(target), device == DeviceType::CUDA ? "f16, bf16 or f32" : "f16 or bf16");
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
  if (--s.nesting == 0) s.cache.clear();
  dev(device_).enabled = prev_enabled_;
  dev(device_).dtype = prev_dtype_;
  s.cache_enabled = prev_cache_;
  if (pushed_scope_) s.scopes.pop_back();
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

OpGuard::OpGuard(CastPolicy policy) : prev_(state().op_policy) {
  ++state().op_depth;
  state().op_policy = policy;
}
OpGuard::~OpGuard() {
  --state().op_depth;
  state().op_policy = prev_;
}

Tensor autocast_cast(const Tensor& x, DType dtype, DeviceType device) {
  if (!eligible(x, device) || x.dtype() == dtype) return x;
  State& s = state();
  // Parameters (f32 leaves that require grad) cast to a lower precision are cached for the region.
  const bool cacheable = s.cache_enabled && !InferenceMode::is_enabled() && x.is_leaf() && x.requires_grad() &&
                         x.dtype() == DType::F32 && is_low_precision(dtype);
  if (!cacheable) return cast(x, dtype);
  auto it = s.cache.find(x.impl());
  // Deviation from PyTorch: an entry is stale once the parameter's version changed (an optimizer
  // step inside the region), instead of silently returning the old cast.
  if (it != s.cache.end() && !it->second.source.expired() && it->second.version == x.version() &&
      it->second.cast.dtype() == dtype) {
    ++s.stats.hits;
    return it->second.cast;
  }
  ++s.stats.misses;
  Tensor c;
  {
    EnableGradGuard grad_on;  // a cast first made under no-grad must still carry gradients later
    c = cast(x, dtype);
  }
  s.cache[x.impl()] = {x.impl_ptr(), x.version(), c};
  return c;
}

CastCacheStats cast_cache_stats() {
  CastCacheStats st = state().stats;
  st.entries = state().cache.size();
  return st;
}

std::optional<AutocastCall> autocast_op(const char* op, const autograd::TensorList& inputs) {
  State& s = state();
  if (s.op_depth > 0) return std::nullopt;
  const Tensor* first = nullptr;
  for (const Tensor& t : inputs)
    if (t.defined()) { first = &t; break; }
  if (!first) return std::nullopt;
  const DeviceType device = first->device().type;
  if (!dev(device).enabled) return std::nullopt;
  const CastPolicy policy = policy_for(op, device);
  if (policy == CastPolicy::None) return std::nullopt;
  if (policy == CastPolicy::Banned)
    MINIDL_FAIL(op, "is unsafe to autocast. Many models use a sigmoid layer right before the binary cross entropy "
                    "layer; combine the two with binary_cross_entropy_with_logits (nn::BCEWithLogitsLoss), which is "
                    "safe to autocast");
  DType target = DType::F32;
  if (policy == CastPolicy::LowerPrecision) {
    target = dev(device).dtype;
  } else if (policy == CastPolicy::Promote) {
    // PyTorch's prioritize: start from the autocast dtype; an f32 input (or an f32 seen so far)
    // makes it f32; f64 inputs are ignored; another low-precision dtype is an error.
    const DType low = dev(device).dtype;
    target = low;
    bool any = false;
    for (const Tensor& t : inputs) {
      if (!eligible(t, device)) continue;
      any = true;
      if (target == DType::F32 || t.dtype() == DType::F32) {
        target = DType::F32;
      } else {
        MINIDL_CHECK(t.dtype() == low, op, "autocast Promote: unexpected ", dtype_name(t.dtype()), " input in a ",
                     dtype_name(low), " autocast region (f16 and bf16 cannot be mixed; inputs may be f32, f64 or ",
                     dtype_name(low), ")");
      }
    }
    if (!any) return std::nullopt;
  }
  AutocastCall call;
  call.guard = std::make_unique<OpGuard>(policy);
  call.inputs.reserve(inputs.size());
  for (const Tensor& t : inputs) call.inputs.push_back(autocast_cast(t, target, device));
  return call;
}

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

ThreadStateGuard::ThreadStateGuard(const ThreadState& t) : prev_(capture_thread_state()) {
  State& s = state();
  for (int i = 0; i < kNumDeviceTypes; ++i) {
    s.device[i].enabled = t.enabled[i];
    s.device[i].dtype = t.dtype[i];
  }
  s.cache_enabled = t.cache_enabled;
  GradMode::set_enabled(t.grad_enabled);
  s.scopes = t.scope_names;
  ++s.nesting;
}

ThreadStateGuard::~ThreadStateGuard() {
  State& s = state();
  if (--s.nesting == 0) s.cache.clear();
  for (int i = 0; i < kNumDeviceTypes; ++i) {
    s.device[i].enabled = prev_.enabled[i];
    s.device[i].dtype = prev_.dtype[i];
  }
  s.cache_enabled = prev_.cache_enabled;
  GradMode::set_enabled(prev_.grad_enabled);
  s.scopes = prev_.scope_names;
}

void set_node_observer(NodeObserver observer, void* ctx) {
  state().observer = observer;
  state().observer_ctx = ctx;
}

}  // namespace minidl::amp
