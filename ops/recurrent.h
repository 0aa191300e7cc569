// Recurrent cells and multi-layer recurrent sequences (torch.rnn_tanh_cell, rnn_relu_cell,
// lstm_cell, gru_cell and the sequence ops behind torch.nn.RNN/LSTM/GRU), with PyTorch's gate
// order and formulas (aten/src/ATen/native/RNN.cpp):
//   RNN   h' = tanh|relu(x W_ih^T + b_ih + h W_hh^T + b_hh)
//   LSTM  i, f, g, o = chunks of x W_ih^T + b_ih + h W_hh^T + b_hh (in that order)
//         c' = sigmoid(f) c + sigmoid(i) tanh(g),  h' = sigmoid(o) tanh(c')
//   GRU   r, z, n chunks of gi = x W_ih^T + b_ih and gh = h W_hh^T + b_hh
//         r = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z), n = tanh(gi_n + r gh_n),
//         h' = (h - n) z + n
// Composites of differentiable ops (linear, chunk, the activations), so every backward, also second
// order, is exact and every device that has the parts runs them. A sequence computes the input
// projections of all time steps in one product per layer and direction, then one h W_hh^T product
// per step.
// Autocast: LowerPrecision on CPU and CUDA for the cells and the sequences (PyTorch 2.x lists the
// four cells as lower precision on CUDA, and its CUDA (cuDNN) and CPU (oneDNN) RNN layers run in the
// autocast dtype). PyTorch 1.13's CPU autocast leaves LSTM, GRU, LSTMCell and GRUCell in f32.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "framework/generator.h"
#include "ops/tensor.h"

namespace minidl {

// ---- cells: input [N, I] (or unbatched [I]), hidden [N, H] ([H]); w_ih [G*H, I], w_hh [G*H, H],
// b_ih and b_hh [G*H] or undefined, with G = 1 (RNN), 4 (LSTM), 3 (GRU). Returns h' (LSTM: h', c').
Tensor rnn_tanh_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                     const Tensor& b_ih = Tensor(), const Tensor& b_hh = Tensor());
Tensor rnn_relu_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                     const Tensor& b_ih = Tensor(), const Tensor& b_hh = Tensor());
std::pair<Tensor, Tensor> lstm_cell(const Tensor& input, const Tensor& hx, const Tensor& cx, const Tensor& w_ih,
                                    const Tensor& w_hh, const Tensor& b_ih = Tensor(), const Tensor& b_hh = Tensor());
Tensor gru_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                const Tensor& b_ih = Tensor(), const Tensor& b_hh = Tensor());

// ---- sequences
enum class RecurrentMode { RNNTanh, RNNReLU, LSTM, GRU };
const char* recurrent_mode_name(RecurrentMode mode);  // "RNN_TANH", "RNN_RELU", "LSTM", "GRU"
int64_t recurrent_gate_count(RecurrentMode mode);     // G: 1, 1, 4, 3

// One layer and direction's weights (biases undefined for bias=False). w_hr [P, H], LSTM only:
// PyTorch's proj_size: h_t = (o * tanh(c_t)) W_hr^T has P < H features, w_hh is [4H, P] and the
// next layer's input D*P; undefined without projection.
struct RecurrentWeights {
  Tensor w_ih, w_hh, b_ih, b_hh, w_hr = {};
};

struct RecurrentOptions {
  int64_t num_layers = 1;
  double dropout = 0.0;       // on every layer's output but the last, when training
  bool training = false;
  bool bidirectional = false;
  bool batch_first = false;   // input and output [N, L, *] instead of [L, N, *]
  Generator* generator = nullptr;  // for the dropout; the default generator when null
  // Each batch element's own length (PyTorch's packed sequences; empty: all L steps). Element n
  // runs its first lengths[n] steps: the reverse direction starts at its own last step, its later
  // outputs are zeros and h_n (c_n) is its state after its last step. 1 <= lengths[n] <= L.
  std::vector<int64_t> lengths;
};

struct RecurrentResult {
  Tensor output;  // [L, N, D*H] ([N, L, D*H] batch first; [L, D*H] unbatched); D*P with a projection
  Tensor h_n;     // [D*num_layers, N, H] ([D*num_layers, H] unbatched); P features with a projection
  Tensor c_n;     // LSTM only, as h_n with H features
};

// input [L, N, I] ([N, L, I] batch first, or unbatched [L, I]); h0 (and c0 for LSTM) of h_n's shape,
// zeros when undefined; weights: num_layers * D entries (D = 2 when bidirectional), layer by layer,
// the forward direction before the reverse one, as PyTorch's _flat_weights. The reverse direction
// reads the sequence from its end, and its outputs sit at their own time steps in the last H
// features of each output row.
RecurrentResult recurrent(RecurrentMode mode, const Tensor& input, const Tensor& h0, const Tensor& c0,
                          const std::vector<RecurrentWeights>& weights, const RecurrentOptions& options = {});

}  // namespace minidl
