// RNN, LSTM, GRU and their cells (ops/recurrent.h, nn/recurrent.h): values and gradients against what
// torch 1.13 computed for the same parameters and inputs (tests/torch_refs/recurrent.py), f64
// finite-difference gradient checks (first and second order), autocast, dropout between layers,
// parameter names, errors, and a sequence task that trains.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "cuda_checks.h"
#include "gradcheck.h"
#include "minidl.h"
#include "recurrent_torch_values.h"
#include "sine_operands.h"

using namespace minidl;
using Catch::Contains;
using testing::check_printed_values;
using testing::cosine_weights;
using testing::sine_operand;

namespace {
// Every parameter = operand 10 + i, times 0.5, in registration order (the script's set_params).
void set_params(nn::Module& m) {
  NoGradGuard guard;
  int i = 0;
  for (const Tensor& p : m.parameters()) {
    p.copy_(mul(sine_operand(10 + i, p.shape()), 0.5));
    ++i;
  }
}

// The script's loss over a module's outputs, and the check of outputs and gradients by name.
void check_against_torch(const std::string& name, const std::vector<Tensor>& outs, const std::vector<Tensor>& wrt) {
  const auto& want = torch_recurrent_values();
  Tensor loss = zeros({}, DType::F64);
  for (size_t i = 0; i < outs.size(); ++i) {
    INFO(name << " output " << i);
    check_printed_values(outs[i], want.at(name + ".out" + std::to_string(i)));
    loss = add(loss, sum(mul(outs[i], cosine_weights(outs[i].shape()))));
  }
  CHECK(want.count(name + ".out" + std::to_string(outs.size())) == 0);
  loss.backward();
  for (size_t i = 0; i < wrt.size(); ++i) {
    INFO(name << " gradient " << i);
    REQUIRE(wrt[i].grad().defined());
    check_printed_values(wrt[i].grad(), want.at(name + ".grad" + std::to_string(i)));
  }
  CHECK(want.count(name + ".grad" + std::to_string(wrt.size())) == 0);
}

Tensor leaf(int k, const Shape& s) { return sine_operand(k, s).requires_grad_(); }
Tensor param(const nn::Module& m, const std::string& name) { return m.named_parameters().at(name); }
}  // namespace

TEST_CASE("LSTM, GRU and RNN match torch.nn's values and gradients", "[recurrent][nn]") {
  const int64_t L = 4, N = 2, I = 3, H = 3;
  {
    nn::LSTM lstm(nn::LSTMOptions(I, H).num_layers(2).bidirectional(true));
    lstm.to(DType::F64);
    set_params(lstm);
    Tensor x = leaf(0, {L, N, I}), h0 = leaf(1, {4, N, H}), c0 = leaf(2, {4, N, H});
    RecurrentResult r = lstm.forward(x, h0, c0);
    CHECK(r.output.shape() == Shape{L, N, 2 * H});
    check_against_torch("lstm", {r.output, r.h_n, r.c_n},
                        {x, h0, c0, param(lstm, "weight_hh_l1_reverse"), param(lstm, "bias_ih_l0")});
  }
  {
    // proj_size: cells of 4, outputs and h projected to 2.
    nn::LSTM lstm(nn::LSTMOptions(I, 4).num_layers(2).bidirectional(true).batch_first(true).proj_size(2));
    lstm.to(DType::F64);
    set_params(lstm);
    Tensor x = leaf(9, {N, L, I}), h0 = leaf(11, {4, N, 2}), c0 = leaf(12, {4, N, 4});
    RecurrentResult r = lstm.forward(x, h0, c0);
    CHECK(r.output.shape() == Shape{N, L, 4});
    CHECK(r.h_n.shape() == Shape{4, N, 2});
    CHECK(r.c_n.shape() == Shape{4, N, 4});
    CHECK(param(lstm, "weight_hr_l1_reverse").shape() == Shape{2, 4});
    check_against_torch("lstm proj", {r.output, r.h_n, r.c_n},
                        {x, h0, c0, param(lstm, "weight_hr_l1_reverse"), param(lstm, "weight_hh_l0")});
  }
  {
    nn::GRU gru(nn::GRUOptions(I, H).batch_first(true).bidirectional(true));
    gru.to(DType::F64);
    set_params(gru);
    Tensor x = leaf(3, {N, L, I});
    RecurrentResult r = gru.forward(x);
    CHECK(r.output.shape() == Shape{N, L, 2 * H});
    CHECK(!r.c_n.defined());
    check_against_torch("gru", {r.output, r.h_n}, {x, param(gru, "weight_ih_l0_reverse"), param(gru, "bias_hh_l0")});
  }
  {
    nn::RNN rnn(nn::RNNOptions(I, H).num_layers(2).nonlinearity("relu").bias(false));
    rnn.to(DType::F64);
    set_params(rnn);
    Tensor x = leaf(4, {L, I}), h0 = leaf(5, {2, H});  // unbatched
    RecurrentResult r = rnn.forward(x, h0);
    CHECK(r.output.shape() == Shape{L, H});
    CHECK(r.h_n.shape() == Shape{2, H});
    check_against_torch("rnn_relu unbatched", {r.output, r.h_n}, {x, h0, param(rnn, "weight_hh_l0")});
  }
}

