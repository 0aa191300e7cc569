#include "ops/node.h"

#include <atomic>

#include "autocast/state.h"
#include "framework/anomaly_mode.h"
#include "framework/error.h"
#include "framework/grad_mode.h"
#include "ops/anomaly.h"

namespace minidl::autograd {

namespace {
std::atomic<uint64_t> g_sequence{0};
struct Observer {
  NodeObserver fn = nullptr;
  void* ctx = nullptr;
};
thread_local Observer t_observer;

// Destroying the last reference to a long chain of nodes would recurse once per node and overflow
// the stack (a 100,000-op chain). Nodes instead hand their children to this per-thread list, and
// the outermost destructor releases them one by one.
thread_local bool t_releasing = false;
thread_local std::vector<std::shared_ptr<Node>> t_pending;

void drain_pending() {
  if (t_releasing) return;
  t_releasing = true;
  while (!t_pending.empty()) {
    std::shared_ptr<Node> n = std::move(t_pending.back());
    t_pending.pop_back();
    n.reset();  // may push more
  }
  t_releasing = false;
}

TensorMeta meta_of(const Tensor& t) {
  if (!t.defined()) return {};
  return {t.shape(), t.dtype(), t.device()};
}

// Every recorded node carries the precision it ran in.
void tag(Node& node, const TensorList& outputs) {
  AmpTag& tag = node.amp;
  const DeviceType device = outputs.empty() ? DeviceType::CPU : outputs[0].device().type;
  tag.compute_dtype = outputs.empty() ? DType::F32 : outputs[0].dtype();
  tag.autocast_enabled = amp::is_autocast_enabled(device);
  tag.autocast_dtype = amp::get_autocast_dtype(device);
  const std::optional<amp::CastPolicy> policy = amp::active_op_policy();
  tag.policy = policy ? amp::policy_name(*policy) : (tag.autocast_enabled ? "none" : "off");
  tag.scope = amp::current_scope_name();
}
}  // namespace

Node::Node() : sequence_nr(g_sequence.fetch_add(1, std::memory_order_relaxed)) {}

Node::~Node() {
  for (auto& e : next_edges)
    if (e.fn) t_pending.push_back(std::move(e.fn));
  drain_pending();
}

static std::atomic<size_t> g_saved_bytes{0};
static std::atomic<size_t> g_peak_saved_bytes{0};

SavedTensor::SavedTensor(const Tensor& t, bool is_output) : is_output_(is_output) {
  if (!t.defined()) return;
  version_ = t.version();
  output_nr_ = t.impl()->output_nr;
  requires_grad_ = t.requires_grad();
  data_ = is_output ? t.detach() : t;
  if (!(t.is_leaf() && t.requires_grad())) {
    counted_bytes_ = t.nbytes();
    size_t now = g_saved_bytes.fetch_add(counted_bytes_, std::memory_order_relaxed) + counted_bytes_;
    size_t peak = g_peak_saved_bytes.load(std::memory_order_relaxed);
    while (now > peak && !g_peak_saved_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
}

SavedTensor::SavedTensor(SavedTensor&& o) noexcept
    : data_(std::move(o.data_)),
      version_(o.version_),
      output_nr_(o.output_nr_),
      is_output_(o.is_output_),
      requires_grad_(o.requires_grad_),
      released_(o.released_),
      counted_bytes_(o.counted_bytes_) {
  o.counted_bytes_ = 0;
}

SavedTensor::~SavedTensor() { g_saved_bytes.fetch_sub(counted_bytes_, std::memory_order_relaxed); }

void SavedTensor::release() {
  data_ = Tensor();
  released_ = true;
  g_saved_bytes.fetch_sub(counted_bytes_, std::memory_order_relaxed);
  counted_bytes_ = 0;
}

size_t saved_tensor_bytes() { return g_saved_bytes.load(std::memory_order_relaxed); }
size_t peak_saved_tensor_bytes() { return g_peak_saved_bytes.load(std::memory_order_relaxed); }
void reset_peak_saved_tensor_bytes() { g_peak_saved_bytes.store(g_saved_bytes.load()); }

Tensor SavedTensor::unpack(const std::shared_ptr<Node>& owner, const std::string& owner_name) const {
  if (released_)
    MINIDL_FAIL(owner_name,
                "trying to backward through the graph a second time (or to access saved tensors after "
                "they were freed). Saved values are freed by backward(); pass retain_graph=true to "
                "backward through the graph a second time");
  if (!data_.defined()) return Tensor();
  if (data_.version() != version_)
    MINIDL_FAIL(owner_name,
                "one of the variables needed for gradient computation has been modified by an inplace "
                "operation: [", data_.meta_str(), "] is at version ", data_.version(), "; expected version ",
                version_, " instead");
  if (!is_output_) return data_;
  // Re-attach the saved output to its node so that create_graph can differentiate through it.
  auto impl = std::make_shared<TensorImpl>(*data_.impl());
  impl->grad_fn = owner;
  impl->output_nr = output_nr_;
  impl->requires_grad = requires_grad_;
  return Tensor(std::move(impl));
}

std::shared_ptr<Node> SavedTensor::steal_grad_fn() {
  if (!data_.defined() || data_.impl_ptr().use_count() != 1) return nullptr;
  return std::move(data_.impl()->grad_fn);
}

FunctionNode::~FunctionNode() {
  for (auto& s : saved)
    if (auto fn = s.steal_grad_fn()) t_pending.push_back(std::move(fn));
}

TensorList FunctionNode::apply(TensorList&& grads) {
  std::shared_ptr<Node> me = self.lock();
  TensorList values;
  values.reserve(saved.size());
  for (auto& s : saved) values.push_back(s.unpack(me, op_name));
  return backward(grads, values);
}

void FunctionNode::release_saved() {
  for (auto& s : saved) s.release();
}

bool needs_grad(std::initializer_list<Tensor> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

bool needs_grad(const TensorList& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Edge gradient_edge(const Tensor& t) {
  TensorImpl* impl = t.impl();
  if (impl->grad_fn) return {impl->grad_fn, impl->output_nr};
  std::shared_ptr<Node> acc = impl->grad_accumulator.lock();
  if (!acc) {
    auto a = std::make_shared<AccumulateGrad>();
    a->leaf = t.impl_ptr();
    a->input_meta.push_back(meta_of(t));
    a->output_meta.push_back(meta_of(t));
    impl->grad_accumulator = a;
    acc = a;
  }
  return {acc, 0};
}

std::shared_ptr<FunctionNode> record(const char* op_name, const TensorList& inputs, const TensorList& outputs,
                                     std::vector<Saved> saved, BackwardFn backward) {
  if (!needs_grad(inputs)) {
    if (AnomalyMode::is_enabled()) check_forward_outputs(op_name, nullptr, inputs, outputs);
    return nullptr;
  }
  auto node = std::make_shared<FunctionNode>();
  node->op_name = op_name;
  node->self = node;
  node->next_edges.reserve(inputs.size());
  for (const Tensor& in : inputs) {
    bool differentiable = in.defined() && in.requires_grad();
    node->next_edges.push_back(differentiable ? gradient_edge(in) : Edge{});
    node->input_meta.push_back(meta_of(in));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    node->output_meta.push_back(meta_of(outputs[i]));
    // An integer or bool output (a custom function's argmax, say) is not differentiable: it stays
    // a leaf without requires_grad, as PyTorch's; its gradient slot reaches backward as zeros.
    if (!is_floating(outputs[i].dtype())) continue;
    TensorImpl* o = outputs[i].impl();
    o->grad_fn = node;
    o->output_nr = static_cast<uint32_t>(i);
    o->requires_grad = true;
  }
  node->saved.reserve(saved.size());
  for (auto& s : saved) node->saved.emplace_back(s.tensor, s.is_output);
  node->backward = std::move(backward);
  tag(*node, outputs);
  if (AnomalyMode::is_enabled()) check_forward_outputs(op_name, node.get(), inputs, outputs);
  if (t_observer.fn) t_observer.fn(t_observer.ctx, *node, outputs);
  return node;
}

void set_node_observer(NodeObserver observer, void* ctx) { t_observer = {observer, ctx}; }

}  // namespace minidl::autograd

namespace minidl {

// Tensor's graph methods live with the graph.
void Tensor::retain_grad() {
  MINIDL_CHECK(requires_grad(), "retain_grad", "can't retain_grad on a tensor that has requires_grad=false (",
               meta_str(), ")");
  if (is_leaf()) return;  // leaves keep .grad anyway
  if (impl()->retains_grad) return;
  impl()->retains_grad = true;
  impl()->grad_fn->retained.emplace_back(impl()->output_nr, impl_ptr());
}

void Tensor::register_hook(GradHook hook) {
  MINIDL_CHECK(requires_grad(), "register_hook", "cannot register a hook on a tensor that doesn't require gradient");
  if (is_leaf()) impl()->hooks.push_back(std::move(hook));
  else impl()->grad_fn->pre_hooks.emplace_back(impl()->output_nr, std::move(hook));
}

uint64_t Tensor::register_post_accumulate_grad_hook(PostAccumulateGradHook hook) {
  MINIDL_CHECK(requires_grad(), "register_post_accumulate_grad_hook",
               "cannot register a hook on a tensor that doesn't require gradient");
  MINIDL_CHECK(is_leaf(), "register_post_accumulate_grad_hook",
               "post accumulate grad hooks cannot be registered on non-leaf tensors");
  static std::atomic<uint64_t> next_id{1};
  const uint64_t id = next_id++;
  impl()->post_accumulate_hooks.emplace_back(id, std::move(hook));
  return id;
}

void Tensor::remove_post_accumulate_grad_hook(uint64_t id) {
  auto& hooks = impl()->post_accumulate_hooks;
  std::erase_if(hooks, [id](const auto& h) { return h.first == id; });
}

}  // namespace minidl
