#include "autograd/engine.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "autocast/state.h"
#include "framework/anomaly_mode.h"
#include "framework/grad_mode.h"
#include "framework/error.h"
#include "ops/anomaly.h"
#include "ops/ops.h"

namespace minidl::autograd {

namespace {
// MINIDL_TRACE_AUTOGRAD=1 prints each node as the engine runs it.
bool trace_enabled() {
  static const bool on = std::getenv("MINIDL_TRACE_AUTOGRAD") != nullptr;
  return on;
}

// The end-of-backward callbacks of the backward running on this thread (nullptr when none runs).
thread_local std::vector<std::function<void()>>* current_callbacks = nullptr;
// Whether the innermost run on this thread is a grad() call (it captures instead of accumulating).
thread_local bool current_run_captures = false;

// Installs a callback list for one run; restores the outer one (a backward inside a hook) on exit.
struct CallbackScope {
  std::vector<std::function<void()>> callbacks;
  std::vector<std::function<void()>>* outer;
  CallbackScope() : outer(current_callbacks) { current_callbacks = &callbacks; }
  ~CallbackScope() { current_callbacks = outer; }
  CallbackScope(const CallbackScope&) = delete;
  CallbackScope& operator=(const CallbackScope&) = delete;
  void run_all() {
    for (size_t i = 0; i < callbacks.size(); ++i) {  // a callback may queue more: index, not iterator
      std::function<void()> fn = std::move(callbacks[i]);
      fn();
    }
    callbacks.clear();
  }
};

struct BySequence {
  bool operator()(const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) const {
    return a->sequence_nr < b->sequence_nr;  // newest first
  }
};

// Calls on_edge(from, to) once for every edge reachable from the roots (iterative DFS, so deep
// graphs do not overflow the stack).
template <class F>
void for_each_edge(const std::vector<Edge>& roots, F on_edge) {
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (const Edge& e : roots)
    if (e.fn && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.fn) continue;
      on_edge(n, e.fn.get());
      if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  }
}

// Number of edges into each node reachable from the roots.
std::unordered_map<Node*, int> count_dependencies(const std::vector<Edge>& roots) {
  std::unordered_map<Node*, int> deps;
  for_each_edge(roots, [&](Node*, Node* to) { ++deps[to]; });
  return deps;
}

// For grad(): the nodes that must run to reach the captured edges, i.e. the strict ancestors of
// the capture nodes (as PyTorch's exec_info). Nothing else runs: no other hooks fire and no other
// node frees its saved tensors.
std::unordered_set<Node*> ancestors_of(const std::vector<Edge>& roots, const std::vector<Edge>& targets) {
  std::unordered_map<Node*, std::vector<Node*>> parents;
  for_each_edge(roots, [&](Node* from, Node* to) { parents[to].push_back(from); });
  std::vector<Node*> stack;
  std::unordered_set<Node*> needed;
  for (const Edge& t : targets) stack.push_back(t.fn.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (Node* p : parents[n])
      if (needed.insert(p).second) stack.push_back(p);
  }
  return needed;
}

void accumulate(Tensor& slot, const Tensor& g) { slot = slot.defined() ? add(slot, g) : g; }

// Runs a tensor hook: as PyTorch's, a hook may replace the gradient (an undefined result keeps it),
// not change its shape or dtype.
Tensor run_hook(const GradHook& hook, const Tensor& g) {
  Tensor r = hook(g);
  if (!r.defined()) return g;
  MINIDL_CHECK(r.shape() == g.shape(), "register_hook", "a hook has changed the size of the gradient (from ",
               shape_str(g.shape()), " to ", shape_str(r.shape()), ")");
  MINIDL_CHECK(r.dtype() == g.dtype(), "register_hook", "a hook has changed the type of the gradient (from ",
               dtype_name(g.dtype()), " to ", dtype_name(r.dtype()), ")");
  return r;
}

// A leaf's AccumulateGrad: runs the leaf's hooks, adds into its .grad, then runs its
// post-accumulate-grad hooks (on a copy of the list: a hook may remove itself).
void accumulate_into_leaf(const AccumulateGrad& acc, Tensor g, bool create_graph) {
  std::shared_ptr<TensorImpl> impl = acc.leaf.lock();
  if (!impl || !g.defined()) return;
  for (auto& hook : impl->hooks) g = run_hook(hook, g);
  if (!impl->grad) {
    if (create_graph) {
      impl->grad = g.impl_ptr();
    } else {
      // Keep the incoming buffer when nothing else can see it; otherwise copy so that later
      // in-place updates of .grad (unscale, clipping) cannot reach another tensor. Either way this
      // .grad is contiguous, whatever the leaf's layout (PyTorch lays it out as the leaf; README);
      // under create_graph it is the incoming gradient itself, in its own layout.
      bool unique = g.impl_ptr().use_count() <= 2 && g.impl()->storage.use_count() == 1 && g.is_contiguous();
      impl->grad = (unique ? g.detach() : g.detach().clone(MemoryFormat::Contiguous)).impl_ptr();
    }
  } else if (create_graph || impl->grad->requires_grad) {
    // Out of place, as PyTorch, when either graph must be kept: a .grad made by create_graph is
    // part of a graph (and may be held by the caller), so it is not updated in place.
    impl->grad = add(Tensor(impl->grad), g).impl_ptr();
  } else {
    Tensor(impl->grad).add_(g);
  }
  if (!impl->post_accumulate_hooks.empty()) {
    const Tensor leaf(impl);
    const auto hooks = impl->post_accumulate_hooks;
    for (const auto& [id, hook] : hooks) hook(leaf);
  }
}

// retain_grad() on non-leaf outputs of `node`: their .grad accumulates the gradient that arrives,
// after the tensor's own hooks ran (as PyTorch's retain_grad hook, which always runs last).
void retain_grads(const Node& node, const TensorList& grads) {
  for (const auto& [nr, weak] : node.retained)
    if (auto impl = weak.lock(); impl && grads[nr].defined()) {
      if (impl->grad) impl->grad = add(Tensor(impl->grad), grads[nr]).impl_ptr();
      else impl->grad = grads[nr].detach().clone(MemoryFormat::Contiguous).impl_ptr();
    }
}

// Checks a node's returned gradient against the forward input it belongs to, converting dtype
// (a Cast node's input may be f32 while the gradient arrives in f16) and naming the node on error.
// A gradient of a shape the input broadcasts to (a custom function's [1, 2] for a [2] input) is
// summed back to the input's shape, as PyTorch's validate_outputs (is_expandable_to, then sum_to).
Tensor validate(const Node& node, size_t i, Tensor g) {
  const TensorMeta& m = node.input_meta[i];
  if (g.shape() != m.shape && expandable_to(m.shape, g.shape())) g = sum_to(g, m.shape);
  MINIDL_CHECK(g.shape() == m.shape, node.name(), "returned a gradient of shape ", shape_str(g.shape()),
               " for input ", i, ", expected ", shape_str(m.shape));
  if (g.dtype() != m.dtype) g = cast(g, m.dtype);
  return g;
}

void run(const TensorList& roots, const TensorList& grad_roots, bool retain_graph, bool create_graph,
         const std::vector<Edge>* capture_edges, TensorList* captured) {
  MINIDL_CHECK(grad_roots.empty() || grad_roots.size() == roots.size(), "backward", "got ", grad_roots.size(),
               " gradients for ", roots.size(), " outputs");
  std::vector<Edge> root_edges;
  TensorList root_grads;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    MINIDL_CHECK(r.defined() && r.requires_grad(), "backward", "element ", i,
                 " of tensors does not require grad and does not have a grad_fn");
    Tensor g = grad_roots.empty() ? Tensor() : grad_roots[i];
    if (!g.defined()) {
      MINIDL_CHECK(r.numel() == 1, "backward", "grad can be implicitly created only for scalar outputs (got ",
                   r.meta_str(), ")");
      g = ones_like(r);
    }
    MINIDL_CHECK(g.shape() == r.shape(), "backward", "gradient of shape ", shape_str(g.shape()),
                 " does not match output of shape ", shape_str(r.shape()));
    root_edges.push_back(gradient_edge(r));
    root_grads.push_back(g.dtype() == r.dtype() ? g : cast(g, r.dtype()));
  }

