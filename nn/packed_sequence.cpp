// PackedSequence and its conversions: index bookkeeping on the host (lengths are host values in
// PyTorch too), the data moved by one index_select each way, so gradients flow through.
#include "nn/packed_sequence.h"

#include <algorithm>
#include <numeric>

#include "framework/error.h"
#include "ops/ops.h"

namespace minidl::nn::utils::rnn {

namespace {
const char* kPack = "pack_padded_sequence";

Tensor i64_tensor(const std::vector<int64_t>& v) { return from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}); }

// The sorted order: indices by decreasing length, equal lengths in their original order.
std::vector<int64_t> order_of(const std::vector<int64_t>& lengths, const Tensor& sorted_indices) {
  if (sorted_indices.defined()) return sorted_indices.to(Device::cpu()).to_vector<int64_t>();
  std::vector<int64_t> order(lengths.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  return order;
}

// Rows of a time-major [T, N, *] tensor, flattened to [T * N, *], gathered or scattered by index.
Tensor time_major(const Tensor& input, bool batch_first) { return batch_first ? input.transpose(0, 1) : input; }
}  // namespace

std::vector<int64_t> PackedSequence::lengths() const {
  const std::vector<int64_t> sizes = batch_sizes.to_vector<int64_t>();
  const int64_t n = sizes.empty() ? 0 : sizes[0];
  std::vector<int64_t> sorted_lengths(static_cast<size_t>(n), 0);
  for (int64_t bs : sizes)
    for (int64_t j = 0; j < bs; ++j) ++sorted_lengths[static_cast<size_t>(j)];
  if (!sorted_indices.defined()) return sorted_lengths;
  const std::vector<int64_t> order = sorted_indices.to(Device::cpu()).to_vector<int64_t>();
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (size_t j = 0; j < order.size(); ++j) out[static_cast<size_t>(order[j])] = sorted_lengths[j];
  return out;
}

PackedSequence pack_in_order(const Tensor& input, const std::vector<int64_t>& lengths, const Tensor& sorted_indices) {
  const int64_t T = input.size(0), N = input.size(1);
  const std::vector<int64_t> order = order_of(lengths, sorted_indices);
  const int64_t longest = lengths.empty() ? 0 : lengths[static_cast<size_t>(order[0])];
  std::vector<int64_t> rows, batch_sizes;
  for (int64_t t = 0; t < longest; ++t) {
    int64_t running = 0;
    for (int64_t n : order) {
      if (lengths[static_cast<size_t>(n)] <= t) break;  // sorted: the rest are shorter
      rows.push_back(t * N + n);
      ++running;
    }
    batch_sizes.push_back(running);
  }
  Shape flat_shape = input.shape();
  flat_shape.erase(flat_shape.begin());
  flat_shape[0] = T * N;
  PackedSequence p;
  p.data = index_select(input.reshape(flat_shape), 0, i64_tensor(rows).to(input.device()));
  p.batch_sizes = i64_tensor(batch_sizes);
  if (sorted_indices.defined()) {
    p.sorted_indices = sorted_indices;
    std::vector<int64_t> inverse(order.size());
    for (size_t j = 0; j < order.size(); ++j) inverse[static_cast<size_t>(order[j])] = static_cast<int64_t>(j);
    p.unsorted_indices = i64_tensor(inverse).to(sorted_indices.device());
  }
  return p;
}

PackedSequence pack_padded_sequence(const Tensor& input_arg, const std::vector<int64_t>& lengths, bool batch_first,
                                    bool enforce_sorted) {
  MINIDL_CHECK(input_arg.defined() && input_arg.dim() >= 2, kPack, "expected an input of at least 2 dims [T, N, *], got ",
               input_arg.defined() ? input_arg.meta_str() : std::string("none"));
  const Tensor input = time_major(input_arg, batch_first);
  const int64_t T = input.size(0), N = input.size(1);
  MINIDL_CHECK(static_cast<int64_t>(lengths.size()) == N, kPack, "expected ", N, " lengths (the batch size), got ", lengths.size());
  for (int64_t len : lengths) {
    MINIDL_CHECK(len > 0, kPack, "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0");
    MINIDL_CHECK(len <= T, kPack, "a length of ", len, " exceeds the sequences' ", T, " steps");
  }
  Tensor sorted;
  if (enforce_sorted) {
    MINIDL_CHECK(std::is_sorted(lengths.rbegin(), lengths.rend()), kPack,
                 "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
                 "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement if you "
                 "do not need ONNX exportability.");
  } else {
    std::vector<int64_t> order(lengths.size());
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return lengths[static_cast<size_t>(a)] > lengths[static_cast<size_t>(b)]; });
    sorted = i64_tensor(order).to(input.device());
  }
  return pack_in_order(input, lengths, sorted);
}

