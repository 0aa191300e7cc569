// Recurrent layers as torch.nn's: RNN, LSTM and GRU (multi-layer, bidirectional, batch_first,
// dropout between layers) and their cells RNNCell, LSTMCell and GRUCell, with PyTorch's parameter
// names (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, ..._reverse; the cells' weight_ih,
// weight_hh, bias_ih, bias_hh), shapes, gate order and initialisation (every parameter
// U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))), so state dicts move between the two. The
// computation is ops/recurrent.h's. LSTM's proj_size adds weight_hr_l0 [proj_size, hidden_size]
// per layer and direction, after its biases, as PyTorch's. Variable-length batches go through
// forward_packed with a PackedSequence (nn/packed_sequence.h).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "nn/module.h"
#include "nn/packed_sequence.h"
#include "ops/recurrent.h"

namespace minidl::nn {

// The options every recurrent layer has; Derived's setters return Derived&.
template <class Derived>
struct RecurrentOptionsBase {
  int64_t input_size_, hidden_size_;
  int64_t num_layers_ = 1;
  bool bias_ = true;
  bool batch_first_ = false;   // input and output [N, L, *] (h_n stays [layers, N, H])
  double dropout_ = 0.0;       // on the outputs of every layer but the last, in training mode
  bool bidirectional_ = false;

