// InstanceNorm1d / InstanceNorm2d (nn/instance_norm.h).
#include "nn/instance_norm.h"

#include <typeinfo>

#include "framework/error.h"
#include "ops/nn_ops.h"
#include "ops/ops.h"

namespace minidl::nn {

InstanceNorm::InstanceNorm(int64_t features, int spatial_dims, double eps, double momentum, bool affine, bool track_running_stats)
    : features_(features), spatial_dims_(spatial_dims), eps_(eps), momentum_(momentum), track_running_stats_(track_running_stats) {
  MINIDL_CHECK(features > 0, type_name().c_str(), "num_features must be positive, got ", features);
  if (affine) {
    weight = register_parameter("weight", ones({features}));
    bias = register_parameter("bias", zeros({features}));
  }
  running_mean = register_buffer("running_mean", track_running_stats ? zeros({features}) : Tensor());
  running_var = register_buffer("running_var", track_running_stats ? ones({features}) : Tensor());
  num_batches_tracked = register_buffer("num_batches_tracked", track_running_stats ? zeros({}, DType::I64) : Tensor());
  zero_buffer_when_missing("num_batches_tracked");
}

Tensor InstanceNorm::forward(const Tensor& x) {
  auto scope = forward_scope();
  const int64_t batched = spatial_dims_ + 2;
  MINIDL_CHECK(x.dim() == batched || x.dim() == batched - 1, type_name().c_str(), "expected ", batched - 1, "D (unbatched) or ",
               batched, "D (batched) input, but got input of size: ", shape_str(x.shape()));
  const Tensor input = x.dim() == batched ? x : x.unsqueeze(0);
  MINIDL_CHECK(input.size(1) == features_, type_name().c_str(), "expected input's size at dim=", x.dim() == batched ? 1 : 0,
               " to match num_features (", features_, "), but got: ", input.size(1), ".");
  const bool use_input_stats = is_training() || !track_running_stats_;
  const Tensor y = instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum_, eps_);
  return x.dim() == batched ? y : y.squeeze(0);
}

std::string InstanceNorm::describe() const {
  return detail::concat(type_name(), "(", features_, ", eps=", eps_, ", momentum=", momentum_, ", affine=",
                        weight.defined() ? "True" : "False", ", track_running_stats=", track_running_stats_ ? "True" : "False", ")");
}

ModulePtr InstanceNorm::clone_structure() const {  // the same dynamic type: replicas are checked by type
  const bool affine = weight.defined(), track = track_running_stats_;
  if (typeid(*this) == typeid(InstanceNorm1d)) return std::make_shared<InstanceNorm1d>(features_, eps_, momentum_, affine, track);
  if (typeid(*this) == typeid(InstanceNorm2d)) return std::make_shared<InstanceNorm2d>(features_, eps_, momentum_, affine, track);
  return std::make_shared<InstanceNorm>(features_, spatial_dims_, eps_, momentum_, affine, track);
}

}  // namespace minidl::nn