TEST_CASE("RNNCell, LSTMCell and GRUCell match torch.nn's values and gradients", "[recurrent][nn]") {
  const int64_t N = 2, I = 3, H = 3;
  nn::RNNCell rnn(nn::RNNCellOptions(I, H));
  nn::LSTMCell lstm(nn::LSTMCellOptions(I, H));
  nn::GRUCell gru(nn::GRUCellOptions(I, H));
  for (nn::Module* m : std::vector<nn::Module*>{&rnn, &lstm, &gru}) {
    m->to(DType::F64);
    set_params(*m);
  }
  Tensor x = leaf(6, {N, I}), hx = leaf(7, {N, H});
  check_against_torch("RNNCell", {rnn.forward(x, hx)}, {x, hx, rnn.weight_hh, rnn.bias_ih});
  x = leaf(6, {N, I}), hx = leaf(7, {N, H});
  Tensor cx = leaf(8, {N, H});
  auto [h, c] = lstm.forward(x, hx, cx);
  check_against_torch("LSTMCell", {h, c}, {x, hx, cx, lstm.weight_hh, lstm.bias_ih});
  x = leaf(6, {N, I}), hx = leaf(7, {N, H});
  check_against_torch("GRUCell", {gru.forward(x, hx)}, {x, hx, gru.weight_hh, gru.bias_ih});
}

TEST_CASE("recurrent cells and sequences: f64 gradient checks, first and second order", "[recurrent][gradcheck]") {
  using Fn = testing::TensorFn;
  const int64_t N = 2, I = 3, H = 2;
  // Inputs: x, h (, c), w_ih, w_hh, b_ih, b_hh; operands scaled to keep the gates off saturation.
  auto inputs = [&](int64_t gates, bool cell_state, const Shape& x_shape, const Shape& h_shape) {
    std::vector<Tensor> v = {sine_operand(0, x_shape), sine_operand(1, h_shape)};
    if (cell_state) v.push_back(sine_operand(2, h_shape));
    v.push_back(mul(sine_operand(3, {gates * H, x_shape.back()}), 0.7));
    v.push_back(mul(sine_operand(4, {gates * H, H}), 0.7));
    v.push_back(mul(sine_operand(5, {gates * H}), 0.5));
    v.push_back(mul(sine_operand(6, {gates * H}), 0.5));
    for (Tensor& t : v) t = t.detach().requires_grad_();
    return v;
  };
  struct Case {
    const char* name;
    std::vector<Tensor> xs;
    Fn fn;
  };
  const std::vector<Case> cases = {
      {"rnn_tanh_cell", inputs(1, false, {N, I}, {N, H}),
       [](const auto& v) { return rnn_tanh_cell(v[0], v[1], v[2], v[3], v[4], v[5]); }},
      {"lstm_cell h and c", inputs(4, true, {N, I}, {N, H}),
       [](const auto& v) {
         auto [h, c] = lstm_cell(v[0], v[1], v[2], v[3], v[4], v[5], v[6]);
         return cat({h, mul(c, 0.5)}, 1);
       }},
      {"gru_cell unbatched", inputs(3, false, {I}, {H}),
       [](const auto& v) { return gru_cell(v[0], v[1], v[2], v[3], v[4], v[5]); }},
      {"lstm bidirectional sequence", inputs(4, true, {3, N, I}, {2, N, H}),
       [](const auto& v) {
         RecurrentOptions o;
         o.bidirectional = true;
         // Both directions share one weight set here: the check covers the reverse pass's own indexing.
         RecurrentResult r = recurrent(RecurrentMode::LSTM, v[0], v[1], v[2], {{v[3], v[4], v[5], v[6]}, {v[3], v[4], v[5], v[6]}}, o);
         return cat({r.output.reshape({-1}), r.h_n.reshape({-1}), r.c_n.reshape({-1})});
       }},
      {"gru two layers batch first", inputs(3, false, {N, 3, H}, {2, N, H}),
       [](const auto& v) {
         RecurrentOptions o;
         o.num_layers = 2;
         o.batch_first = true;
         RecurrentResult r = recurrent(RecurrentMode::GRU, v[0], v[1], Tensor(), {{v[2], v[3], v[4], v[5]}, {v[2], v[3], v[4], v[5]}}, o);
         return cat({r.output.reshape({-1}), r.h_n.reshape({-1})});
       }},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    CHECK(testing::check_gradients(c.fn, c.xs, 1e-6, 1e-6) == "");
    CHECK(testing::check_second_order(c.fn, c.xs, 1e-6, 1e-5) == "");
  }
}

