// Packed sequences against torch 1.13 (tests/torch_refs/packed_sequence.py): PyTorch's packed
// layout and order for an unsorted batch and the way back; a 2-layer bidirectional LSTM and a
// batch-first GRU over variable lengths (outputs, h_n, c_n, the packed output, gradients to the
// input and h0); pad_sequence; and that each sequence's result equals running it alone.
#include <catch2/catch.hpp>

#include "minidl.h"
#include "gradcheck.h"
#include "packed_sequence_torch_values.h"
#include "sine_operands.h"

using namespace minidl;
using namespace minidl::nn::utils::rnn;
using Catch::Contains;
using testing::check_printed_values;
using testing::cosine_weights;
using testing::sine_operand;

namespace {
const auto& want = torch_packed_sequence_values;
Tensor weighted(const Tensor& t) { return sum(mul(t, cosine_weights(t.shape()))); }
std::vector<double> as_doubles(const Tensor& t) { return cast(t, DType::F64).to_vector<double>(); }

void set_parameters(nn::Module& m) {
  m.to(DType::F64);
  NoGradGuard no_grad;
  int i = 0;
  for (const Tensor& p : m.parameters()) p.copy_(mul(sine_operand(10 + i++, p.shape()), 0.5));
}
}  // namespace

TEST_CASE("pack_padded_sequence and pad_packed_sequence: PyTorch's layout and order", "[rnn][packed]") {
  Tensor x = sine_operand(0, {4, 3, 2});
  PackedSequence p = pack_padded_sequence(x, std::vector<int64_t>{2, 4, 3}, false, false);
  check_printed_values(p.data, want().at("pack.data"));
  CHECK(as_doubles(p.batch_sizes) == want().at("pack.batch_sizes"));
  CHECK(as_doubles(p.sorted_indices) == want().at("pack.sorted_indices"));
  CHECK(as_doubles(p.unsorted_indices) == want().at("pack.unsorted_indices"));
  CHECK(p.lengths() == std::vector<int64_t>{2, 4, 3});
  PaddedSequence back = pad_packed_sequence(p, false, -1.0, 5);
  check_printed_values(back.padded, want().at("pad.value"));
  CHECK(as_doubles(back.lengths) == want().at("pad.lengths"));
  // Batch first and a lengths tensor give the same packing.
  PackedSequence q = pack_padded_sequence(x.transpose(0, 1), from_vector<int64_t>({2, 4, 3}, {3}), true, false);
  CHECK(testing::max_abs_diff(q.data, p.data) == 0.0);
  check_printed_values(pad_sequence({sine_operand(4, {3, 2}), sine_operand(5, {1, 2}), sine_operand(6, {2, 2})}, true, -1.0),
                       want().at("pad_sequence.value"));
  PackedSequence s = pack_sequence({sine_operand(4, {3, 2}), sine_operand(6, {2, 2})});
  CHECK(s.batch_sizes.to_vector<int64_t>() == std::vector<int64_t>{2, 2, 1});
  CHECK_FALSE(s.sorted_indices.defined());
  CHECK_THROWS_WITH(pack_padded_sequence(x, std::vector<int64_t>{2, 4, 3}), Contains("must be sorted in decreasing order"));
  CHECK_THROWS_WITH(pack_padded_sequence(x, std::vector<int64_t>{2, 0, 3}, false, false), Contains("has to be greater than 0"));
  CHECK_THROWS_WITH(pack_padded_sequence(x, std::vector<int64_t>{5, 4, 3}), Contains("a length of 5 exceeds the sequences' 4 steps"));
  CHECK_THROWS_WITH(pack_padded_sequence(x, std::vector<int64_t>{4, 3}), Contains("expected 3 lengths"));
  CHECK_THROWS_WITH(pad_packed_sequence(p, false, 0.0, 3), Contains("total_length to be at least the length of the longest sequence (4)"));
  CHECK_THROWS_WITH(pad_sequence({ones({2, 2}), ones({2, 3})}), Contains("share their trailing shape"));
}

