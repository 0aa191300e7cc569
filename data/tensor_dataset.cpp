// TensorDataset: validation at construction, row views for get(), row copies for get_batch().
#include "data/tensor_dataset.h"

#include "framework/error.h"

namespace minidl::data {

namespace {
Tensor prepare(const Tensor& t, const char* what) {
  MINIDL_CHECK(t.defined(), "TensorDataset", what, " tensor is undefined");
  MINIDL_CHECK(t.dim() >= 1, "TensorDataset", what, " must have a sample dim (dim >= 1), got ",
               t.meta_str());
  Tensor c = t.device().is_cpu() ? t : t.to(Device::cpu());
  return c.detach().contiguous();
}
}  // namespace

TensorDataset::TensorDataset(const Tensor& data, const Tensor& targets)
    : data_(prepare(data, "data")), targets_(prepare(targets, "targets")) {
  MINIDL_CHECK(data_.size(0) == targets_.size(0), "TensorDataset",
               "data and targets must have the same number of samples (size of dim 0), got data ",
               data_.meta_str(), " and targets ", targets_.meta_str());
}

Example TensorDataset::get(int64_t index) const {
  check_index(index, size(), "TensorDataset::get");
  return Example{data_.select(0, index), targets_.select(0, index)};
}

Batch TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  return Batch{gather_rows(data_, indices, "TensorDataset::get_batch"),
               gather_rows(targets_, indices, "TensorDataset::get_batch"), indices};
}

}  // namespace minidl::data
