// Activation checkpointing (torch.utils.checkpoint, its reentrant form): a block's forward runs
// without recording a graph, keeping only its inputs; backward runs the block again, with the
// autocast state and random-number state the forward had, and back-propagates through that. Memory
// for saved activations drops to the block's inputs and outputs, for one more forward per step.
//
//   Tensor h = nn::utils::checkpoint([&](const Tensor& x) { return block->forward(x); }, x);
//   Tensor y = nn::utils::checkpoint_sequential(*seq, 2, x);  // all but the last segment checkpointed
//
// As PyTorch's reentrant checkpoint: at least one input must require grad (else a warning, and the
// block's parameters get no gradient); a backward through it accumulates into the block's parameters'
// .grad from inside the outer backward, so autograd::grad() and create_graph through it are refused.
// The recompute restores the default generator's state (preserve_rng_state) and any generators named
// in the options, so dropout draws the same masks; other state the block reads must not change
// between forward and backward. The function is copied; what it refers to (the modules, and for
// checkpoint_sequential the Sequential) must live until the backward has run.
#pragma once
#include <functional>
#include <vector>

#include "framework/generator.h"
#include "nn/container.h"
#include "ops/node.h"

namespace minidl::nn::utils {

using autograd::TensorList;

struct CheckpointOptions {
  bool preserve_rng_state_ = true;        // the default generator's state at the forward, for the recompute
  std::vector<Generator*> generators_;    // more generators the block draws from (e.g. a Dropout's own)

  CheckpointOptions& preserve_rng_state(bool b) { preserve_rng_state_ = b; return *this; }
  CheckpointOptions& generators(std::vector<Generator*> g) { generators_ = std::move(g); return *this; }
};

using CheckpointFunction = std::function<TensorList(const TensorList&)>;

// outputs = fn(inputs), checkpointed. Inputs that are undefined or do not require grad get no gradient.
TensorList checkpoint(const CheckpointFunction& fn, const TensorList& inputs, const CheckpointOptions& options = {});
Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input, const CheckpointOptions& options = {});

// torch.utils.checkpoint.checkpoint_sequential: the modules in `segments` runs of size / segments,
// each but the last checkpointed, the last run as usual.
Tensor checkpoint_sequential(const Sequential& functions, int64_t segments, const Tensor& input,
                             const CheckpointOptions& options = {});

}  // namespace minidl::nn::utils
