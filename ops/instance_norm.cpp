// instance_norm as torch.nn.functional's: each (sample, channel) normalized over its own spatial
// elements. As PyTorch computes it: the batch folded into the channels ([N, C, *] -> [1, N C, *]),
// batch_norm with the weight, bias and running statistics repeated per sample, and the updated
// running statistics averaged back over the samples. Differentiable through batch_norm; no autocast
// row (on none of PyTorch's lists): a bf16 input is normalized by batch norm's bf16 path.
#include "ops/common.h"
#include "ops/nn_ops.h"

namespace minidl {

using namespace ops_detail;

Tensor instance_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                     const Tensor& bias, bool use_input_stats, double momentum, double eps) {
  check_defined(x, "instance_norm", "input");
  MINIDL_CHECK(x.dim() >= 3, "instance_norm", "expected an input of at least 3 dims [N, C, *] (got ", x.meta_str(), ")");
  MINIDL_CHECK(running_mean.defined() == running_var.defined(), "instance_norm",
               "expected both running_mean and running_var, or neither");
  const int64_t n = x.size(0), c = x.size(1);
  if (use_input_stats) {
    int64_t spatial = 1;
    for (int64_t d = 2; d < x.dim(); ++d) spatial *= x.size(d);
    MINIDL_CHECK(spatial > 1, "instance_norm", "Expected more than 1 spatial element when training, got input size ",
                 shape_str(x.shape()));
  }
  auto per_sample = [n](const Tensor& t) { return t.defined() ? repeat(t, {n}) : Tensor(); };
  Shape folded = x.shape();
  folded[0] = 1;
  folded[1] = n * c;
  const Tensor mean_rep = per_sample(running_mean), var_rep = per_sample(running_var);
  const Tensor y = batch_norm(x.reshape(folded), mean_rep, var_rep, per_sample(weight), per_sample(bias), use_input_stats,
                              momentum, eps);
  if (running_mean.defined() && use_input_stats) {
    NoGradGuard no_grad;  // each sample's update, averaged: PyTorch's running statistics
    running_mean.copy_(mean(mean_rep.reshape({n, c}), {0}));
    running_var.copy_(mean(var_rep.reshape({n, c}), {0}));
  }
  return y.reshape(x.shape());
}

}  // namespace minidl
