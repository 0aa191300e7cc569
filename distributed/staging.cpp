#include "distributed/staging.h"

#include "framework/error.h"
#include "framework/grad_mode.h"

namespace minidl::dist {

DType reduction_dtype(DType t) { return (t == DType::F16 || t == DType::BF16) ? DType::F32 : t; }

StagedTensor stage(const Tensor& t, DType buf_dtype) {
  if (t.dtype() == buf_dtype && t.is_contiguous()) return {t, t};
  NoGradGuard no_grad;
  Tensor buf = empty(t.shape(), TensorOptions(buf_dtype).device(t.device()));
  buf.copy_(t);
  return {t, buf};
}

void write_back(const StagedTensor& s) { write_back(s, s.buf); }

void write_back(const StagedTensor& s, const Tensor& result) {
  NoGradGuard no_grad;  // results are written into parameters too (broadcast)
  if (result.is_same(s.dst)) s.dst.bump_version();
  else s.dst.copy_(result);
}

void prepare_gather_outputs(std::vector<Tensor>& outputs, const Tensor& input, int size, const char* op) {
  if (outputs.empty())
    for (int r = 0; r < size; ++r)
      outputs.push_back(empty(input.shape(), TensorOptions(input.dtype()).device(input.device())));
  MINIDL_CHECK(static_cast<int>(outputs.size()) == size, op, "got ", outputs.size(), " outputs for ", size, " ranks");
  for (size_t r = 0; r < outputs.size(); ++r)
    MINIDL_CHECK(outputs[r].defined() && outputs[r].shape() == input.shape() && outputs[r].dtype() == input.dtype() &&
                     outputs[r].device() == input.device(),
                 op, "output ", r, " must be shaped, typed and placed as the input ", input.meta_str());
}

Tensor gather_buffer(const Tensor& input, int size) {
  return empty({static_cast<int64_t>(size) * input.numel()}, TensorOptions(input.dtype()).device(input.device()));
}

void split_gathered(const std::vector<Tensor>& outputs, const Tensor& gathered) {
  NoGradGuard no_grad;
  const int64_t numel = outputs.empty() ? 0 : outputs[0].numel();
  for (size_t r = 0; r < outputs.size(); ++r)
    outputs[r].copy_(gathered.narrow(0, static_cast<int64_t>(r) * numel, numel).view(outputs[r].shape()));
}

}  // namespace minidl::dist
