// TensorDataset: a data set over two in-memory tensors whose first dim indexes the samples
// (torch.utils.data.TensorDataset with an input and a target tensor).
#pragma once
#include "data/dataset.h"

namespace minidl::data {

class TensorDataset : public Dataset {
 public:
  // Requires data.dim() >= 1, targets.dim() >= 1 and data.size(0) == targets.size(0). The tensors
  // are moved to the CPU and made contiguous once, here (shared, not copied, when they already are).
  TensorDataset(const Tensor& data, const Tensor& targets);

  int64_t size() const override { return data_.size(0); }
  Example get(int64_t index) const override;  // data[index], targets[index] (views)
  Batch get_batch(const std::vector<int64_t>& indices) const override;  // one memcpy per row

  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor data_, targets_;
};

}  // namespace minidl::data
