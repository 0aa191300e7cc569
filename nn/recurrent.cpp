// nn::RNN, LSTM, GRU and their cells.
#include "nn/recurrent.h"

#include <cmath>

#include "framework/error.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace minidl::nn {

namespace {
// U(-1/sqrt(H), 1/sqrt(H)) for every parameter, as torch.nn's RNNBase and RNNCellBase.
void uniform_by_hidden_size(const std::vector<Tensor>& params, int64_t hidden_size, Generator* gen) {
  const double bound = hidden_size > 0 ? 1.0 / std::sqrt(static_cast<double>(hidden_size)) : 0.0;
  for (const Tensor& p : params) init::uniform_(p, -bound, bound, gen);
}

RecurrentMode rnn_mode(const char* module, const std::string& nonlinearity) {
  MINIDL_CHECK(nonlinearity == "tanh" || nonlinearity == "relu", module, "Unknown nonlinearity '", nonlinearity,
               "'. Select from 'tanh' or 'relu'.");
  return nonlinearity == "tanh" ? RecurrentMode::RNNTanh : RecurrentMode::RNNReLU;
}
}  // namespace

// ---- sequences

RecurrentBase::RecurrentBase(RecurrentMode mode, const char* name, int64_t in, int64_t hidden, int64_t layers, bool b,
                             bool bf, double p, bool bidir, Generator* gen, int64_t proj)
    : input_size(in), hidden_size(hidden), num_layers(layers), proj_size(proj), bias(b), batch_first(bf),
      bidirectional(bidir), dropout(p), mode_(mode), name_(name) {
  MINIDL_CHECK(in >= 0 && hidden > 0, name, "hidden_size must be greater than 0 and input_size non-negative, got ",
               in, " and ", hidden);
  MINIDL_CHECK(layers > 0, name, "num_layers must be greater than 0, got ", layers);
  MINIDL_CHECK(p >= 0.0 && p <= 1.0, name, "dropout should be a number in range [0, 1] representing the probability "
               "of an element being zeroed, got ", p);
  MINIDL_CHECK(proj >= 0, name, "proj_size should be a positive integer or zero to disable projections, got ", proj);
  MINIDL_CHECK(proj == 0 || mode == RecurrentMode::LSTM, name, "proj_size argument is only supported for LSTM, not RNN or GRU");
  MINIDL_CHECK(proj < hidden, name, "proj_size has to be smaller than hidden_size, got ", proj, " and ", hidden);
  const int64_t G = recurrent_gate_count(mode), D = bidir ? 2 : 1, out = proj > 0 ? proj : hidden;
  for (int64_t layer = 0; layer < layers; ++layer)
    for (int64_t d = 0; d < D; ++d) {
      const std::string suffix = "_l" + std::to_string(layer) + (d == 1 ? "_reverse" : "");
      const int64_t layer_in = layer == 0 ? in : D * out;
      register_parameter("weight_ih" + suffix, empty({G * hidden, layer_in}));
      register_parameter("weight_hh" + suffix, empty({G * hidden, out}));
      if (b) {
        register_parameter("bias_ih" + suffix, empty({G * hidden}));
        register_parameter("bias_hh" + suffix, empty({G * hidden}));
      }
      if (proj > 0) register_parameter("weight_hr" + suffix, empty({proj, hidden}));
    }
  reset_parameters(gen);
}

void RecurrentBase::reset_parameters(Generator* gen) { uniform_by_hidden_size(parameters(), hidden_size, gen); }

std::vector<RecurrentWeights> RecurrentBase::all_weights() const {
  // parameters() lists them in registration order: w_ih, w_hh (, b_ih, b_hh) (, w_hr) per layer and direction.
  const std::vector<Tensor> p = parameters();
  const size_t per = (bias ? 4 : 2) + (proj_size > 0 ? 1 : 0);
  std::vector<RecurrentWeights> weights;
  for (size_t i = 0; i + per <= p.size(); i += per)
    weights.push_back({p[i], p[i + 1], bias ? p[i + 2] : Tensor(), bias ? p[i + 3] : Tensor(),
                       proj_size > 0 ? p[i + per - 1] : Tensor()});
  return weights;
}

