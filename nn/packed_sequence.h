// Variable-length sequences for the recurrent layers (torch.nn.utils.rnn): PackedSequence in
// PyTorch's layout, pack_padded_sequence / pad_packed_sequence, pad_sequence and pack_sequence.
// RNN, LSTM and GRU take a PackedSequence (forward_packed): each sequence runs its own number of
// steps (the reverse direction from its own end), and h_n is each one's state after its last step.
//
//   auto packed = nn::utils::rnn::pack_padded_sequence(padded, lengths, /*batch_first=*/true,
//                                                       /*enforce_sorted=*/false);
//   auto r = lstm->forward_packed(packed);               // r.output is packed, r.h_n [layers, N, H]
//   auto [out, out_lengths] = nn::utils::rnn::pad_packed_sequence(r.output, true);
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ops/tensor.h"

namespace minidl::nn::utils::rnn {

struct PackedSequence {
  // [sum(lengths), *]: step 0 of every sequence (longest first), then step 1 of those that have
  // one, and so on.
  Tensor data;
  Tensor batch_sizes;       // i64 [longest] on the CPU: how many sequences have each step
  Tensor sorted_indices;    // i64 [N]: the batch by decreasing length (stable); undefined when the input was sorted
  Tensor unsorted_indices;  // its inverse: where each original element sits in the sorted order
  // Each original element's length, in the original order (what pad_packed_sequence returns).
  std::vector<int64_t> lengths() const;
};

struct PaddedSequence {
  Tensor padded;   // [T, N, *] ([N, T, *] batch first), padding_value past each length
  Tensor lengths;  // i64 [N] on the CPU
};

// input [T, N, *] ([N, T, *] batch first) whose element n holds lengths[n] steps (1 <= lengths[n]
// <= T). enforce_sorted: lengths must not increase (PyTorch's ONNX-friendly default); otherwise
// the batch is sorted, and the order kept in sorted_indices. Differentiable in input.
PackedSequence pack_padded_sequence(const Tensor& input, const std::vector<int64_t>& lengths, bool batch_first = false,
                                    bool enforce_sorted = true);
PackedSequence pack_padded_sequence(const Tensor& input, const Tensor& lengths, bool batch_first = false,
                                    bool enforce_sorted = true);
// The inverse, in the original batch order; total_length (at least the longest) pads further.
PaddedSequence pad_packed_sequence(const PackedSequence& sequence, bool batch_first = false, double padding_value = 0.0,
                                   std::optional<int64_t> total_length = std::nullopt);
// Sequences [L_i, *] (same trailing shape and dtype) stacked into [max L, N, *] ([N, max L, *]).
Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first = false, double padding_value = 0.0);
PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted = true);

// pack_padded_sequence with a given order (sorted_indices, or undefined for the identity): the
// recurrent layers pack their outputs in their input's order.
PackedSequence pack_in_order(const Tensor& input, const std::vector<int64_t>& lengths, const Tensor& sorted_indices);

}  // namespace minidl::nn::utils::rnn
