// torch.nn.utils.parameters_to_vector / vector_to_parameters: every parameter flattened into one
// 1-D tensor (in list order), and back.
#pragma once
#include <vector>

#include "ops/tensor.h"

namespace minidl::nn::utils {

// cat of each parameter flattened; all on one device (the error names the two devices, as PyTorch's).
Tensor parameters_to_vector(const std::vector<Tensor>& parameters);
// Copies consecutive slices of vec (1-D, exactly as many elements as the parameters) into the
// parameters, in place and without recording a graph (PyTorch replaces param.data).
void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& parameters);

}  // namespace minidl::nn::utils