TEST_CASE("LSTM and GRU over packed sequences match torch: outputs, states, gradients", "[rnn][packed]") {
  nn::LSTM lstm(nn::LSTMOptions(2, 3).num_layers(2).bidirectional(true));
  set_parameters(lstm);
  Tensor x = sine_operand(0, {4, 3, 2}).requires_grad_();
  Tensor h0 = sine_operand(1, {4, 3, 3}).requires_grad_(), c0 = sine_operand(2, {4, 3, 3});
  nn::PackedRecurrentResult r = lstm.forward_packed(pack_padded_sequence(x, std::vector<int64_t>{2, 4, 3}, false, false), h0, c0);
  check_printed_values(r.output.data, want().at("lstm.packed_data"));
  Tensor out = pad_packed_sequence(r.output).padded;
  check_printed_values(out, want().at("lstm.output"));
  check_printed_values(r.h_n, want().at("lstm.h_n"));
  check_printed_values(r.c_n, want().at("lstm.c_n"));
  add(add(weighted(out), weighted(r.h_n)), weighted(r.c_n)).backward();
  check_printed_values(x.grad(), want().at("lstm.grad_input"));
  check_printed_values(h0.grad(), want().at("lstm.grad_h0"));

  nn::GRU gru(nn::GRUOptions(2, 3).batch_first(true));
  set_parameters(gru);
  Tensor xb = sine_operand(3, {3, 4, 2}).requires_grad_();
  nn::PackedRecurrentResult g = gru.forward_packed(pack_padded_sequence(xb, std::vector<int64_t>{4, 2, 1}, true));
  Tensor gout = pad_packed_sequence(g.output, true).padded;
  check_printed_values(gout, want().at("gru.output"));
  check_printed_values(g.h_n, want().at("gru.h_n"));
  add(weighted(gout), weighted(g.h_n)).backward();
  check_printed_values(xb.grad(), want().at("gru.grad_input"));
}

TEST_CASE("A packed batch gives each sequence what running it alone gives; f64 gradients", "[rnn][packed]") {
  nn::LSTM lstm(nn::LSTMOptions(2, 3).bidirectional(true));
  set_parameters(lstm);
  const std::vector<int64_t> lengths{3, 1, 4};
  Tensor x = sine_operand(7, {4, 3, 2});
  nn::PackedRecurrentResult r = lstm.forward_packed(pack_padded_sequence(x, lengths, false, false));
  Tensor out = pad_packed_sequence(r.output).padded;
  for (int64_t n = 0; n < 3; ++n) {
    INFO("sequence " << n);
    const int64_t len = lengths[static_cast<size_t>(n)];
    RecurrentResult alone = lstm.forward(x.narrow(0, 0, len).select(1, n));  // unbatched [len, 2]
    CHECK(testing::max_abs_diff(out.narrow(0, 0, len).select(1, n), alone.output) < 1e-15);
    CHECK(testing::max_abs_diff(r.h_n.select(1, n), alone.h_n) < 1e-15);
    if (len < 4) CHECK(testing::max_abs_diff(out.narrow(0, len, 4 - len).select(1, n), zeros({4 - len, 6}, DType::F64)) == 0.0);
  }
  auto fn = [&](const std::vector<Tensor>& in) {
    nn::PackedRecurrentResult p = lstm.forward_packed(pack_padded_sequence(in[0], lengths, false, false));
    return add(sum(pad_packed_sequence(p.output).padded), sum(p.c_n));
  };
  CHECK(testing::check_gradients(fn, {sine_operand(8, {4, 3, 2}).requires_grad_()}, 1e-6, 1e-7) == "");
  CHECK_THROWS_WITH(lstm.forward_packed(pack_padded_sequence(ones({4, 3, 5}, DType::F64), lengths, false, false)),
                    Contains("input.size(-1) must be equal to input_size. Expected 2, got 5"));
}