RecurrentResult RecurrentBase::run(const Tensor& input, const Tensor& h0, const Tensor& c0) {
  auto scope = forward_scope();
  MINIDL_CHECK(input.defined(), name_, "input is an undefined tensor");
  MINIDL_CHECK(input.dim() == 2 || input.dim() == 3, name_, "Expected input to be 2-D or 3-D but received ",
               input.dim(), "-D tensor");
  MINIDL_CHECK(input.size(-1) == input_size, name_, "input.size(-1) must be equal to input_size. Expected ",
               input_size, ", got ", input.size(-1));
  RecurrentOptions o = sequence_options();
  o.batch_first = batch_first;
  return recurrent(mode_, input, h0, c0, all_weights(), o);
}

RecurrentOptions RecurrentBase::sequence_options() const {
  RecurrentOptions o;
  o.num_layers = num_layers;
  o.dropout = dropout;
  o.training = is_training();
  o.bidirectional = bidirectional;
  return o;
}

PackedRecurrentResult RecurrentBase::run_packed(const utils::rnn::PackedSequence& input, const Tensor& h0, const Tensor& c0) {
  auto scope = forward_scope();
  MINIDL_CHECK(input.data.defined() && input.data.dim() == 2, name_, "expected packed data [steps, input_size], got ",
               input.data.defined() ? input.data.meta_str() : std::string("none"));
  MINIDL_CHECK(input.data.size(1) == input_size, name_, "input.size(-1) must be equal to input_size. Expected ", input_size,
               ", got ", input.data.size(1));
  // Padded time major in the original order, each element running its own length.
  const utils::rnn::PaddedSequence padded = utils::rnn::pad_packed_sequence(input);
  RecurrentOptions o = sequence_options();  // time major: packed data has no batch_first layout
  o.lengths = padded.lengths.to_vector<int64_t>();
  RecurrentResult r = recurrent(mode_, padded.padded, h0, c0, all_weights(), o);
  return {utils::rnn::pack_in_order(r.output, o.lengths, input.sorted_indices), r.h_n, r.c_n};
}

std::string RecurrentBase::describe() const {
  std::string s = detail::concat(name_, "(", input_size, ", ", hidden_size);
  if (proj_size != 0) s += detail::concat(", proj_size=", proj_size);
  if (num_layers != 1) s += detail::concat(", num_layers=", num_layers);
  if (!bias) s += ", bias=False";
  if (batch_first) s += ", batch_first=True";
  if (dropout != 0.0) s += detail::concat(", dropout=", dropout);
  if (bidirectional) s += ", bidirectional=True";
  return s + ")";
}

RNN::RNN(const RNNOptions& o, Generator* gen)
    : RecurrentBase(rnn_mode("RNN", o.nonlinearity_), "RNN", o.input_size_, o.hidden_size_, o.num_layers_, o.bias_,
                    o.batch_first_, o.dropout_, o.bidirectional_, gen),
      options(o) {}
RecurrentResult RNN::forward(const Tensor& input, const Tensor& h0) { return run(input, h0, Tensor()); }
PackedRecurrentResult RNN::forward_packed(const utils::rnn::PackedSequence& input, const Tensor& h0) {
  return run_packed(input, h0, Tensor());
}

LSTM::LSTM(const LSTMOptions& o, Generator* gen)
    : RecurrentBase(RecurrentMode::LSTM, "LSTM", o.input_size_, o.hidden_size_, o.num_layers_, o.bias_, o.batch_first_,
                    o.dropout_, o.bidirectional_, gen, o.proj_size_),
      options(o) {}
RecurrentResult LSTM::forward(const Tensor& input, const Tensor& h0, const Tensor& c0) {
  MINIDL_CHECK(h0.defined() == c0.defined(), "LSTM", "give both h0 and c0 or neither");
  return run(input, h0, c0);
}
PackedRecurrentResult LSTM::forward_packed(const utils::rnn::PackedSequence& input, const Tensor& h0, const Tensor& c0) {
  MINIDL_CHECK(h0.defined() == c0.defined(), "LSTM", "give both h0 and c0 or neither");
  return run_packed(input, h0, c0);
}

GRU::GRU(const GRUOptions& o, Generator* gen)
    : RecurrentBase(RecurrentMode::GRU, "GRU", o.input_size_, o.hidden_size_, o.num_layers_, o.bias_, o.batch_first_,
                    o.dropout_, o.bidirectional_, gen),
      options(o) {}