TEST_CASE("recurrent layers under autocast run in the autocast dtype and stay close to f64", "[recurrent][amp]") {
  manual_seed(4);
  nn::LSTM lstm(nn::LSTMOptions(5, 6).num_layers(2));
  Tensor x = mul(randn({7, 3, 5}), 0.5);
  nn::LSTM ref(nn::LSTMOptions(5, 6).num_layers(2));
  ref.load_state_dict(lstm.state_dict());
  ref.to(DType::F64);
  const RecurrentResult want = ref.forward(x.to(DType::F64));
  for (DType dtype : {DType::BF16, DType::F16}) {
    INFO(dtype_name(dtype));
    RecurrentResult got;
    {
      amp::autocast scope(DeviceType::CPU, dtype);
      got = lstm.forward(x);
    }
    CHECK(got.output.dtype() == dtype);
    CHECK(got.h_n.dtype() == dtype);
    CHECK(got.c_n.dtype() == dtype);
    REQUIRE(got.output.grad_fn());
    CHECK(got.output.grad_fn()->amp.compute_dtype == dtype);
    // Every step rounds the gates, the cell state and h once more; |h| < 1 and the 7 steps x 2
    // layers keep the sum of those roundings within a few dozen ulps of the dtype.
    const double eps = traits(dtype).eps;
    CHECK(testing::max_abs_diff(got.output, want.output) <= 32 * eps);
    CHECK(testing::max_abs_diff(got.c_n, want.c_n) <= 32 * eps);
    sum(got.output.to(DType::F32)).backward();
    for (const Tensor& p : lstm.parameters()) CHECK(p.grad().dtype() == DType::F32);
    lstm.zero_grad();
  }
  // The cells too; the rows say LowerPrecision on both devices.
  nn::GRUCell cell(nn::GRUCellOptions(5, 6));
  {
    amp::autocast scope(DeviceType::CPU);
    CHECK(cell.forward(x.select(0, 0)).dtype() == DType::BF16);
  }
  for (const char* op : {"rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell", "rnn_tanh", "rnn_relu", "lstm", "gru"})
    for (DeviceType d : {DeviceType::CPU, DeviceType::CUDA}) CHECK(amp::policy_for(op, d) == amp::CastPolicy::LowerPrecision);
}

TEST_CASE("dropout between layers: none in eval mode, p = 1 zeroes the upper layer's input in training", "[recurrent][nn]") {
  manual_seed(5);
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).dropout(1.0));
  nn::LSTM plain(nn::LSTMOptions(3, 4).num_layers(2));
  plain.load_state_dict(lstm.state_dict());
  Tensor x = randn({5, 2, 3});
  lstm.eval();
  CHECK(testing::max_abs_diff(lstm.forward(x).output, plain.forward(x).output) == 0);
  lstm.train();
  const Tensor dropped = lstm.forward(x).output;
  // Layer 0 with zero weights and biases outputs exactly 0 (c stays 0 from zero states): the
  // second layer then sees what dropout with p = 1 gives it.
  {
    NoGradGuard guard;
    for (const char* name : {"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"}) param(plain, name).zero_();
  }
  CHECK(testing::max_abs_diff(dropped, plain.forward(x).output) == 0);
}

