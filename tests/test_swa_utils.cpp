// Weight averaging (torch.optim.swa_utils): SWALR's rates, AveragedModel's mean, EMA and averaged
// buffers, and update_bn's recomputed statistics, against the values torch printed
// (tests/torch_refs/swa_utils.py -> swa_torch_values.h); plus the state dict, resume, errors and
// a small training run where the average of the last epochs is evaluated.
#include <catch2/catch.hpp>

#include "minidl.h"
#include "sine_operands.h"
#include "swa_torch_values.h"

using namespace minidl;
using minidl::testing::check_printed_values;
using minidl::testing::sine_operand;

namespace {

const std::vector<double>& want(const std::string& key) {
  INFO(key);
  REQUIRE(swa_torch_values().count(key) == 1);
  return swa_torch_values().at(key);
}

std::vector<double> rates(const optim::Optimizer& opt) {
  std::vector<double> out;
  for (const auto& g : opt.param_groups()) out.push_back(g.lr());
  return out;
}

void check_rates(const std::vector<double>& got, const std::vector<double>& expected) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("rate " << i);
    CHECK(got[i] == Approx(expected[i]).epsilon(1e-12));
  }
}

// Two groups at 0.1 and 0.3, as the script's.
struct TwoGroups {
  Tensor p1 = zeros({2}, TensorOptions(DType::F64).requires_grad());
  Tensor p2 = zeros({2}, TensorOptions(DType::F64).requires_grad());
  optim::SGD opt{std::vector<optim::ParamGroup>{optim::ParamGroup({p1}, optim::SGDOptions(0.1)),
                                                optim::ParamGroup({p2}, optim::SGDOptions(0.3))},
                 optim::SGDOptions(0.1)};
};

std::shared_ptr<nn::Sequential> small_model() {
  auto m = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 2), std::make_shared<nn::BatchNorm1d>(2));
  m->to(DType::F64);
  return m;
}

// The script's set_state: parameter i takes operand k times (1 + i), then a train-mode forward of
// operand 10 + k feeds the batch norm's running statistics.
void set_state(nn::Sequential& m, int k) {
  {
    NoGradGuard no_grad;
    int i = 0;
    for (const Tensor& p : m.parameters()) p.copy_(mul(sine_operand(k, p.shape()), 1.0 + i++));
  }
  m.train();
  m.forward(sine_operand(10 + k, {4, 3}));
}

}  // namespace

TEST_CASE("SWALR anneals each group's rate to swa_lr as torch's", "[optim][swa]") {
  const std::vector<std::tuple<std::string, std::vector<double>, int64_t, optim::SWAAnneal>> cases{
      {"swalr.cos5", {0.05, 0.02}, 5, optim::SWAAnneal::Cos},
      {"swalr.linear3", {0.01, 0.01}, 3, optim::SWAAnneal::Linear},
      {"swalr.none", {0.04, 0.04}, 0, optim::SWAAnneal::Cos}};
  for (const auto& [key, swa_lrs, anneal, strategy] : cases) {
    INFO(key);
    TwoGroups g;
    optim::SWALR sched(g.opt, swa_lrs, anneal, strategy);
    std::vector<double> got = rates(g.opt);
    for (int s = 0; s < 12; ++s) {
      g.opt.step();
      sched.step();
      for (double r : rates(g.opt)) got.push_back(r);
    }
    check_rates(got, want(key));
  }
}

TEST_CASE("SWALR: one swa_lr for all groups, errors, and a state-dict resume", "[optim][swa]") {
  TwoGroups a;
  optim::SWALR one(a.opt, 0.05, 4);
  CHECK(one.swa_lrs() == std::vector<double>{0.05, 0.05});
  TwoGroups b;
  CHECK_THROWS_WITH(optim::SWALR(b.opt, std::vector<double>{0.1}, 3),
                    Catch::Contains("SWALR") && Catch::Contains("swa_lr has 1, optimizer.param_groups has 2"));
  CHECK_THROWS_WITH(optim::SWALR(b.opt, 0.1, -1), Catch::Contains("anneal_epochs must be equal or greater than 0, got -1"));

  // Two steps, save; a fresh optimizer and schedule loaded from it continue as the original.
  for (int s = 0; s < 2; ++s) one.step();
  const Json state = one.state_dict();
  TwoGroups c;
  optim::SWALR resumed(c.opt, 0.9, 1, optim::SWAAnneal::Linear);
  resumed.load_state_dict(state);
  for (int s = 0; s < 4; ++s) {
    one.step();
    resumed.step();
    check_rates(rates(c.opt), rates(a.opt));
  }
  CHECK(resumed.last_epoch() == one.last_epoch());
}

TEST_CASE("AveragedModel: the mean, an EMA and averaged buffers match torch's", "[nn][swa]") {
  for (const std::string key : {"mean", "ema", "buffers"}) {
    INFO(key);
    auto m = small_model();
    nn::AveragedModelOptions options;
    if (key == "ema") options.avg_fn(nn::ema_average(0.75));
    if (key == "buffers") options.use_buffers();
    nn::AveragedModel<nn::Sequential> avg(m, options);
    CHECK(avg.num_averaged() == 0);
    for (int k = 1; k <= 4; ++k) {
      set_state(*m, k);
      avg.update_parameters(*m);
    }
    CHECK(avg.num_averaged() == 4);
    const TensorDict state = avg.state_dict();
    CHECK(state.keys().front() == "n_averaged");
    for (const auto& [name, t] : state) {
      INFO(name);
      const std::string full = key + "." + name;
      if (swa_torch_values().count(full)) {
        check_printed_values(t.to(DType::F64), want(full));
      } else {
        // Without use_buffers the buffers are the model's own (torch 2.x).
        REQUIRE(key != "buffers");
        const std::string model_name = name.substr(std::string("module.").size());
        CHECK(t.to_vector<double>() == m->state_dict()[model_name].to(DType::F64).to_vector<double>());
      }
    }
    CHECK(state.size() == 8);  // n_averaged, 4 parameters, 3 buffers
  }
}

