// Dataset: the interface every data set implements (a sized, indexable collection of examples), the
// Example/Batch records it hands out, and the row-gathering helper datasets use for fast batches.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ops/tensor.h"

namespace minidl::data {

// Which part of a data set with a fixed train/test division to load.
enum class Split { Train, Test };
inline const char* split_name(Split s) { return s == Split::Train ? "train" : "test"; }

// One sample: `data` is the input (e.g. f32 [1, 28, 28]), `target` its label (e.g. i64 0-dim).
// Samples with more parts (several inputs, a dict of tensors) put them in `fields` by name.
struct Example {
  Tensor data;
  Tensor target;
  std::map<std::string, Tensor> fields = {};  // "= {}": Batch{data, target} stays warning-free
};

// A batch: the samples stacked along a new first dim (f32 [B, ...] and e.g. i64 [B]), and each
// named field stacked the same way.
struct Batch {
  Tensor data;
  Tensor target;
  std::vector<int64_t> indices = {};  // dataset indices of the rows, in order (filled by DataLoader)
  std::map<std::string, Tensor> fields = {};  // "= {}": Batch{data, target} stays warning-free
  // Rows in the batch: of data, else of the first field.
  int64_t size() const;
};

// PyTorch's default_collate for minidl's samples: stacks data, target and every field along a new
// first dim (an undefined part stays undefined). Every sample must have the same field names, and
// each part the same shape and dtype across samples; a mismatch is an error naming the part.
Batch default_collate(const std::vector<Example>& samples);

// A sized, indexable data set. get() and get_batch() are const and must be safe to call from several
// threads at once (the DataLoader's workers do). Implementations hold their data in memory.
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // Requires 0 <= index < size(); throws minidl::Error otherwise.
  virtual Example get(int64_t index) const = 0;
  // The samples at `indices`, stacked. The default calls get() per index and stacks the results;
  // data sets override it with a direct copy of rows (no per-sample tensors).
  virtual Batch get_batch(const std::vector<int64_t>& indices) const;
};

// Throws minidl::Error naming `who` when index is outside [0, size).
void check_index(int64_t index, int64_t size, const char* who);

// Rows `indices` (along dim 0) of a contiguous CPU tensor, copied into a new tensor of shape
// [indices.size(), source.shape()[1:]...]; one memcpy per row. Checks every index.
Tensor gather_rows(const Tensor& source, const std::vector<int64_t>& indices, const char* who);

// Rows `indices` of a u8 image tensor [N, C, ...] (contiguous, CPU), each byte v of channel c mapped
// through luts[c * 256 + v], into a new f32 tensor [indices.size(), C, ...]. Datasets use it to turn
// stored bytes into scaled (and optionally normalized) floats in one pass. Checks every index.
Tensor gather_rows_u8_to_f32(const Tensor& images, int64_t channels, const float* luts,
                             const std::vector<int64_t>& indices, const char* who);

// The 256-entry table mapping a byte v to (v / 255 - mean) / std.
void fill_byte_lut(float* lut, float mean, float std);

}  // namespace minidl::data