TEST_CASE("recurrent layers carry torch.nn's parameter names, shapes, initial range and repr", "[recurrent][nn]") {
  nn::GRU gru(nn::GRUOptions(3, 4).num_layers(2).bidirectional(true));
  const std::vector<std::string> names = gru.state_dict().keys();
  CHECK(names.size() == 16);
  CHECK(names[0] == "weight_ih_l0");
  CHECK(names[3] == "bias_hh_l0");
  CHECK(names[4] == "weight_ih_l0_reverse");
  CHECK(names[8] == "weight_ih_l1");
  CHECK(names[15] == "bias_hh_l1_reverse");
  CHECK(param(gru, "weight_ih_l1").shape() == Shape{12, 8});  // the layer below's two directions
  CHECK(param(gru, "weight_hh_l0_reverse").shape() == Shape{12, 4});
  for (const Tensor& p : gru.parameters()) CHECK(max(abs(p)).item() <= 0.5);  // 1/sqrt(hidden_size)
  CHECK(nn::LSTMCell(nn::LSTMCellOptions(3, 4).bias(false)).state_dict().keys() ==
        std::vector<std::string>{"weight_ih", "weight_hh"});
  const auto& repr = torch_recurrent_reprs();
  CHECK(nn::LSTM(nn::LSTMOptions(3, 3).num_layers(2).bidirectional(true)).describe() == repr.at("lstm"));
  CHECK(nn::GRU(nn::GRUOptions(3, 3).batch_first(true).bidirectional(true)).describe() == repr.at("gru"));
  CHECK(nn::LSTM(nn::LSTMOptions(3, 4).proj_size(2).num_layers(2)).describe() == repr.at("lstm_proj_options"));
  CHECK_THROWS_WITH(nn::LSTM(nn::LSTMOptions(3, 4).proj_size(4)), Catch::Contains("proj_size has to be smaller than hidden_size"));
  CHECK_THROWS_WITH(nn::LSTM(nn::LSTMOptions(3, 4).proj_size(-1)), Catch::Contains("proj_size should be a positive integer or zero"));
  CHECK(nn::RNN(nn::RNNOptions(3, 4).nonlinearity("relu").bias(false).batch_first(true).dropout(0.5).num_layers(2))
            .describe() == repr.at("rnn_options"));
  CHECK(nn::RNNCell(nn::RNNCellOptions(3, 4).nonlinearity("relu").bias(false)).describe() == repr.at("rnn_cell_options"));
  CHECK(nn::GRUCell(nn::GRUCellOptions(3, 3)).describe() == repr.at("GRUCell"));
  // clone_structure keeps the options (DataParallel and DDP replicate through it).
  nn::ModulePtr copy = gru.clone_structure();
  CHECK(copy->describe() == gru.describe());
  CHECK(copy->state_dict().keys() == names);
}

TEST_CASE("recurrent errors name the layer and the problem, as torch's", "[recurrent][nn]") {
  nn::LSTM lstm(nn::LSTMOptions(3, 4));
  CHECK_THROWS_WITH(lstm.forward(zeros({5, 2, 6})), Contains("LSTM") && Contains("input.size(-1) must be equal to input_size. Expected 3, got 6"));
  CHECK_THROWS_WITH(lstm.forward(zeros({1, 5, 2, 3})), Contains("Expected input to be 2-D or 3-D but received 4-D tensor"));
  CHECK_THROWS_WITH(lstm.forward(zeros({5, 2, 3}), zeros({1, 3, 4}), zeros({1, 2, 4})),
                    Contains("Expected hidden[0] size [1, 2, 4], got [1, 3, 4]"));
  CHECK_THROWS_WITH(lstm.forward(zeros({5, 3}), zeros({1, 2, 4}), zeros({1, 2, 4})),
                    Contains("For unbatched 2-D input, hidden[0] should also be 2-D but got 3-D tensor"));
  CHECK_THROWS_WITH(lstm.forward(zeros({5, 2, 3}), zeros({1, 2, 4})), Contains("give both h0 and c0 or neither"));
  CHECK_THROWS_WITH(lstm.forward(zeros({5, 2, 3}, DType::F64)), Contains("LSTM") && Contains("dtype"));
  CHECK_THROWS_WITH(nn::RNN(nn::RNNOptions(3, 4).nonlinearity("gelu")), Contains("Unknown nonlinearity 'gelu'"));
  CHECK_THROWS_WITH(nn::GRU(nn::GRUOptions(3, 4).dropout(1.5)), Contains("dropout should be a number in range [0, 1]"));
  CHECK_THROWS_WITH(nn::GRU(nn::GRUOptions(3, 0)), Contains("hidden_size must be greater than 0"));
  nn::GRUCell cell(nn::GRUCellOptions(3, 4));
  CHECK_THROWS_WITH(cell.forward(zeros({2, 5})), Contains("gru_cell") && Contains("input has inconsistent input_size: got 5, expected 3"));
  CHECK_THROWS_WITH(cell.forward(zeros({2, 3}), zeros({3, 4})), Contains("Input batch size 2 doesn't match hx batch size 3"));
  CHECK_THROWS_WITH(cell.forward(zeros({2, 3}), zeros({2, 5})), Contains("hx has inconsistent hidden_size: got 5, expected 4"));
  CHECK_THROWS_WITH(cell.forward(zeros({2, 2, 3})), Contains("Expected input to be 1-D or 2-D but received 3-D tensor"));
  CHECK_THROWS_WITH(lstm_cell(zeros({2, 3}), zeros({2, 4}), zeros({2, 4}), zeros({12, 3}), zeros({12, 4})),
                    Contains("lstm_cell") && Contains("w_hh must be [4 * hidden_size, hidden_size]"));
}