TEST_CASE("AveragedModel copies the model, runs the copy, and refuses a model of another layout", "[nn][swa]") {
  auto m = small_model();
  nn::AveragedModel<nn::Sequential> avg(m);
  // A copy: the model's tensors are not the average's, and training the model leaves it alone.
  const Tensor w = (*m)[0].ptr()->named_parameters()["weight"];
  const Tensor aw = avg.module->named_parameters()["0.weight"];
  CHECK_FALSE(aw.is_same(w));
  CHECK(aw.requires_grad());
  CHECK(aw.to_vector<double>() == w.to_vector<double>());
  {
    NoGradGuard no_grad;
    w.add_(ones_like(w));
  }
  CHECK(aw.to_vector<double>() != w.to_vector<double>());
  // forward runs the copy, in its own mode.
  avg.eval();
  m->eval();
  Tensor x = sine_operand(3, {2, 3});
  avg.update_parameters(*m);
  CHECK(nn::call(avg, x).to_vector<double>() == m->forward(x).to_vector<double>());
  // The grown average refuses a model whose layout differs.
  auto other = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(3, 3), std::make_shared<nn::BatchNorm1d>(3));
  CHECK_THROWS_WITH(avg.update_parameters(*other),
                    Catch::Contains("AveragedModel::update_parameters") && Catch::Contains("shape [3, 3] in the model but [2, 3]"));
  CHECK_THROWS_WITH(avg.update_parameters(*std::make_shared<nn::Linear>(3, 2)),
                    Catch::Contains("the model has 2 parameters, the average 4"));
  CHECK_THROWS_WITH(nn::ema_average(1.5), Catch::Contains("decay must be in [0, 1]"));
}

TEST_CASE("update_bn recomputes the batch-norm statistics as torch's and restores the mode", "[nn][swa]") {
  auto m = small_model();
  set_state(*m, 1);
  m->eval();
  auto bn = m->at<nn::BatchNorm1d>(1);
  std::vector<Tensor> loader;
  for (int b = 0; b < 3; ++b) loader.push_back(sine_operand(20 + b, {5, 3}));
  nn::update_bn(loader, *m);
  CHECK_FALSE(m->is_training());
  CHECK(bn->momentum() == std::optional<double>(0.1));
  for (const auto& [name, t] : m->state_dict()) check_printed_values(t.to(DType::F64), want("update_bn." + name));

  // DataLoader-style batches (the input is .data) and (input, target) pairs give the same.
  auto m2 = small_model();
  set_state(*m2, 1);
  std::vector<data::Batch> batches;
  std::vector<std::pair<Tensor, Tensor>> pairs;
  for (const Tensor& x : loader) {
    batches.push_back(data::Batch{x, zeros({5}, DType::I64)});
    pairs.emplace_back(x, zeros({5}, DType::I64));
  }
  nn::update_bn(batches, *m2);
  CHECK(m2->is_training());
  CHECK(m2->at<nn::BatchNorm1d>(1)->running_var.to_vector<double>() == bn->running_var.to_vector<double>());
  nn::update_bn(pairs, *m2);
  CHECK(m2->at<nn::BatchNorm1d>(1)->running_mean.to_vector<double>() == bn->running_mean.to_vector<double>());

  // A model without batch norm: nothing happens (not even a forward).
  auto plain = std::make_shared<nn::Linear>(4, 2);
  nn::update_bn(loader, *plain);
}

TEST_CASE("SWA on a small classifier: the average of the last epochs evaluates well", "[nn][swa][training]") {
  manual_seed(11);
  // Two Gaussian blobs in 2-D; a BatchNorm MLP; SGD, then SWALR with an average per epoch.
  const int64_t n = 256;
  Tensor labels = randint(0, 2, {n});
  Tensor centers = sub(mul(labels.to(DType::F32).unsqueeze(1), 2.0), 1.0);
  Tensor x = add(mul(randn({n, 2}), 0.5), centers);
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(2, 16), std::make_shared<nn::BatchNorm1d>(16),
                                                std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(16, 2));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  auto swa = std::make_shared<nn::AveragedModel<nn::Sequential>>(model);
  optim::SWALR sched(opt, 0.05, 2);
  std::vector<Tensor> inputs;
  for (int epoch = 0; epoch < 8; ++epoch) {
    for (int64_t b = 0; b < n; b += 32) {
      Tensor xb = x.slice(0, b, b + 32), yb = labels.slice(0, b, b + 32);
      if (epoch == 0) inputs.push_back(xb);
      opt.zero_grad();
      cross_entropy(model->forward(xb), yb).backward();
      opt.step();
    }
    if (epoch >= 4) {
      swa->update_parameters(*model);
      sched.step();
    }
  }
  CHECK(swa->num_averaged() == 4);
  nn::update_bn(inputs, *swa);
  swa->eval();
  Tensor predicted = argmax(nn::call(swa, x), 1);
  const double accuracy = mean(eq(predicted, labels).to(DType::F32)).item<double>();
  CHECK(accuracy > 0.9);
}
