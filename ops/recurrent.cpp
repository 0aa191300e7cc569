// Recurrent cells and sequences (ops/recurrent.h): PyTorch's formulas in differentiable ops.
#include "ops/recurrent.h"

#include <string>

#include "ops/common.h"

namespace minidl {

using namespace ops_detail;

namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kRnnTanhCell{"rnn_tanh_cell", P::LowerPrecision, P::LowerPrecision};
const amp::OpPolicy kRnnReluCell{"rnn_relu_cell", P::LowerPrecision, P::LowerPrecision};
const amp::OpPolicy kLstmCell{"lstm_cell", P::LowerPrecision, P::LowerPrecision};
const amp::OpPolicy kGruCell{"gru_cell", P::LowerPrecision, P::LowerPrecision};
const amp::OpPolicy kRnnTanh{"rnn_tanh", P::LowerPrecision, P::LowerPrecision};
const amp::OpPolicy kRnnRelu{"rnn_relu", P::LowerPrecision, P::LowerPrecision};
const amp::OpPolicy kLstm{"lstm", P::LowerPrecision, P::LowerPrecision};
const amp::OpPolicy kGru{"gru", P::LowerPrecision, P::LowerPrecision};

const amp::OpPolicy& sequence_policy(RecurrentMode mode) {
  switch (mode) {
    case RecurrentMode::RNNTanh: return kRnnTanh;
    case RecurrentMode::RNNReLU: return kRnnRelu;
    case RecurrentMode::LSTM: return kLstm;
    case RecurrentMode::GRU: return kGru;
  }
  return kLstm;
}

// One time step from the two projections: xg = x W_ih^T + b_ih, hg = h W_hh^T + b_hh, both [N, G*H].
// Returns h' (and c' for the LSTM, through `c`).
Tensor step(RecurrentMode mode, const Tensor& xg, const Tensor& hg, const Tensor& h, Tensor& c) {
  switch (mode) {
    case RecurrentMode::RNNTanh: return tanh(add(xg, hg));
    case RecurrentMode::RNNReLU: return relu(add(xg, hg));
    case RecurrentMode::LSTM: {
      std::vector<Tensor> gates = chunk(add(xg, hg), 4, 1);  // input, forget, cell, output
      c = add(mul(sigmoid(gates[1]), c), mul(sigmoid(gates[0]), tanh(gates[2])));
      return mul(sigmoid(gates[3]), tanh(c));
    }
    case RecurrentMode::GRU: {
      std::vector<Tensor> gi = chunk(xg, 3, 1), gh = chunk(hg, 3, 1);  // reset, update, new
      Tensor r = sigmoid(add(gi[0], gh[0]));
      Tensor z = sigmoid(add(gi[1], gh[1]));
      Tensor n = tanh(add(gi[2], mul(r, gh[2])));
      return add(mul(sub(h, n), z), n);
    }
  }
  return Tensor();
}

void check_weights(const char* op, RecurrentMode mode, const Tensor& ref, int64_t input_size, const RecurrentWeights& w,
                   const std::string& where) {
  const int64_t G = recurrent_gate_count(mode);
  check_defined(w.w_ih, op, "w_ih");
  check_defined(w.w_hh, op, "w_hh");
  const bool projected = w.w_hr.defined();
  MINIDL_CHECK(!projected || mode == RecurrentMode::LSTM, op, where, "a projection (w_hr) is only supported for LSTM");
  if (projected) {
    MINIDL_CHECK(w.w_hr.dim() == 2 && w.w_ih.dim() == 2 && w.w_hr.size(1) * G == w.w_ih.size(0), op, where,
                 "w_hr must be [proj_size, hidden_size] with w_ih [", G, " * hidden_size, input_size], got ",
                 w.w_hr.meta_str(), " and ", w.w_ih.meta_str());
    MINIDL_CHECK(w.w_hh.dim() == 2 && w.w_hh.size(0) == w.w_ih.size(0) && w.w_hh.size(1) == w.w_hr.size(0), op, where,
                 "w_hh must be [", G, " * hidden_size, proj_size], got ", w.w_hh.meta_str());
  } else {
    MINIDL_CHECK(w.w_hh.dim() == 2 && w.w_hh.size(1) * G == w.w_hh.size(0), op, where, "w_hh must be [", G,
                 " * hidden_size, hidden_size], got ", w.w_hh.meta_str());
  }
  const int64_t H = w.w_hh.size(0) / G;
  MINIDL_CHECK(w.w_ih.dim() == 2 && w.w_ih.size(0) == G * H, op, where, "w_ih must be [", G * H, ", input_size], got ",
               w.w_ih.meta_str());
  MINIDL_CHECK(w.w_ih.size(1) == input_size, op, where, "input has inconsistent input_size: got ", input_size,
               ", expected ", w.w_ih.size(1));
  MINIDL_CHECK(w.b_ih.defined() == w.b_hh.defined(), op, where, "b_ih and b_hh must both be given or both be undefined");
  for (const Tensor* t : {&w.w_ih, &w.w_hh, &w.b_ih, &w.b_hh, &w.w_hr}) {
    if (!t->defined()) continue;
    check_same_device(op, ref, *t);
    MINIDL_CHECK(t->dtype() == ref.dtype(), op, where, "expected the weights in the input's dtype ", dtype_name(ref.dtype()),
                 ", got ", t->meta_str());
  }
  for (const Tensor* b : {&w.b_ih, &w.b_hh})
    if (b->defined())
      MINIDL_CHECK(b->dim() == 1 && b->size(0) == G * H, op, where, "biases must be [", G * H, "], got ", b->meta_str());
}

// hidden [N, H] of a cell against its input's batch.
void check_cell_hidden(const char* op, const Tensor& input, const Tensor& h, int64_t H, const char* name) {
  check_defined(h, op, name);
  check_same_device(op, input, h);
  MINIDL_CHECK(h.dtype() == input.dtype(), op, "expected ", name, " in the input's dtype ", dtype_name(input.dtype()),
               ", got ", h.meta_str());
  MINIDL_CHECK(h.dim() == input.dim(), op, "expected ", name, " with as many dims as the input (",
               input.dim(), "), got ", h.meta_str());
  if (input.dim() == 2)
    MINIDL_CHECK(h.size(0) == input.size(0), op, "Input batch size ", input.size(0), " doesn't match ", name,
                 " batch size ", h.size(0));
  MINIDL_CHECK(h.size(-1) == H, op, name, " has inconsistent hidden_size: got ", h.size(-1), ", expected ", H);
}

// The shared cell path: autocast, checks, unbatched inputs as a batch of one, one step.
std::pair<Tensor, Tensor> cell(RecurrentMode mode, const amp::OpPolicy& policy, const char* op, const Tensor& input_arg,
                               const Tensor& hx_arg, const Tensor& cx_arg, const RecurrentWeights& w_arg) {
  amp::AutocastInputs in(policy, {input_arg, hx_arg, cx_arg, w_arg.w_ih, w_arg.w_hh, w_arg.b_ih, w_arg.b_hh});
  const Tensor &input = in[0], &hx = in[1], &cx = in[2];
  const RecurrentWeights w{in[3], in[4], in[5], in[6]};
  check_defined(input, op, "input");
  check_floating(op, input);
  MINIDL_CHECK(input.dim() == 1 || input.dim() == 2, op, "Expected input to be 1-D or 2-D but received ", input.dim(),
               "-D tensor");
  check_weights(op, mode, input, input.size(-1), w, "");
  const int64_t H = w.w_hh.size(1);
  check_cell_hidden(op, input, hx, H, "hx");
  if (mode == RecurrentMode::LSTM) check_cell_hidden(op, input, cx, H, "cx");
  const bool unbatched = input.dim() == 1;
  auto batched = [&](const Tensor& t) { return unbatched && t.defined() ? t.unsqueeze(0) : t; };
  auto restored = [&](const Tensor& t) { return unbatched && t.defined() ? t.squeeze(0) : t; };
  Tensor h = batched(hx), c = batched(cx);
  Tensor h_next = step(mode, linear(batched(input), w.w_ih, w.b_ih), linear(h, w.w_hh, w.b_hh), h, c);
  return {restored(h_next), restored(c)};
}
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::recurrent_policies() {
  return {&kRnnTanhCell, &kRnnReluCell, &kLstmCell, &kGruCell, &kRnnTanh, &kRnnRelu, &kLstm, &kGru};
}

const char* recurrent_mode_name(RecurrentMode mode) {
  switch (mode) {
    case RecurrentMode::RNNTanh: return "RNN_TANH";
    case RecurrentMode::RNNReLU: return "RNN_RELU";
    case RecurrentMode::LSTM: return "LSTM";
    case RecurrentMode::GRU: return "GRU";
  }
  return "?";
}

int64_t recurrent_gate_count(RecurrentMode mode) {
  return mode == RecurrentMode::LSTM ? 4 : mode == RecurrentMode::GRU ? 3 : 1;
}

Tensor rnn_tanh_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                     const Tensor& b_hh) {
  return cell(RecurrentMode::RNNTanh, kRnnTanhCell, "rnn_tanh_cell", input, hx, Tensor(), {w_ih, w_hh, b_ih, b_hh}).first;
}

