// InstanceNorm1d / InstanceNorm2d as torch.nn's: each (sample, channel) normalized over its own
// spatial elements (ops/nn_ops.h instance_norm). PyTorch's defaults: no affine weight and bias, no
// running statistics; with track_running_stats, evaluation uses the running statistics (and
// `running_mean`, `running_var`, `num_batches_tracked` are in the state dict, the count staying 0
// as PyTorch's). An unbatched input ([C, L] or [C, H, W]) is taken as a batch of one.
#pragma once
#include <string>

#include "nn/module.h"

namespace minidl::nn {

class InstanceNorm : public Layer {
 public:
  InstanceNorm(int64_t features, int spatial_dims, double eps = 1e-5, double momentum = 0.1, bool affine = false,
               bool track_running_stats = false);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;  // "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, ...)"
  std::string type_name() const override { return spatial_dims_ == 1 ? "InstanceNorm1d" : "InstanceNorm2d"; }
  ModulePtr clone_structure() const override;

  Tensor weight, bias, running_mean, running_var, num_batches_tracked;  // undefined when not kept

 private:
  int64_t features_;
  int spatial_dims_;
  double eps_, momentum_;
  bool track_running_stats_;
};
struct InstanceNorm1d : InstanceNorm {
  explicit InstanceNorm1d(int64_t features, double eps = 1e-5, double momentum = 0.1, bool affine = false,
                          bool track_running_stats = false)
      : InstanceNorm(features, 1, eps, momentum, affine, track_running_stats) {}
};
struct InstanceNorm2d : InstanceNorm {
  explicit InstanceNorm2d(int64_t features, double eps = 1e-5, double momentum = 0.1, bool affine = false,
                          bool track_running_stats = false)
      : InstanceNorm(features, 2, eps, momentum, affine, track_running_stats) {}
};

}  // namespace minidl::nn