PackedSequence pack_padded_sequence(const Tensor& input, const Tensor& lengths, bool batch_first, bool enforce_sorted) {
  MINIDL_CHECK(lengths.defined() && lengths.dim() == 1 && !lengths.is_floating_point(), kPack,
               "lengths must be a 1-D integer tensor, got ", lengths.defined() ? lengths.meta_str() : std::string("none"));
  return pack_padded_sequence(input, cast(lengths, DType::I64).to(Device::cpu()).to_vector<int64_t>(), batch_first,
                              enforce_sorted);
}

PaddedSequence pad_packed_sequence(const PackedSequence& s, bool batch_first, double padding_value,
                                   std::optional<int64_t> total_length) {
  const char* op = "pad_packed_sequence";
  MINIDL_CHECK(s.data.defined() && s.batch_sizes.defined(), op, "the sequence has no data or batch_sizes");
  const std::vector<int64_t> lengths = s.lengths();
  const int64_t N = static_cast<int64_t>(lengths.size()), longest = s.batch_sizes.numel();
  const int64_t T = total_length.value_or(longest);
  MINIDL_CHECK(T >= longest, op, "Expected total_length to be at least the length of the longest sequence (", longest,
               "), but got total_length=", T);
  // Every slot (t, n) of the padded [T, N, *] reads a row of data, or the appended padding row.
  const std::vector<int64_t> order = order_of(lengths, s.sorted_indices);
  const int64_t pad_row = s.data.size(0);
  std::vector<int64_t> source(static_cast<size_t>(T * N), pad_row);
  const std::vector<int64_t> sizes = s.batch_sizes.to_vector<int64_t>();
  int64_t row = 0;
  for (int64_t t = 0; t < longest; ++t)
    for (int64_t j = 0; j < sizes[static_cast<size_t>(t)]; ++j) source[static_cast<size_t>(t * N + order[static_cast<size_t>(j)])] = row++;
  Shape row_shape = s.data.shape();
  row_shape[0] = 1;
  const Tensor rows = cat({s.data, full(row_shape, padding_value, TensorOptions(s.data.dtype()).device(s.data.device()))}, 0);
  Shape padded_shape = s.data.shape();
  padded_shape.erase(padded_shape.begin());
  padded_shape.insert(padded_shape.begin(), {T, N});
  Tensor padded = index_select(rows, 0, i64_tensor(source).to(s.data.device())).reshape(padded_shape);
  return {batch_first ? padded.transpose(0, 1) : padded, i64_tensor(lengths)};
}

Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first, double padding_value) {
  const char* op = "pad_sequence";
  MINIDL_CHECK(!sequences.empty(), op, "received an empty list of sequences");
  int64_t longest = 0;
  for (const Tensor& t : sequences) {
    MINIDL_CHECK(t.defined() && t.dim() >= 1, op, "every sequence must have at least one dim [L, *], got ",
                 t.defined() ? t.meta_str() : std::string("none"));
    MINIDL_CHECK(Shape(t.shape().begin() + 1, t.shape().end()) == Shape(sequences[0].shape().begin() + 1, sequences[0].shape().end()) &&
                     t.dtype() == sequences[0].dtype() && t.device() == sequences[0].device(),
                 op, "the sequences must share their trailing shape, dtype and device, got ", sequences[0].meta_str(), " and ",
                 t.meta_str());
    longest = std::max(longest, t.size(0));
  }
  std::vector<Tensor> columns;
  for (const Tensor& t : sequences) {
    Shape fill = t.shape();
    fill[0] = longest - t.size(0);
    columns.push_back(cat({t, full(fill, padding_value, TensorOptions(t.dtype()).device(t.device()))}, 0));
  }
  return stack(columns, batch_first ? 0 : 1);
}

PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted) {
  std::vector<int64_t> lengths;
  for (const Tensor& t : sequences) lengths.push_back(t.defined() && t.dim() >= 1 ? t.size(0) : 0);
  return pack_padded_sequence(pad_sequence(sequences), lengths, false, enforce_sorted);
}

}  // namespace minidl::nn::utils::rnn