Tensor rnn_relu_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                     const Tensor& b_hh) {
  return cell(RecurrentMode::RNNReLU, kRnnReluCell, "rnn_relu_cell", input, hx, Tensor(), {w_ih, w_hh, b_ih, b_hh}).first;
}

std::pair<Tensor, Tensor> lstm_cell(const Tensor& input, const Tensor& hx, const Tensor& cx, const Tensor& w_ih,
                                    const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh) {
  return cell(RecurrentMode::LSTM, kLstmCell, "lstm_cell", input, hx, cx, {w_ih, w_hh, b_ih, b_hh});
}

Tensor gru_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                const Tensor& b_hh) {
  return cell(RecurrentMode::GRU, kGruCell, "gru_cell", input, hx, Tensor(), {w_ih, w_hh, b_ih, b_hh}).first;
}

RecurrentResult recurrent(RecurrentMode mode, const Tensor& input_arg, const Tensor& h0_arg, const Tensor& c0_arg,
                          const std::vector<RecurrentWeights>& weights_arg, const RecurrentOptions& o) {
  const char* op = recurrent_mode_name(mode);
  const bool lstm = mode == RecurrentMode::LSTM;
  autograd::TensorList args{input_arg, h0_arg, lstm ? c0_arg : Tensor()};
  for (const RecurrentWeights& w : weights_arg)
    for (const Tensor& t : {w.w_ih, w.w_hh, w.b_ih, w.b_hh, w.w_hr}) args.push_back(t);
  amp::AutocastInputs in(sequence_policy(mode), std::move(args));
  const Tensor &input = in[0], &h0_in = in[1], &c0_in = in[2];

  MINIDL_CHECK(o.num_layers >= 1, op, "num_layers must be at least 1, got ", o.num_layers);
  MINIDL_CHECK(o.dropout >= 0.0 && o.dropout <= 1.0, op, "dropout should be a number in range [0, 1], got ", o.dropout);
  const int64_t D = o.bidirectional ? 2 : 1;
  MINIDL_CHECK(static_cast<int64_t>(weights_arg.size()) == o.num_layers * D, op, "expected ", o.num_layers * D,
               " weight sets (num_layers * directions), got ", weights_arg.size());
  check_defined(input, op, "input");
  check_floating(op, input);
  MINIDL_CHECK(input.dim() == 2 || input.dim() == 3, op, "Expected input to be 2-D or 3-D but received ", input.dim(),
               "-D tensor");
  const bool unbatched = input.dim() == 2;
  // Everything below runs time major: x [L, N, I].
  Tensor x = unbatched ? input.unsqueeze(1) : (o.batch_first ? input.transpose(0, 1) : input);
  const int64_t L = x.size(0), N = x.size(1);
  std::vector<RecurrentWeights> weights;
  for (size_t i = 0; i < weights_arg.size(); ++i) {
    const size_t at = 3 + 5 * i;
    weights.push_back({in[at], in[at + 1], in[at + 2], in[at + 3], in[at + 4]});
    const int64_t layer = static_cast<int64_t>(i) / D;
    const int64_t layer_input = layer == 0 ? x.size(2) : D * weights[0].w_hh.size(1);
    check_weights(op, mode, input, layer_input, weights.back(),
                  "layer " + std::to_string(layer) + (i % D ? " (reverse)" : "") + ": ");
    MINIDL_CHECK(weights.back().w_hh.size(1) == weights[0].w_hh.size(1) &&
                     weights.back().w_hh.size(0) == weights[0].w_hh.size(0) &&
                     weights.back().w_hr.defined() == weights[0].w_hr.defined(),
                 op, "every layer must have the hidden size and projection of the first, got ",
                 weights.back().w_hh.meta_str(), " after ", weights[0].w_hh.meta_str());
  }
  // H: the cell's width; R: what each step outputs (the projection's width, or H).
  const int64_t H = weights[0].w_hh.size(0) / recurrent_gate_count(mode), R = weights[0].w_hh.size(1);
  MINIDL_CHECK(L > 0, op, "expected a sequence of at least one step, got ", input.meta_str());

  // h0/c0: [D*num_layers, N, H] (unbatched [D*num_layers, H]), zeros when not given.
  auto initial = [&](const Tensor& s, const char* name, int64_t width) {
    const Shape want = unbatched ? Shape{D * o.num_layers, width} : Shape{D * o.num_layers, N, width};
    if (!s.defined()) return zeros({D * o.num_layers, N, width}, TensorOptions(input.dtype()).device(input.device()));
    check_same_device(op, input, s);
    MINIDL_CHECK(s.dim() == input.dim(), op, unbatched ? "For unbatched 2-D input, " : "For batched 3-D input, ", name,
                 " should also be ", input.dim(), "-D but got ", s.dim(), "-D tensor");
    MINIDL_CHECK(s.shape() == want, op, "Expected ", name, " size ", shape_str(want), ", got ", shape_str(s.shape()));
    MINIDL_CHECK(s.dtype() == input.dtype(), op, "expected ", name, " in the input's dtype ", dtype_name(input.dtype()),
                 ", got ", s.meta_str());
    return unbatched ? s.unsqueeze(1) : s;
  };
  const Tensor h0 = initial(h0_in, lstm ? "hidden[0]" : "hidden", R);
  const Tensor c0 = lstm ? initial(c0_in, "hidden[1]", H) : Tensor();
  // Per-element lengths: step t updates only the elements still running ([N, 1] bool), the others
  // keep their state and output zeros there. The reverse direction meets each element's steps past
  // its length first, so it starts from h0 at the element's own last step.
  std::vector<Tensor> running;
  const Tensor zero = zeros({}, TensorOptions(input.dtype()).device(input.device()));  // outputs past a length
  if (!o.lengths.empty()) {
    MINIDL_CHECK(static_cast<int64_t>(o.lengths.size()) == N, op, "expected ", N, " lengths (one per batch element), got ",
                 o.lengths.size());
    for (int64_t len : o.lengths)
      MINIDL_CHECK(len >= 1 && len <= L, op, "every length must be in [1, ", L, "], got ", len);
    const Tensor lengths = from_vector<int64_t>(o.lengths, {N, 1}).to(input.device());
    for (int64_t t = 0; t < L; ++t) running.push_back(gt(lengths, static_cast<double>(t)));
  }

  std::vector<Tensor> h_n, c_n;
  Tensor layer_input = x;
  for (int64_t layer = 0; layer < o.num_layers; ++layer) {
    std::vector<Tensor> directions;
    for (int64_t d = 0; d < D; ++d) {
      const RecurrentWeights& w = weights[layer * D + d];
      const int64_t index = layer * D + d;
      // All time steps' input projections in one product: [L, N, G*H].
      const Tensor xg = linear(layer_input, w.w_ih, w.b_ih);
      Tensor h = h0.select(0, index), c = lstm ? c0.select(0, index) : Tensor();
      std::vector<Tensor> hs(static_cast<size_t>(L));
      for (int64_t s = 0; s < L; ++s) {
        const int64_t t = d == 0 ? s : L - 1 - s;
        Tensor c_next = c;
        Tensor h_next = step(mode, xg.select(0, t), linear(h, w.w_hh, w.b_hh), h, c_next);
        if (w.w_hr.defined()) h_next = linear(h_next, w.w_hr);
        if (running.empty()) {
          h = h_next, c = c_next;
          hs[static_cast<size_t>(t)] = h;
          continue;
        }
        const Tensor& on = running[static_cast<size_t>(t)];
        h = where(on, h_next, h);
        if (lstm) c = where(on, c_next, c);
        hs[static_cast<size_t>(t)] = where(on, h_next, zero);
      }
      directions.push_back(stack(hs, 0));
      h_n.push_back(h);
      if (lstm) c_n.push_back(c);
    }
    layer_input = D == 2 ? cat(directions, 2) : directions[0];
    if (o.dropout > 0.0 && o.training && layer + 1 < o.num_layers)
      layer_input = dropout(layer_input, o.dropout, true, o.generator);
  }
  RecurrentResult r;
  r.output = unbatched ? layer_input.squeeze(1) : (o.batch_first ? layer_input.transpose(0, 1) : layer_input);
  r.h_n = stack(h_n, 0);
  if (lstm) r.c_n = stack(c_n, 0);
  if (unbatched) {
    r.h_n = r.h_n.squeeze(1);
    if (lstm) r.c_n = r.c_n.squeeze(1);
  }
  return r;
}

}  // namespace minidl