RecurrentResult GRU::forward(const Tensor& input, const Tensor& h0) { return run(input, h0, Tensor()); }
PackedRecurrentResult GRU::forward_packed(const utils::rnn::PackedSequence& input, const Tensor& h0) {
  return run_packed(input, h0, Tensor());
}

// ---- cells

RecurrentCellBase::RecurrentCellBase(const char* name, int64_t gates, const RNNCellOptions& o, Generator* gen)
    : options(o) {
  MINIDL_CHECK(o.input_size_ >= 0 && o.hidden_size_ > 0, name, "hidden_size must be greater than 0 and input_size "
               "non-negative, got ", o.input_size_, " and ", o.hidden_size_);
  weight_ih = register_parameter("weight_ih", empty({gates * o.hidden_size_, o.input_size_}));
  weight_hh = register_parameter("weight_hh", empty({gates * o.hidden_size_, o.hidden_size_}));
  if (o.bias_) {
    bias_ih = register_parameter("bias_ih", empty({gates * o.hidden_size_}));
    bias_hh = register_parameter("bias_hh", empty({gates * o.hidden_size_}));
  }
  reset_parameters(gen);
}

void RecurrentCellBase::reset_parameters(Generator* gen) { uniform_by_hidden_size(parameters(), options.hidden_size_, gen); }

Tensor RecurrentCellBase::zero_state(const Tensor& input) const {
  const std::string name = type_name();
  MINIDL_CHECK(input.defined(), name.c_str(), "input is an undefined tensor");
  MINIDL_CHECK(input.dim() == 1 || input.dim() == 2, name.c_str(), "Expected input to be 1-D or 2-D but received ",
               input.dim(), "-D tensor");
  const Shape shape = input.dim() == 2 ? Shape{input.size(0), options.hidden_size_} : Shape{options.hidden_size_};
  return zeros(shape, TensorOptions(input.dtype()).device(input.device()));
}

std::string RecurrentCellBase::describe() const {
  std::string s = detail::concat(type_name(), "(", options.input_size_, ", ", options.hidden_size_);
  if (!options.bias_) s += ", bias=False";
  if (type_name() == "RNNCell" && options.nonlinearity_ != "tanh") s += ", nonlinearity=" + options.nonlinearity_;
  return s + ")";
}

RNNCell::RNNCell(const RNNCellOptions& o, Generator* gen) : RecurrentCellBase("RNNCell", 1, o, gen) {
  rnn_mode("RNNCell", o.nonlinearity_);
}
Tensor RNNCell::forward(const Tensor& input, const Tensor& hx) {
  auto scope = forward_scope();
  const Tensor h = hx.defined() ? hx : zero_state(input);
  return options.nonlinearity_ == "tanh" ? rnn_tanh_cell(input, h, weight_ih, weight_hh, bias_ih, bias_hh)
                                         : rnn_relu_cell(input, h, weight_ih, weight_hh, bias_ih, bias_hh);
}

LSTMCell::LSTMCell(const LSTMCellOptions& o, Generator* gen) : RecurrentCellBase("LSTMCell", 4, o, gen) {}
std::pair<Tensor, Tensor> LSTMCell::forward(const Tensor& input, const Tensor& hx, const Tensor& cx) {
  auto scope = forward_scope();
  MINIDL_CHECK(hx.defined() == cx.defined(), "LSTMCell", "give both hx and cx or neither");
  const Tensor h = hx.defined() ? hx : zero_state(input);
  const Tensor c = cx.defined() ? cx : zero_state(input);
  return lstm_cell(input, h, c, weight_ih, weight_hh, bias_ih, bias_hh);
}

GRUCell::GRUCell(const GRUCellOptions& o, Generator* gen) : RecurrentCellBase("GRUCell", 3, o, gen) {}
Tensor GRUCell::forward(const Tensor& input, const Tensor& hx) {
  auto scope = forward_scope();
  const Tensor h = hx.defined() ? hx : zero_state(input);
  return gru_cell(input, h, weight_ih, weight_hh, bias_ih, bias_hh);
}

}  // namespace minidl::nn
