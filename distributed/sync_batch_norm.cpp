// all_reduce_sum and convert_sync_batchnorm.
#include "distributed/sync_batch_norm.h"

#include "autograd/function.h"
#include "framework/error.h"
#include "nn/conv.h"
#include "ops/ops.h"

namespace minidl::dist {

namespace {
Tensor summed_over_ranks(const Tensor& t, const ProcessGroupPtr& group) {
  Tensor out = t.clone();
  group->allreduce({out})->wait();
  return out;
}
}  // namespace

Tensor all_reduce_sum(const Tensor& x, const ProcessGroupPtr& group) {
  MINIDL_CHECK(group != nullptr, "all_reduce_sum", "no process group was given");
  MINIDL_CHECK(x.defined(), "all_reduce_sum", "the input is an undefined tensor");
  const Shape shape = x.shape();
  const TensorOptions options = TensorOptions(x.dtype()).device(x.device());
  return autograd::apply_function(
      "AllReduceSum", {x},
      [group](autograd::FunctionCtx&, const autograd::TensorList& in) { return autograd::TensorList{summed_over_ranks(in[0], group)}; },
      [group, shape, options](autograd::FunctionCtx&, const autograd::TensorList& grads) {
        // A rank whose output got no gradient still takes part in the collective, with zeros.
        const Tensor g = grads[0].defined() ? grads[0] : zeros(shape, options);
        return autograd::TensorList{summed_over_ranks(g, group)};
      })[0];
}

int convert_sync_batchnorm(nn::Module& module, const ProcessGroupPtr& group) {
  MINIDL_CHECK(group != nullptr, "convert_sync_batchnorm", "no process group was given");
  if (group->size() == 1) return 0;
  int converted = 0;
  for (const nn::ModulePtr& m : module.modules()) {
    auto* bn = dynamic_cast<nn::BatchNorm*>(m.get());
    if (bn == nullptr) continue;
    bn->set_batch_stats_all_sum([group](const Tensor& t) { return all_reduce_sum(t, group); });
    ++converted;
  }
  return converted;
}

}  // namespace minidl::dist
