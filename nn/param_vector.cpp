// nn::utils::parameters_to_vector and vector_to_parameters.
#include "nn/param_vector.h"

#include "framework/error.h"
#include "framework/grad_mode.h"
#include "ops/ops.h"

namespace minidl::nn::utils {

namespace {
void check_same_device(const char* op, const std::vector<Tensor>& parameters, Device device) {
  for (const Tensor& p : parameters)
    MINIDL_CHECK(p.device() == device, op, "Found two parameters on different devices, this is currently not supported.",
                 " (", device.str(), " and ", p.device().str(), ")");
}
}  // namespace

Tensor parameters_to_vector(const std::vector<Tensor>& parameters) {
  MINIDL_CHECK(!parameters.empty(), "parameters_to_vector", "expected at least one parameter");
  check_same_device("parameters_to_vector", parameters, parameters[0].device());
  std::vector<Tensor> flat;
  for (const Tensor& p : parameters) flat.push_back(p.reshape({-1}));
  return cat(flat);
}

void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters) {
  const char* op = "vector_to_parameters";
  MINIDL_CHECK(vec.defined() && vec.dim() == 1, op, "expected vec to be a 1-D tensor, got ", vec.meta_str());
  int64_t total = 0;
  for (const Tensor& p : parameters) total += p.numel();
  MINIDL_CHECK(vec.numel() == total, op, "vec has ", vec.numel(), " elements but the parameters have ", total);
  check_same_device(op, parameters, vec.device());
  NoGradGuard ng;
  int64_t at = 0;
  for (const Tensor& p : parameters) {
    p.detach().copy_(vec.narrow(0, at, p.numel()).reshape(p.shape()));
    at += p.numel();
  }
}

}  // namespace minidl::nn::utils