  RecurrentOptionsBase(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  Derived& num_layers(int64_t n) { num_layers_ = n; return self(); }
  Derived& bias(bool b) { bias_ = b; return self(); }
  Derived& batch_first(bool b) { batch_first_ = b; return self(); }
  Derived& dropout(double p) { dropout_ = p; return self(); }
  Derived& bidirectional(bool b) { bidirectional_ = b; return self(); }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

struct RNNOptions : RecurrentOptionsBase<RNNOptions> {
  std::string nonlinearity_ = "tanh";  // or "relu"
  using RecurrentOptionsBase::RecurrentOptionsBase;
  RNNOptions& nonlinearity(std::string n) { nonlinearity_ = std::move(n); return *this; }
};
struct LSTMOptions : RecurrentOptionsBase<LSTMOptions> {
  int64_t proj_size_ = 0;  // 0: none; else h_t is projected to proj_size (< hidden_size) features
  using RecurrentOptionsBase::RecurrentOptionsBase;
  LSTMOptions& proj_size(int64_t p) { proj_size_ = p; return *this; }
};
struct GRUOptions : RecurrentOptionsBase<GRUOptions> {
  using RecurrentOptionsBase::RecurrentOptionsBase;
};

// A recurrent layer's result for a PackedSequence: the output packed in the input's order, h_n (and
// c_n) [D * num_layers, N, H] in the original batch order, each after its sequence's last step.
struct PackedRecurrentResult {
  utils::rnn::PackedSequence output;
  Tensor h_n, c_n;
};

// What RNN, LSTM and GRU share: the per layer and direction parameters and the sequence call.
class RecurrentBase : public Module {
 public:
  // Re-draws every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), in registration order.
  void reset_parameters(Generator* gen = nullptr);
  // Layer by layer, the forward direction before the reverse one (PyTorch's _flat_weights order).
  std::vector<RecurrentWeights> all_weights() const;
  // As torch's repr: "LSTM(10, 20, num_layers=2, bidirectional=True)" (RNN's nonlinearity is not shown).
  std::string describe() const override;
  std::string type_name() const override { return name_; }

  const int64_t input_size, hidden_size, num_layers, proj_size;
  const bool bias, batch_first, bidirectional;
  const double dropout;

 protected:
  RecurrentBase(RecurrentMode mode, const char* name, int64_t input_size, int64_t hidden_size, int64_t num_layers,
                bool bias, bool batch_first, double dropout, bool bidirectional, Generator* gen, int64_t proj_size = 0);
  RecurrentResult run(const Tensor& input, const Tensor& h0, const Tensor& c0);
  // h0 and c0 in the original batch order, as PyTorch's.
  PackedRecurrentResult run_packed(const utils::rnn::PackedSequence& input, const Tensor& h0, const Tensor& c0);

 private:
  RecurrentOptions sequence_options() const;  // the layer's options for recurrent(), time major
  RecurrentMode mode_;
  const char* name_;
};

// input [L, N, input_size] ([N, L, input_size] with batch_first, or unbatched [L, input_size]),
// h0 [D * num_layers, N, hidden_size] (unbatched [D * num_layers, hidden_size]; zeros when not
// given) -> {output [L, N, D * hidden_size], h_n} (D = 2 when bidirectional).
class RNN : public RecurrentBase {
 public:
  explicit RNN(const RNNOptions& options, Generator* gen = nullptr);
  RecurrentResult forward(const Tensor& input, const Tensor& h0 = Tensor());
  PackedRecurrentResult forward_packed(const utils::rnn::PackedSequence& input, const Tensor& h0 = Tensor());
  ModulePtr clone_structure() const override { return std::make_shared<RNN>(options); }
  RNNOptions options;
};

// As RNN, with the cell state: forward(input, h0, c0) -> {output, h_n, c_n}.
class LSTM : public RecurrentBase {
 public:
  explicit LSTM(const LSTMOptions& options, Generator* gen = nullptr);
  RecurrentResult forward(const Tensor& input, const Tensor& h0 = Tensor(), const Tensor& c0 = Tensor());
  PackedRecurrentResult forward_packed(const utils::rnn::PackedSequence& input, const Tensor& h0 = Tensor(),
                                       const Tensor& c0 = Tensor());
  ModulePtr clone_structure() const override { return std::make_shared<LSTM>(options); }
  LSTMOptions options;
};

class GRU : public RecurrentBase {
 public:
  explicit GRU(const GRUOptions& options, Generator* gen = nullptr);
  RecurrentResult forward(const Tensor& input, const Tensor& h0 = Tensor());
  PackedRecurrentResult forward_packed(const utils::rnn::PackedSequence& input, const Tensor& h0 = Tensor());
  ModulePtr clone_structure() const override { return std::make_shared<GRU>(options); }
  GRUOptions options;
};

// ---- cells: one time step. input [N, input_size] or unbatched [input_size]; hx (and cx) [N,
// hidden_size] or [hidden_size], zeros when not given.
struct RNNCellOptions {
  int64_t input_size_, hidden_size_;
  bool bias_ = true;
  std::string nonlinearity_ = "tanh";  // or "relu" (RNNCell only)
  RNNCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  RNNCellOptions& bias(bool b) { bias_ = b; return *this; }
  RNNCellOptions& nonlinearity(std::string n) { nonlinearity_ = std::move(n); return *this; }
};
using LSTMCellOptions = RNNCellOptions;
using GRUCellOptions = RNNCellOptions;

class RecurrentCellBase : public Module {
 public:
  void reset_parameters(Generator* gen = nullptr);  // U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))
  std::string describe() const override;            // "LSTMCell(10, 20)", "RNNCell(3, 4, nonlinearity=relu)"

  RNNCellOptions options;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;

 protected:
  RecurrentCellBase(const char* name, int64_t gates, const RNNCellOptions& options, Generator* gen);
  Tensor zero_state(const Tensor& input) const;  // hx when none is given
};

class RNNCell : public RecurrentCellBase {
 public:
  explicit RNNCell(const RNNCellOptions& options, Generator* gen = nullptr);
  Tensor forward(const Tensor& input, const Tensor& hx = Tensor());
  std::string type_name() const override { return "RNNCell"; }
  ModulePtr clone_structure() const override { return std::make_shared<RNNCell>(options); }
};

class LSTMCell : public RecurrentCellBase {
 public:
  explicit LSTMCell(const LSTMCellOptions& options, Generator* gen = nullptr);
  std::pair<Tensor, Tensor> forward(const Tensor& input, const Tensor& hx = Tensor(), const Tensor& cx = Tensor());
  std::string type_name() const override { return "LSTMCell"; }
  ModulePtr clone_structure() const override { return std::make_shared<LSTMCell>(options); }
};

class GRUCell : public RecurrentCellBase {
 public:
  explicit GRUCell(const GRUCellOptions& options, Generator* gen = nullptr);
  Tensor forward(const Tensor& input, const Tensor& hx = Tensor());
  std::string type_name() const override { return "GRUCell"; }
  ModulePtr clone_structure() const override { return std::make_shared<GRUCell>(options); }
};

}  // namespace minidl::nn
