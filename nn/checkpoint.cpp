// Activation checkpointing over autograd::apply_function: the forward runs there with recording
// off; the node's backward recomputes under the saved autocast and generator states and runs a
// nested backward from the recomputed outputs.
#include "nn/checkpoint.h"

#include <atomic>
#include <memory>

#include "autocast/state.h"
#include "autograd/engine.h"
#include "autograd/function.h"
#include "framework/error.h"
#include "framework/grad_mode.h"
#include "framework/warning.h"

namespace minidl::nn::utils {

namespace {
// What the forward saw, for the recompute.
struct ForwardState {
  amp::ThreadState autocast;
  std::vector<Generator*> generators;             // the default one first when preserved
  std::vector<std::vector<uint64_t>> rng_states;  // theirs, in the same order
};

// Sets the generators to the forward's states for its lifetime, then puts back what they had.
class GeneratorRewind {
 public:
  explicit GeneratorRewind(const ForwardState& s) : generators_(s.generators) {
    for (size_t i = 0; i < generators_.size(); ++i) {
      now_.push_back(generators_[i]->state());
      generators_[i]->set_state(s.rng_states[i]);
    }
  }
  ~GeneratorRewind() {
    for (size_t i = 0; i < generators_.size(); ++i) generators_[i]->set_state(now_[i]);
  }
  GeneratorRewind(const GeneratorRewind&) = delete;
  GeneratorRewind& operator=(const GeneratorRewind&) = delete;

 private:
  std::vector<Generator*> generators_;
  std::vector<std::vector<uint64_t>> now_;
};
}  // namespace

TensorList checkpoint(const CheckpointFunction& fn, const TensorList& inputs, const CheckpointOptions& o) {
  MINIDL_CHECK(static_cast<bool>(fn), "checkpoint", "the function is empty");
  bool any_requires_grad = false;
  for (const Tensor& t : inputs) any_requires_grad = any_requires_grad || (t.defined() && t.requires_grad());
  if (!any_requires_grad && GradMode::is_enabled()) {
    static std::atomic<bool> warned{false};  // once per process, as Python's default filter
    if (!warned.exchange(true)) warn("checkpoint: None of the inputs have requires_grad=True. Gradients will be None");
  }
  auto state = std::make_shared<ForwardState>();
  state->autocast = amp::capture_thread_state();
  state->autocast.grad_enabled = true;
  if (o.preserve_rng_state_) state->generators.push_back(&default_generator());
  for (Generator* g : o.generators_) {
    MINIDL_CHECK(g != nullptr, "checkpoint", "a generator in the options is null");
    state->generators.push_back(g);
  }
  for (Generator* g : state->generators) state->rng_states.push_back(g->state());

  auto forward = [&fn](autograd::FunctionCtx& ctx, const TensorList& in) {
    ctx.save_for_backward(in);
    return fn(in);
  };
  auto backward = [fn, state](autograd::FunctionCtx& ctx, const TensorList& grads) {
    MINIDL_CHECK(!autograd::in_grad_call(), "checkpoint", "Checkpointing is not compatible with autograd::grad(): "
                 "its backward accumulates into the parameters' .grad; use backward()");
    MINIDL_CHECK(!GradMode::is_enabled(), "checkpoint", "a backward with create_graph cannot go through a checkpoint");
    TensorList leaves;
    for (const Tensor& t : ctx.saved_tensors())
      leaves.push_back(t.defined() ? t.detach().requires_grad_(t.requires_grad()) : Tensor());
    TensorList outputs;
    {
      amp::ThreadStateGuard autocast(state->autocast);  // grad on, autocast as in the forward
      GeneratorRewind rewind(*state);
      outputs = fn(leaves);
    }
    MINIDL_CHECK(outputs.size() == grads.size(), "checkpoint", "the function returned ", outputs.size(),
                 " outputs when recomputed, ", grads.size(), " in the forward");
    TensorList roots, root_grads;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (!outputs[i].defined() || !outputs[i].requires_grad() || !grads[i].defined()) continue;
      roots.push_back(outputs[i]);
      root_grads.push_back(grads[i]);
    }
    if (!roots.empty()) autograd::backward(roots, root_grads);
    TensorList input_grads;
    for (const Tensor& leaf : leaves) input_grads.push_back(leaf.defined() && leaf.requires_grad() ? leaf.grad() : Tensor());
    return input_grads;
  };
  return autograd::apply_function("CheckpointFunctionBackward", inputs, forward, backward);
}

Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input, const CheckpointOptions& o) {
  MINIDL_CHECK(static_cast<bool>(fn), "checkpoint", "the function is empty");
  // fn by value: the backward runs it again after this call has returned.
  return checkpoint([fn](const TensorList& in) { return TensorList{fn(in[0])}; }, TensorList{input}, o)[0];
}

Tensor checkpoint_sequential(const Sequential& functions, int64_t segments, const Tensor& input, const CheckpointOptions& o) {
  const auto count = static_cast<int64_t>(functions.size());
  MINIDL_CHECK(segments >= 1, "checkpoint_sequential", "segments must be at least 1, got ", segments);
  const int64_t segment_size = count / segments;
  // Modules [begin, end) in order.
  auto run = [&functions](int64_t begin, int64_t end) {
    return [&functions, begin, end](const Tensor& x) {
      Tensor y = x;
      for (int64_t i = begin; i < end; ++i) y = functions[static_cast<size_t>(i)](y);
      return y;
    };
  };
  Tensor x = input;
  int64_t start = 0;
  for (int64_t s = 0; s + 1 < segments && segment_size > 0; ++s, start += segment_size)
    x = checkpoint(run(start, start + segment_size), x, o);
  return run(start, count)(x);
}

}  // namespace minidl::nn::utils