  CallbackScope callback_scope;
  struct CaptureFlag {  // restores the outer run's flag (a backward inside a hook) on exit
    bool outer = current_run_captures;
    explicit CaptureFlag(bool captures) { current_run_captures = captures; }
    ~CaptureFlag() { current_run_captures = outer; }
  } capture_flag(capture_edges != nullptr);
  // Anomaly mode: every gradient a node returns is checked (after its dtype conversion, which can
  // overflow too); off, nothing is checked.
  const bool detect_anomaly = AnomalyMode::is_enabled();
  // As in PyTorch, where retain_graph defaults to create_graph: a graph built by create_graph
  // refers back into this one, so this one must survive.
  retain_graph = retain_graph || create_graph;
  amp::AutocastDisabled autocast_off;  // backward always runs with autocast off
  std::unique_ptr<NoGradGuard> no_grad;
  std::unique_ptr<EnableGradGuard> enable_grad;
  if (create_graph) enable_grad = std::make_unique<EnableGradGuard>();
  else no_grad = std::make_unique<NoGradGuard>();

  std::unordered_map<Node*, int> deps = count_dependencies(root_edges);
  std::unordered_set<Node*> needed, captures;
  if (capture_edges) {
    needed = ancestors_of(root_edges, *capture_edges);
    for (const Edge& e : *capture_edges) captures.insert(e.fn.get());
  }
  // Whether gradient flowing into fn is used: always for backward(), for grad() only on the way
  // to the inputs.
  auto wanted = [&](Node* fn) { return !capture_edges || needed.count(fn) || captures.count(fn); };
  std::unordered_map<Node*, TensorList> buffers;
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, BySequence> ready;
  std::unordered_set<Node*> queued;
  auto slot = [&](const Edge& e) -> Tensor& {
    TensorList& b = buffers[e.fn.get()];
    if (b.empty()) b.resize(e.fn->output_meta.size());
    return b[e.input_nr];
  };
  for (size_t i = 0; i < root_edges.size(); ++i) {
    accumulate(slot(root_edges[i]), root_grads[i]);
    if (deps[root_edges[i].fn.get()] == 0 && queued.insert(root_edges[i].fn.get()).second)
      ready.push(root_edges[i].fn);
  }