TEST_CASE("an LSTM classifier learns which of two patterns a noisy sequence holds", "[recurrent][nn][training]") {
  manual_seed(6);
  // Class 0: a rising ramp, class 1: a falling one, each with noise; the label sits in the order of
  // the steps, so only the recurrence can tell them apart from the last hidden state.
  const int64_t B = 16, L = 6;
  Tensor labels = randint(0, 2, {B});
  Tensor ramp = linspace(-1.0, 1.0, L).reshape({1, L, 1});
  Tensor sign = sub(mul(labels.to(DType::F32), -2.0), -1.0).reshape({B, 1, 1});  // +1 for class 0, -1 for 1
  Tensor x = add(mul(ramp, sign), mul(randn({B, L, 1}), 0.1));
  nn::LSTM lstm(nn::LSTMOptions(1, 8).batch_first(true));
  nn::Linear head(8, 2);
  std::vector<Tensor> params = lstm.parameters();
  for (const Tensor& p : head.parameters()) params.push_back(p);
  optim::Adam opt(params, optim::AdamOptions(0.03));
  double first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    opt.zero_grad();
    Tensor loss;
    {
      amp::autocast scope(DeviceType::CPU);
      const RecurrentResult r = lstm.forward(x);
      loss = nn::functional::cross_entropy(head.forward(r.h_n.select(0, 0)), labels);
    }
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item();
  }
  INFO("first loss " << first << ", last " << last);
  CHECK(std::isfinite(last));
  CHECK(last < 0.05 * first);
}

TEST_CASE("cuda: LSTM and GRU agree with the CPU, values and gradients, f32 and under autocast", "[cuda][recurrent]") {
  using namespace minidl::cuda_test;
  MINIDL_REQUIRE_GPU();
  manual_seed(7);
  nn::LSTM lstm(nn::LSTMOptions(4, 5).num_layers(2).bidirectional(true));
  nn::GRU gru(nn::GRUOptions(4, 5).batch_first(true));
  const Tensor x = mul(randn({6, 3, 4}), 0.5);
  for (nn::Module* m : std::vector<nn::Module*>{&lstm, &gru}) {
    const bool is_lstm = m == &lstm;
    INFO(m->describe());
    auto run = [&](const Tensor& input) {
      RecurrentResult r = is_lstm ? lstm.forward(input) : gru.forward(input);
      return r;
    };
    // f32: the CPU run, then the same parameters on the device.
    const Tensor xc = leaf_on_cpu(x), xd = leaf_on_device(x);
    m->zero_grad();
    const RecurrentResult rc = run(xc);
    sum(mul(rc.output, cosine_weights(rc.output.shape()).to(DType::F32))).backward();
    std::vector<Tensor> grads_cpu;
    for (const Tensor& p : m->parameters()) grads_cpu.push_back(p.grad().clone());
    m->to(kCuda);
    m->zero_grad();
    const RecurrentResult rd = run(xd);
    sum(mul(rd.output, cosine_weights(rd.output.shape()).to(DType::F32).to(kCuda))).backward();
    // Sums of a few dozen products and a few gate roundings per step: f32 ulps, times the steps.
    check_close(rd.output.to(Device::cpu()), rc.output, 1e-5, 1e-6, "output");
    check_close(rd.h_n.to(Device::cpu()), rc.h_n, 1e-5, 1e-6, "h_n");
    check_close(xd.grad().to(Device::cpu()), xc.grad(), 1e-4, 1e-5, "input gradient");
    const std::vector<Tensor> params = m->parameters();
    for (size_t i = 0; i < params.size(); ++i)
      check_close(params[i].grad().to(Device::cpu()), grads_cpu[i], 1e-4, 1e-5, "parameter " + std::to_string(i));
    // Under the device's autocast the layer runs in its low dtype.
    {
      amp::autocast scope(kCuda.type, kAmpDType);
      const RecurrentResult ra = run(x.to(kCuda));
      CHECK(ra.output.dtype() == kAmpDType);
      check_close(ra.output.to(Device::cpu()), rc.output, 0, 32 * eps_of(kAmpDType), "autocast output");
    }
    m->to(Device::cpu());
  }
}