  while (!ready.empty()) {
    std::shared_ptr<Node> node = ready.top();
    ready.pop();
    TensorList grads = std::move(buffers[node.get()]);
    buffers.erase(node.get());
    grads.resize(node->output_meta.size());

    bool any = false;
    for (const Tensor& g : grads) any = any || g.defined();
    for (auto& [nr, hook] : node->pre_hooks)
      if (grads[nr].defined()) grads[nr] = run_hook(hook, grads[nr]);
    retain_grads(*node, grads);
    if (capture_edges)
      for (size_t c = 0; c < capture_edges->size(); ++c)
        if ((*capture_edges)[c].fn == node) {
          Tensor g = grads[(*capture_edges)[c].input_nr];
          if (!g.defined()) continue;
          // A leaf's hooks run in its AccumulateGrad, which grad() does not run: apply them here
          // (PyTorch runs an input's tensor hooks before capturing its gradient).
          if (auto* acc = dynamic_cast<AccumulateGrad*>(node.get()))
            if (auto leaf = acc->leaf.lock())
              for (auto& hook : leaf->hooks) g = run_hook(hook, g);
          accumulate((*captured)[c], g);
        }

    TensorList outs;
    bool is_accumulator = dynamic_cast<AccumulateGrad*>(node.get()) != nullptr;
    if (any && (!capture_edges || needed.count(node.get()))) {
      for (size_t i = 0; i < grads.size(); ++i)
        if (!grads[i].defined()) {
          const TensorMeta& m = node->output_meta[i];
          grads[i] = zeros(m.shape, TensorOptions(m.dtype).device(m.device));
        }
      if (trace_enabled()) std::fprintf(stderr, "[autograd] %s #%llu\n", node->name().c_str(), (unsigned long long)node->sequence_nr);
      if (is_accumulator) {
        accumulate_into_leaf(static_cast<const AccumulateGrad&>(*node), grads[0], create_graph);
      } else {
        std::optional<ForwardChecksOff> judged_by_node;  // its ops' results are this node's gradients
        if (detect_anomaly) judged_by_node.emplace();
        outs = node->apply(std::move(grads));
        if (!retain_graph) node->release_saved();
        MINIDL_CHECK(outs.size() == node->next_edges.size(), node->name(), "returned ", outs.size(),
                     " gradients, expected ", node->next_edges.size());
      }
    }
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.fn) continue;
      if (i < outs.size() && outs[i].defined() && wanted(e.fn.get())) {
        Tensor g = validate(*node, i, outs[i]);
        if (detect_anomaly) check_backward_output(*node, i, g);
        accumulate(slot(e), g);
      }
      if (--deps[e.fn.get()] == 0 && queued.insert(e.fn.get()).second) ready.push(e.fn);
    }
  }
  callback_scope.run_all();
}
}  // namespace

void queue_callback(std::function<void()> fn) {
  MINIDL_CHECK(current_callbacks != nullptr, "queue_callback", "final callbacks can only be installed during the backward pass");
  current_callbacks->push_back(std::move(fn));
}

bool in_backward() { return current_callbacks != nullptr; }
bool in_grad_call() { return current_callbacks != nullptr && current_run_captures; }

void backward(const TensorList& roots, const TensorList& grad_roots, bool retain_graph, bool create_graph) {
  run(roots, grad_roots, retain_graph, create_graph, nullptr, nullptr);
}

TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs,
                bool retain_graph, bool create_graph, bool allow_unused) {
  MINIDL_CHECK(!inputs.empty(), "grad", "grad requires non-empty inputs");
  std::vector<Edge> edges;
  for (size_t i = 0; i < inputs.size(); ++i) {
    MINIDL_CHECK(inputs[i].defined() && inputs[i].requires_grad(), "grad", "input ", i, " does not require grad");
    edges.push_back(gradient_edge(inputs[i]));
  }
  TensorList result(inputs.size());
  run(outputs, grad_outputs, retain_graph, create_graph, &edges, &result);
  for (size_t i = 0; i < result.size(); ++i)
    MINIDL_CHECK(allow_unused || result[i].defined(), "grad", "input ", i,
                 " appears to not have been used in the graph; pass allow_unused=true if this is intended");
  return result;
}

}  // namespace minidl::autograd
