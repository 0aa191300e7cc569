// nn: module registration (order, dotted names, re-rooting), traversal, modes, to(), zero_grad,
// state dicts and strict-load errors, printing, layers (Linear against a manual mm, activations,
// Sequential, ModuleList, Dropout train/eval), losses, initialisers (statistics within bounds),
// gradient clipping, save/load and the AMP forward-scope hook.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "framework/generator.h"
#include "gradcheck.h"
#include "minidl.h"
#include "nn/nn.h"

using namespace minidl;
using minidl::testing::max_abs_diff;

namespace {

struct Block : nn::Module {
  std::shared_ptr<nn::Linear> fc;
  Tensor scale;
  Block(int64_t n) {
    fc = register_module("fc", std::make_shared<nn::Linear>(n, n));
    scale = register_parameter("scale", ones({n}));
    register_buffer("steps", zeros({1}, DType::I64));
  }
  Tensor forward(const Tensor& x) { return mul(fc->forward(x), scale); }
};

struct Net : nn::Module {
  std::shared_ptr<nn::Linear> fc1;
  std::shared_ptr<Block> block;
  std::shared_ptr<nn::Linear> fc2;
  Net() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 3));
    block = register_module("block", std::make_shared<Block>(3));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(3, 2, false));
    register_buffer("mask", ones({2}), /*persistent=*/false);
  }
  Tensor forward(const Tensor& x) { return fc2->forward(relu(block->forward(fc1->forward(x)))); }
};

std::vector<std::string> keys(const TensorDict& d) { return d.keys(); }

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("minidl_test_nn_" + std::to_string(::getpid()) + "_" + name)).string();
}

}  // namespace

TEST_CASE("parameters and buffers are listed in registration order with dotted names", "[nn][module]") {
  auto net = std::make_shared<Net>();
  // As PyTorch: each module's own parameters, then its children's (pre-order).
  CHECK(keys(net->named_parameters()) == std::vector<std::string>{"fc1.weight", "fc1.bias", "block.scale",
                                                                  "block.fc.weight", "block.fc.bias", "fc2.weight"});
  CHECK(keys(net->named_buffers()) == std::vector<std::string>{"mask", "block.steps"});
  CHECK(keys(net->named_parameters(false)).empty());
  CHECK(net->parameters().size() == 6);
  // The tensors carry their path as their name, for diagnostics.
  CHECK(net->block->fc->weight.name() == "block.fc.weight");
  CHECK(net->block->path() == "block");
  CHECK(net->block->fc->path() == "block.fc");
  CHECK(net->block->fc->name() == "fc");
  CHECK(net->path().empty());
  // Children and modules.
  auto children = net->named_children();
  REQUIRE(children.size() == 3);
  CHECK(children[1].first == "block");
  CHECK(children[1].second.get() == net->block.get());
  std::vector<std::string> mods;
  for (auto& [n, m] : net->named_modules()) mods.push_back(n);
  CHECK(mods == std::vector<std::string>{"", "fc1", "block", "block.fc", "fc2"});
  CHECK(net->num_parameters() == 4 * 3 + 3 + 9 + 3 + 3 + 6);
}

TEST_CASE("registering a model inside another renames all its tensors", "[nn][module]") {
  auto inner = std::make_shared<Net>();
  CHECK(inner->fc1->weight.name() == "fc1.weight");
  struct Outer : nn::Module {};
  auto outer = std::make_shared<Outer>();
  outer->register_module("encoder", inner);
  CHECK(inner->fc1->weight.name() == "encoder.fc1.weight");
  CHECK(inner->block->fc->bias.name() == "encoder.block.fc.bias");
  CHECK(inner->block->fc->path() == "encoder.block.fc");
  CHECK(outer->named_parameters().keys().front() == "encoder.fc1.weight");
}

TEST_CASE("registration rejects bad and duplicate names and non-leaf parameters", "[nn][module]") {
  struct M : nn::Module {};
  M m;
  m.register_parameter("w", ones({2}));
  CHECK_THROWS_WITH(m.register_parameter("w", ones({2})), Catch::Contains("attribute 'w' already exists"));
  CHECK_THROWS_WITH(m.register_buffer("w", ones({2})), Catch::Contains("already exists"));
  CHECK_THROWS_WITH(m.register_parameter("a.b", ones({2})), Catch::Contains("cannot contain"));
  CHECK_THROWS_WITH(m.register_parameter("", ones({2})), Catch::Contains("empty"));
  Tensor x = ones({2}).requires_grad_();
  CHECK_THROWS_WITH(m.register_parameter("y", mul(x, 2.0)), Catch::Contains("leaf"));
  CHECK_THROWS_WITH(m.register_parameter("i", zeros({2}, DType::I64)), Catch::Contains("floating"));
  Tensor i = m.register_parameter("i", zeros({2}, DType::I64), false);
  CHECK_FALSE(i.requires_grad());
  CHECK(m.named_parameters()["w"].requires_grad());
  // Registration hands back the same tensor.
  Tensor t = ones({3});
  CHECK(m.register_parameter("t", t).is_same(t));
}

TEST_CASE("a module moves only to floating dtypes", "[nn][module]") {
  // nn.Linear(2, 2).to(torch.int64): "nn.Module.to only accepts floating point or complex dtypes"
  nn::Linear l(2, 2);
  using Catch::Contains;
  CHECK_THROWS_WITH(l.to(DType::I64), Contains("Module::to") && Contains("floating") && Contains("i64"));
  CHECK_THROWS_WITH(l.to(Device::cpu(), DType::Bool), Contains("Module::to") && Contains("bool"));
  CHECK(l.weight.dtype() == DType::F32);  // untouched by the refused moves
  l.to(DType::F64);
  CHECK(l.weight.dtype() == DType::F64);
}

TEST_CASE("a parameter shared by two modules is listed once, the state dict names both", "[nn][module]") {
  struct Holder : nn::Module {};
  auto shared = std::make_shared<nn::Linear>(3, 3);
  auto h = std::make_shared<Holder>();
  h->register_module("first", shared);
  h->register_module("second", shared);
  CHECK(h->named_parameters().keys() == std::vector<std::string>{"first.weight", "first.bias"});
  CHECK(h->state_dict().keys() ==
        std::vector<std::string>{"first.weight", "first.bias", "second.weight", "second.bias"});
}

TEST_CASE("state_dict lists parameters then persistent buffers, module by module", "[nn][state]") {
  auto net = std::make_shared<Net>();
  auto sd = net->state_dict();
  CHECK(keys(sd) == std::vector<std::string>{"fc1.weight", "fc1.bias", "block.scale", "block.steps", "block.fc.weight",
                                             "block.fc.bias", "fc2.weight"});
  // Detached views of the live storage.
  CHECK_FALSE(sd["fc1.weight"].requires_grad());
  CHECK(sd["fc1.weight"].raw_data() == net->fc1->weight.raw_data());
}

TEST_CASE("state dict round trip reproduces the model's outputs", "[nn][state]") {
  manual_seed(1);
  auto a = std::make_shared<Net>();
  auto b = std::make_shared<Net>();
  Tensor x = randn({5, 4});
  REQUIRE(max_abs_diff(a->forward(x), b->forward(x)) > 1e-3);
  Tensor w_before = b->fc1->weight;
  auto r = b->load_state_dict(a->state_dict());
  CHECK(r.missing_keys.empty());
  CHECK(r.unexpected_keys.empty());
  CHECK(max_abs_diff(a->forward(x), b->forward(x)) == 0.0);
  // Loading copies into the existing tensors (optimizers keep their handles).
  CHECK(b->fc1->weight.is_same(w_before));
  CHECK(b->fc1->weight.requires_grad());
  // Values are copies, not aliases.
  CHECK(b->fc1->weight.raw_data() != a->fc1->weight.raw_data());
}

TEST_CASE("strict load lists missing, unexpected and mismatched keys and copies nothing", "[nn][state]") {
  auto net = std::make_shared<Net>();
  TensorDict sd;
  for (const auto& [k, v] : net->state_dict()) {
    if (k == "fc2.weight" || k == "block.steps") continue;  // missing
    if (k == "fc1.weight") sd.insert(k, zeros({3, 5}));     // wrong shape
    else sd.insert(k, full(v.shape(), 7.0, v.dtype()));
  }
  sd.insert("fc3.weight", zeros({1}));  // unexpected
  const std::vector<float> before = net->fc1->bias.to_vector<float>();
  try {
    net->load_state_dict(sd);
    FAIL("expected an error");
  } catch (const Error& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("Error(s) in loading state_dict for Net"));
    CHECK_THAT(msg, Catch::Contains("Missing key(s) in state_dict: \"block.steps\", \"fc2.weight\"."));
    CHECK_THAT(msg, Catch::Contains("Unexpected key(s) in state_dict: \"fc3.weight\"."));
    CHECK_THAT(msg, Catch::Contains("size mismatch for fc1.weight: copying a param with shape [3, 5] from checkpoint, "
                                    "the shape in current model is [3, 4]."));
  }
  CHECK(net->fc1->bias.to_vector<float>() == before);  // nothing was copied

  // Non-strict: missing/unexpected are reported, a shape mismatch is still an error.
  CHECK_THROWS_WITH(net->load_state_dict(sd, false), Catch::Contains("size mismatch for fc1.weight"));
  TensorDict partial;
  partial.insert("fc1.bias", full({3}, 2.0));
  partial.insert("extra", zeros({1}));
  auto r = net->load_state_dict(partial, false);
  CHECK(r.unexpected_keys == std::vector<std::string>{"extra"});
  CHECK(r.missing_keys.size() == net->state_dict().size() - 1);
  CHECK(net->fc1->bias.to_vector<float>() == std::vector<float>{2, 2, 2});
}

TEST_CASE("unexpected keys are listed module by module, as PyTorch's load walks the tree", "[nn][state]") {
  auto net = std::make_shared<Net>();
  TensorDict sd = net->state_dict();
  sd.insert("extra", zeros({1}));           // the root's
  sd.insert("block.fc.extra", zeros({1}));  // block.fc's
  sd.insert("mask", zeros({2}));            // a non-persistent buffer is not part of the state
  sd.insert("block", zeros({1}));           // a child's own name: PyTorch reports it nowhere
  sd.insert("block.fc.weight.x", zeros({1}));  // under a parameter's name: neither loaded nor reported
  // torch 1.13 with the same tree and dict: ['extra', 'mask', 'block.fc.extra'].
  auto r = net->load_state_dict(sd, false);
  CHECK(r.unexpected_keys == std::vector<std::string>{"extra", "mask", "block.fc.extra"});
  CHECK(r.missing_keys.empty());
  CHECK_THROWS_WITH(net->load_state_dict(sd), Catch::Contains("Unexpected key(s) in state_dict: \"extra\", \"mask\", \"block.fc.extra\"."));
}

TEST_CASE("a 0-dim parameter or buffer loads the first element of a 1-D entry, as PyTorch", "[nn][state]") {
  struct Scaled : nn::Module {
    Tensor logit_scale = register_parameter("logit_scale", full({}, 2.0));
  };
  auto m = std::make_shared<Scaled>();
  m->load_state_dict(TensorDict{{"logit_scale", from_vector<float>({4.5f, 6.0f})}});
  CHECK(m->logit_scale.item() == 4.5);
  CHECK(m->logit_scale.dim() == 0);
  // An empty 1-D entry has no first element: a size mismatch, as any other shape.
  CHECK_THROWS_WITH(m->load_state_dict(TensorDict{{"logit_scale", zeros({0})}}),
                    Catch::Contains("size mismatch for logit_scale: copying a param with shape [0]"));
  // BatchNorm's counter saved with shape [1].
  auto bn = std::make_shared<nn::BatchNorm>(3, /*expected_dims=*/2);
  TensorDict sd = bn->state_dict();
  sd.set("num_batches_tracked", full({1}, 7.0, DType::I64));
  bn->load_state_dict(sd);
  CHECK(bn->state_dict().at("num_batches_tracked").item() == 7.0);
}

TEST_CASE("load_state_dict converts dtypes into the module's tensors", "[nn][state]") {
  auto a = std::make_shared<nn::Linear>(2, 2);
  TensorDict sd;
  sd.insert("weight", from_vector<double>({1, 2, 3, 4}, {2, 2}));
  sd.insert("bias", from_vector<double>({5, 6}, {2}));
  a->load_state_dict(sd);
  CHECK(a->weight.dtype() == DType::F32);
  CHECK(a->weight.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
}

TEST_CASE("train/eval recurse, apply visits children before parents", "[nn][module]") {
  auto net = std::make_shared<Net>();
  CHECK(net->is_training());
  net->eval();
  CHECK_FALSE(net->block->fc->is_training());
  net->train();
  CHECK(net->block->fc->is_training());
  std::vector<std::string> order;
  net->apply([&](nn::Module& m) { order.push_back(m.path().empty() ? "<root>" : m.path()); });
  CHECK(order == std::vector<std::string>{"fc1", "block.fc", "block", "fc2", "<root>"});
}

TEST_CASE("to(dtype) keeps parameter identity, leaves and gradients", "[nn][module]") {
  auto net = std::make_shared<Net>();
  std::vector<Tensor> held = net->parameters();  // e.g. what an optimizer holds
  Tensor x = ones({2, 4});
  net->forward(x).sum().backward();
  REQUIRE(net->fc1->weight.grad().defined());
  const std::vector<double> w = net->fc1->weight.to_vector<double>();
  net->to(DType::F64);
  CHECK(held[0].is_same(net->fc1->weight));
  CHECK(held[0].dtype() == DType::F64);
  CHECK(held[0].is_leaf());
  CHECK(held[0].requires_grad());
  CHECK(held[0].name() == "fc1.weight");
  CHECK(held[0].to_vector<double>() == w);
  CHECK(held[0].grad().dtype() == DType::F64);
  CHECK(net->named_buffers()["block.steps"].dtype() == DType::I64);  // integers are not converted
  // The converted model trains: gradients arrive in f64.
  net->zero_grad();
  net->forward(ones({2, 4}, DType::F64)).sum().backward();
  CHECK(held[0].grad().dtype() == DType::F64);
  net->to(Device::cpu());  // same device: no-op
  CHECK(held[0].dtype() == DType::F64);
}

TEST_CASE("zero_grad sets gradients to none or to zeros", "[nn][module]") {
  auto lin = std::make_shared<nn::Linear>(3, 2);
  lin->forward(ones({1, 3})).sum().backward();
  REQUIRE(lin->weight.grad().defined());
  lin->zero_grad(false);
  REQUIRE(lin->weight.grad().defined());
  CHECK(lin->weight.grad().to_vector<float>() == std::vector<float>(6, 0.0f));
  lin->zero_grad();
  CHECK_FALSE(lin->weight.grad().defined());
  CHECK_FALSE(lin->bias.grad().defined());
}

TEST_CASE("modules print one line each and a model prints as a tree with counts", "[nn][print]") {
  CHECK(nn::Linear(784, 256).describe() == "Linear(784 -> 256, bias)");
  CHECK(nn::Linear(3, 2, false).describe() == "Linear(3 -> 2, no bias)");
  CHECK(nn::ReLU().describe() == "ReLU()");
  CHECK(nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)).describe() == "LeakyReLU(negative_slope=0.2)");
  CHECK(nn::GELU(nn::GELUOptions().approximate("tanh")).describe() == "GELU(approximate='tanh')");
  CHECK_THROWS_WITH(nn::GELU(nn::GELUOptions().approximate("fast")), Catch::Contains("approximate"));
  CHECK(nn::Dropout(0.25).describe() == "Dropout(p=0.25)");
  CHECK(nn::Flatten().describe() == "Flatten(start_dim=1, end_dim=-1)");
  CHECK(nn::Identity().describe() == "Identity()");
  CHECK(nn::Sigmoid().describe() == "Sigmoid()");
  CHECK(nn::Tanh().describe() == "Tanh()");
  CHECK(nn::Softmax(1).describe() == "Softmax(dim=1)");
  CHECK(nn::CrossEntropyLoss().describe() == "CrossEntropyLoss(reduction=mean)");
  CHECK(nn::MSELoss(Reduction::Sum).describe() == "MSELoss(reduction=sum)");

  auto net = std::make_shared<Net>();
  CHECK(net->type_name() == "Net");
  const std::string expected =
      "Net                               36 params\n"
      "  (fc1): Linear(4 -> 3, bias)     15 params\n"
      "  (block): Block                  15 params\n"
      "    (fc): Linear(3 -> 3, bias)    12 params\n"
      "  (fc2): Linear(3 -> 2, no bias)   6 params";
  CHECK(net->summary() == expected);
  std::ostringstream os;
  os << net;
  CHECK(os.str() == expected);
  // Frozen parameters are reported.
  net->fc2->weight.requires_grad_(false);
  CHECK_THAT(net->summary(), Catch::EndsWith("(30 of 36 parameters trainable)"));
  CHECK(nn::detail::group_digits(1234567) == "1,234,567");
  CHECK(nn::detail::group_digits(999) == "999");
}

TEST_CASE("Linear matches x W^T + b computed with mm, and has PyTorch's init bounds", "[nn][linear]") {
  Generator gen(7);
  nn::Linear lin(nn::LinearOptions(20, 30), &gen);
  CHECK(lin.weight.shape() == Shape{30, 20});
  CHECK(lin.bias.shape() == Shape{30});
  const double bound = 1.0 / std::sqrt(20.0);
  for (float w : lin.weight.to_vector<float>()) CHECK(std::fabs(w) <= bound);
  for (float b : lin.bias.to_vector<float>()) CHECK(std::fabs(b) <= bound);
  Tensor x = randn({5, 20}, {}, &gen);
  Tensor y = lin.forward(x);
  Tensor ref = add(mm(x, lin.weight.t()), lin.bias);
  CHECK(max_abs_diff(y, ref) < 1e-5);
  // Batched leading dims.
  Tensor x3 = randn({2, 5, 20}, {}, &gen);
  CHECK(lin.forward(x3).shape() == Shape{2, 5, 30});
  // Same seed, same weights.
  Generator g1(42), g2(42);
  nn::Linear a(nn::LinearOptions(8, 4), &g1), b(nn::LinearOptions(8, 4), &g2);
  CHECK(max_abs_diff(a.weight, b.weight) == 0.0);
  CHECK(max_abs_diff(a.bias, b.bias) == 0.0);
  // Gradients reach both parameters.
  lin.forward(x).sum().backward();
  CHECK(lin.weight.grad().shape() == lin.weight.shape());
  CHECK(lin.bias.grad().to_vector<float>() == std::vector<float>(30, 5.0f));
}

TEST_CASE("Sequential runs modules in order, nests, and names children by index", "[nn][container]") {
  manual_seed(3);
  auto seq = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::ReLU>(),
                                              std::make_shared<nn::Linear>(8, 2));
  CHECK(seq->size() == 3);
  CHECK(seq->named_parameters().keys() == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  Tensor x = randn({3, 4});
  auto l0 = seq->at<nn::Linear>(0), l2 = seq->at<nn::Linear>(2);
  Tensor ref = l2->forward(relu(l0->forward(x)));
  CHECK(max_abs_diff(seq->forward(x), ref) == 0.0);
  CHECK(max_abs_diff((*seq)(x), ref) == 0.0);
  CHECK_THROWS_WITH(seq->at<nn::Linear>(1), Catch::Contains("ReLU"));
  CHECK_THROWS_WITH((*seq)[3], Catch::Contains("out of range"));

  // Any module with Tensor forward(const Tensor&) fits, including a user's own.
  auto block = std::make_shared<Block>(2);
  auto outer = std::make_shared<nn::Sequential>(
      std::vector<std::pair<std::string, nn::AnyModule>>{{"body", seq}, {"head", block}, {"flat", std::make_shared<nn::Flatten>()}});
  CHECK(outer->named_parameters().keys().back() == "head.fc.bias");
  CHECK(block->fc->weight.name() == "head.fc.weight");
  CHECK(max_abs_diff(outer->forward(x), block->forward(ref)) == 0.0);
  CHECK_THAT(outer->summary(), Catch::Contains("(body): Sequential") && Catch::Contains("    (0): Linear(4 -> 8, bias)"));
}

TEST_CASE("ModuleList registers by index and gives typed access", "[nn][container]") {
  auto list = std::make_shared<nn::ModuleList>();
  for (int i = 0; i < 3; ++i) list->push_back(std::make_shared<nn::Linear>(2, 2));
  CHECK(list->size() == 3);
  CHECK(list->named_parameters().keys().size() == 6);
  CHECK(list->named_parameters().keys()[4] == "2.weight");
  CHECK(list->at<nn::Linear>(1)->weight.name() == "1.weight");
  CHECK_THROWS_WITH(list->at<nn::ReLU>(1), Catch::Contains("Linear"));
  int n = 0;
  for (const auto& m : *list) n += m->type_name() == "Linear";
  CHECK(n == 3);
}

TEST_CASE("activation layers match the ops", "[nn][activation]") {
  Tensor x = from_vector<float>({-2, -0.5, 0, 0.5, 2});
  CHECK(max_abs_diff(nn::ReLU().forward(x), relu(x)) == 0.0);
  CHECK(max_abs_diff(nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.1)).forward(x), leaky_relu(x, 0.1)) == 0.0);
  CHECK(max_abs_diff(nn::GELU().forward(x), gelu(x)) == 0.0);
  CHECK(max_abs_diff(nn::GELU(nn::GELUOptions().approximate("tanh")).forward(x), gelu(x, true)) == 0.0);
  CHECK(max_abs_diff(nn::Sigmoid().forward(x), sigmoid(x)) == 0.0);
  CHECK(max_abs_diff(nn::Tanh().forward(x), tanh(x)) == 0.0);
  CHECK(max_abs_diff(nn::Identity().forward(x), x) == 0.0);
  Tensor img = ones({2, 3, 4, 5});
  CHECK(nn::Flatten().forward(img).shape() == Shape{2, 60});
  CHECK(nn::Flatten(nn::FlattenOptions().start_dim(2)).forward(img).shape() == Shape{2, 3, 20});
  Tensor logits = from_vector<float>({1, 2, 3, 1, 1, 1}, {2, 3});
  CHECK(max_abs_diff(nn::Softmax(1).forward(logits), softmax(logits, 1)) == 0.0);
  CHECK(max_abs_diff(nn::LogSoftmax(1).forward(logits), log_softmax(logits, 1)) == 0.0);
  CHECK(max_abs_diff(nn::functional::relu(x), relu(x)) == 0.0);
}

TEST_CASE("Unflatten splits one dim as torch.nn.Unflatten, and refuses sizes that do not cover it", "[nn][layers]") {
  using Catch::Contains;
  // nn.Unflatten(1, (1, 28, 28))(torch.ones(2, 784)).shape -> [2, 1, 28, 28]; (-1, 4) on dim -1 of
  // [3, 8] -> [3, 2, 4]; (5, 5) on 784 -> "unflattened_size ... don't multiply up to the size of dim 1"
  Tensor flat = arange(2.0 * 784, DType::F32).reshape({2, 784});
  Tensor img = nn::Unflatten(1, {1, 28, 28}).forward(flat);
  CHECK(img.shape() == Shape{2, 1, 28, 28});
  CHECK(max_abs_diff(nn::Flatten().forward(img), flat) == 0.0);  // Flatten undoes it, in order
  CHECK(nn::Unflatten(-1, {-1, 4}).forward(ones({3, 8})).shape() == Shape{3, 2, 4});
  CHECK(nn::Unflatten(0, {2, 1}).forward(ones({2, 5})).shape() == Shape{2, 1, 5});
  CHECK_THROWS_WITH(nn::Unflatten(1, {5, 5}).forward(flat), Contains("Unflatten") && Contains("does not cover dim 1 of size 784"));
  CHECK_THROWS_WITH(nn::Unflatten(1, {-1, 5}).forward(flat), Contains("does not cover"));
  CHECK_THROWS_WITH(nn::Unflatten(2, {1, 784}).forward(flat), Contains("Unflatten") && Contains("out of range"));
  CHECK_THROWS_WITH(nn::Unflatten(1, {-1, -1}), Contains("only one size"));
  CHECK_THROWS_WITH(nn::Unflatten(1, {}), Contains("non-empty"));
  CHECK(nn::Unflatten(1, {1, 28, 28}).describe() == "Unflatten(dim=1, unflattened_size=[1, 28, 28])");
}

TEST_CASE("requires_grad_ on a module freezes and unfreezes every parameter, recursively", "[nn][module]") {
  // model.requires_grad_(False): no parameter requires grad, buffers untouched; a frozen layer gets no
  // gradient while the rest of the model does.
  nn::Sequential model(std::vector<std::pair<std::string, nn::AnyModule>>{{"a", std::make_shared<nn::Linear>(3, 4)},
                                                                       {"b", std::make_shared<nn::Linear>(4, 2)}});
  CHECK(&model.requires_grad_(false) == &model);
  for (const Tensor& p : model.parameters()) CHECK_FALSE(p.requires_grad());
  auto b = std::dynamic_pointer_cast<nn::Linear>(model.named_modules()[2].second);
  REQUIRE(b);
  b->requires_grad_();
  model.forward(ones({5, 3})).sum().backward();
  auto a = std::dynamic_pointer_cast<nn::Linear>(model.named_modules()[1].second);
  REQUIRE(a);
  CHECK_FALSE(a->weight.grad().defined());
  CHECK(b->weight.grad().defined());
  CHECK(model.num_parameters(true) == b->num_parameters());
}

TEST_CASE("Dropout drops and rescales in training mode and is the identity in eval mode", "[nn][dropout]") {
  Generator gen(5);
  auto drop = std::make_shared<nn::Dropout>(nn::DropoutOptions(0.25), &gen);
  Tensor x = ones({100000});
  std::vector<float> y = drop->forward(x).to_vector<float>();
  int64_t zeros_n = 0;
  for (float v : y) {
    if (v == 0.0f) ++zeros_n;
    else CHECK(v == Approx(1.0 / 0.75));
  }
  // Binomial(100000, 0.25): sd ~137; 6 sd.
  CHECK(std::abs(zeros_n - 25000) < 820);
  drop->eval();
  CHECK(max_abs_diff(drop->forward(x), x) == 0.0);
  // Through a container: eval() on the parent reaches it.
  auto seq = std::make_shared<nn::Sequential>(std::make_shared<nn::Dropout>(0.5));
  seq->eval();
  CHECK(max_abs_diff(seq->forward(x), x) == 0.0);
  seq->train();
  CHECK(max_abs_diff(seq->forward(x), x) > 0.5);
  CHECK_THROWS_WITH(nn::Dropout(1.5), Catch::Contains("between 0 and 1"));
}

TEST_CASE("loss modules forward to the functional losses with their options", "[nn][loss]") {
  Tensor logits = from_vector<float>({1, 2, 0.5, -1, 0, 3}, {2, 3});
  Tensor target = from_vector<int64_t>({1, 2});
  CHECK(max_abs_diff(nn::CrossEntropyLoss().forward(logits, target), cross_entropy(logits, target)) == 0.0);
  CHECK(max_abs_diff(nn::functional::cross_entropy(logits, target), cross_entropy(logits, target)) == 0.0);
  Tensor w = from_vector<float>({1, 2, 3});
  CrossEntropyOptions o;
  o.weight = w;
  o.label_smoothing = 0.1;
  nn::CrossEntropyLoss ce(nn::CrossEntropyLossOptions().weight(w).label_smoothing(0.1));
  CHECK(max_abs_diff(ce(logits, target), cross_entropy(logits, target, o)) == 0.0);
  CHECK(ce.state_dict().keys() == std::vector<std::string>{"weight"});  // class weights are a buffer
  CHECK(ce.describe() == "CrossEntropyLoss(reduction=mean, label_smoothing=0.1, weighted)");
  Tensor logp = log_softmax(logits, 1);
  CHECK(max_abs_diff(nn::NLLLoss().forward(logp, target), nll_loss(logp, target)) == 0.0);
  Tensor a = from_vector<float>({1, 2, 3}), b = from_vector<float>({1, 0, 5});
  CHECK(nn::MSELoss().forward(a, b).item() == Approx((0 + 4 + 4) / 3.0));
  CHECK(nn::MSELoss(Reduction::Sum).forward(a, b).item() == Approx(8.0));
  CHECK(nn::L1Loss().forward(a, b).item() == Approx(4 / 3.0));
  Tensor z = from_vector<float>({0.5, -1, 2}), t = from_vector<float>({1, 0, 1});
  CHECK(max_abs_diff(nn::BCEWithLogitsLoss().forward(z, t), binary_cross_entropy_with_logits(z, t)) == 0.0);
  // Element weights: weighted mean of the unreduced loss.
  Tensor ew = from_vector<float>({1, 0, 2});
  Tensor per = binary_cross_entropy_with_logits(z, t, Reduction::None);
  CHECK(nn::BCEWithLogitsLoss(nn::BCELossOptions().weight(ew)).forward(z, t).item() == Approx(mul(per, ew).mean().item()));
  // A weight of another dtype leaves the loss's (torch: loss.mul_(weight); f64 weight, f32 loss).
  const Tensor weighted = nn::BCEWithLogitsLoss(nn::BCELossOptions().weight(cast(ew, DType::F64))).forward(z, t);
  CHECK(weighted.dtype() == DType::F32);
  CHECK(weighted.item() == Approx(mul(per, ew).mean().item()));
  Tensor pw = from_vector<float>({3, 3, 3});
  CHECK(max_abs_diff(nn::BCEWithLogitsLoss(nn::BCELossOptions().pos_weight(pw)).forward(z, t),
                     binary_cross_entropy_with_logits(z, t, Reduction::Mean, pw)) == 0.0);
  Tensor p = sigmoid(z);
  CHECK(max_abs_diff(nn::BCELoss().forward(p, t), binary_cross_entropy(p, t)) == 0.0);
}

TEST_CASE("calculate_gain and fans follow PyTorch", "[nn][init]") {
  using nn::init::Nonlinearity;
  CHECK(nn::init::calculate_gain(Nonlinearity::Linear) == 1.0);
  CHECK(nn::init::calculate_gain(Nonlinearity::Sigmoid) == 1.0);
  CHECK(nn::init::calculate_gain(Nonlinearity::Tanh) == Approx(5.0 / 3.0));
  CHECK(nn::init::calculate_gain(Nonlinearity::ReLU) == Approx(std::sqrt(2.0)));
  CHECK(nn::init::calculate_gain(Nonlinearity::LeakyReLU) == Approx(std::sqrt(2.0 / (1 + 0.01 * 0.01))));
  CHECK(nn::init::calculate_gain(Nonlinearity::LeakyReLU, std::sqrt(5.0)) == Approx(std::sqrt(1.0 / 3.0)));
  CHECK(nn::init::calculate_gain(Nonlinearity::SELU) == 0.75);
  auto [fi, fo] = nn::init::calculate_fan_in_and_fan_out(empty({16, 8, 3, 3}));
  CHECK(fi == 8 * 9);
  CHECK(fo == 16 * 9);
  CHECK_THROWS_WITH(nn::init::calculate_fan_in_and_fan_out(empty({5})), Catch::Contains("fewer than 2 dimensions"));
}

namespace {
struct Stats {
  double mean, std, min, max;
};
Stats stats_of(const Tensor& t) {
  std::vector<double> v = t.to_vector<double>();
  double s = 0, s2 = 0, lo = 1e300, hi = -1e300;
  for (double x : v) {
    s += x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  const double mean = s / v.size();
  for (double x : v) s2 += (x - mean) * (x - mean);
  return {mean, std::sqrt(s2 / (v.size() - 1)), lo, hi};
}
}  // namespace

TEST_CASE("initialisers draw from the right distributions", "[nn][init]") {
  Generator gen(11);
  const int64_t out = 400, in = 250;  // 100,000 samples: mean within ~5 sigma/sqrt(n)
  const double n = static_cast<double>(out * in);
  Tensor w = empty({out, in});
  auto check_uniform = [&](double bound) {
    Stats s = stats_of(w);
    const double sd = bound / std::sqrt(3.0);
    CHECK(s.min >= -bound);
    CHECK(s.max <= bound);
    CHECK(s.min < -0.99 * bound);  // the whole range is used
    CHECK(s.max > 0.99 * bound);
    CHECK(std::fabs(s.mean) < 5 * sd / std::sqrt(n));
    CHECK(s.std == Approx(sd).epsilon(0.02));
  };
  auto check_normal = [&](double mean, double sd) {
    Stats s = stats_of(w);
    CHECK(std::fabs(s.mean - mean) < 5 * sd / std::sqrt(n));
    CHECK(s.std == Approx(sd).epsilon(0.02));
  };
  nn::init::uniform_(w, -0.3, 0.3, &gen);
  check_uniform(0.3);
  nn::init::kaiming_uniform_(w, 0.0, nn::init::FanMode::FanIn, nn::init::Nonlinearity::ReLU, &gen);
  check_uniform(std::sqrt(2.0) * std::sqrt(3.0 / in));
  nn::init::kaiming_uniform_(w, std::sqrt(5.0), nn::init::FanMode::FanIn, nn::init::Nonlinearity::LeakyReLU, &gen);
  check_uniform(1.0 / std::sqrt(in));
  nn::init::kaiming_uniform_(w, 0.0, nn::init::FanMode::FanOut, nn::init::Nonlinearity::ReLU, &gen);
  check_uniform(std::sqrt(2.0) * std::sqrt(3.0 / out));
  nn::init::xavier_uniform_(w, 2.0, &gen);
  check_uniform(2.0 * std::sqrt(6.0 / (in + out)));
  nn::init::kaiming_normal_(w, 0.0, nn::init::FanMode::FanIn, nn::init::Nonlinearity::ReLU, &gen);
  check_normal(0.0, std::sqrt(2.0 / in));
  nn::init::xavier_normal_(w, 1.0, &gen);
  check_normal(0.0, std::sqrt(2.0 / (in + out)));
  nn::init::normal_(w, 3.0, 0.5, &gen);
  check_normal(3.0, 0.5);
  nn::init::constant_(w, 0.25);
  CHECK(stats_of(w).min == 0.25);
  CHECK(stats_of(w).max == 0.25);
  nn::init::zeros_(w);
  CHECK(stats_of(w).max == 0.0);
  nn::init::ones_(w);
  CHECK(stats_of(w).min == 1.0);
  // Parameters (which require grad) are initialised without recording a graph; f64 and bf16 too.
  Tensor p = empty({50, 40}, DType::F64).requires_grad_();
  nn::init::xavier_uniform_(p, 1.0, &gen);
  CHECK(p.is_leaf());
  CHECK(std::fabs(stats_of(p).max) <= std::sqrt(6.0 / 90));
  Tensor h = empty({50, 40}, DType::BF16);
  nn::init::normal_(h, 0.0, 1.0, &gen);
  CHECK(stats_of(h).std == Approx(1.0).epsilon(0.1));
  // Reproducible from a seed.
  Generator a(3), b(3);
  Tensor u = empty({10}), v = empty({10});
  nn::init::normal_(u, 0, 1, &a);
  nn::init::normal_(v, 0, 1, &b);
  CHECK(max_abs_diff(u, v) == 0.0);
}

TEST_CASE("clip_grad_norm_ returns the total norm and scales as PyTorch", "[nn][clip]") {
  Tensor a = zeros({2}).requires_grad_(), b = zeros({3}).requires_grad_();
  auto set = [&] {
    a.set_grad(from_vector<float>({3, 4}));
    b.set_grad(from_vector<float>({0, 12, 0}));
  };
  set();
  // total = sqrt(9 + 16 + 144) = 13
  double total = nn::utils::clip_grad_norm_({a, b}, 1.0).item();
  CHECK(total == Approx(13.0));
  const double coef = 1.0 / (13.0 + 1e-6);
  CHECK(a.grad().to_vector<float>()[0] == Approx(3 * coef));
  CHECK(b.grad().to_vector<float>()[1] == Approx(12 * coef));
  CHECK(nn::utils::grad_norm({a, b}).item() == Approx(1.0).epsilon(1e-5));
  // Under the limit: unchanged.
  set();
  CHECK(nn::utils::clip_grad_norm_({a, b}, 100.0).item() == Approx(13.0));
  CHECK(a.grad().to_vector<float>() == std::vector<float>{3, 4});
  // Other norms.
  set();
  CHECK(nn::utils::clip_grad_norm_({a, b}, 6.0, nn::utils::kInfNorm).item() == 12.0);
  CHECK(b.grad().to_vector<float>()[1] == Approx(12 * 6.0 / (12 + 1e-6)));
  set();
  CHECK(nn::utils::clip_grad_norm_({a, b}, 100.0, 1.0).item() == 19.0);
  set();
  CHECK(nn::utils::clip_grad_norm_({a, b}, 100.0, 3.0).item() == Approx(std::cbrt(27.0 + 64 + 1728)));
  // Parameters without gradients are skipped; none at all gives 0.
  Tensor c = zeros({2}).requires_grad_();
  CHECK(nn::utils::clip_grad_norm_({c}, 1.0).item() == 0.0);
  // Other dtypes go through the same path.
  Tensor d = zeros({2}, DType::F64).requires_grad_();
  d.set_grad(from_vector<double>({6, 8}));
  CHECK(nn::utils::clip_grad_norm_({d}, 5.0).item() == 10.0);
  CHECK(d.grad().to_vector<double>()[1] == Approx(8 * 5.0 / (10 + 1e-6)));
  Tensor e = zeros({2}, DType::BF16).requires_grad_();
  e.set_grad(from_vector<float>({6, 8}).to(DType::BF16));
  CHECK(nn::utils::clip_grad_norm_({e}, 5.0).item() == 10.0);
  CHECK(e.grad().to_vector<float>()[1] == Approx(4.0).epsilon(0.01));
  // Non-finite norms.
  a.set_grad(from_vector<float>({INFINITY, 1}));
  CHECK_THROWS_WITH(nn::utils::clip_grad_norm_({a}, 1.0, 2.0, true), Catch::Contains("non-finite"));
  CHECK(std::isinf(nn::utils::clip_grad_norm_({a}, 1.0).item()));
  // Scaled by max_norm / inf = 0, as PyTorch: inf * 0 = nan, 1 * 0 = 0.
  CHECK(std::isnan(a.grad().to_vector<float>()[0]));
  CHECK(a.grad().to_vector<float>()[1] == 0.0f);
}

TEST_CASE("clip_grad_value_ clamps every gradient element", "[nn][clip]") {
  Tensor a = zeros({4}).requires_grad_();
  a.set_grad(from_vector<float>({-3, -0.5, 0.5, 3}));
  Tensor h = zeros({2}, DType::F16).requires_grad_();
  h.set_grad(from_vector<float>({-2, 2}).to(DType::F16));
  nn::utils::clip_grad_value_({a, h}, 1.0);
  CHECK(a.grad().to_vector<float>() == std::vector<float>{-1, -0.5, 0.5, 1});
  CHECK(h.grad().to_vector<float>() == std::vector<float>{-1, 1});
}

TEST_CASE("save/load writes a safetensors file of the state dict", "[nn][serialize]") {
  manual_seed(9);
  auto a = std::make_shared<Net>();
  auto b = std::make_shared<Net>();
  const std::string path = temp_path("net.safetensors");
  nn::save(a, path);
  auto f = safetensors::load_file(path);
  CHECK(f.metadata.at("format") == "pt");
  CHECK(f.tensors.size() == a->state_dict().size());
  nn::load(b, path);
  Tensor x = randn({2, 4});
  CHECK(max_abs_diff(a->forward(x), b->forward(x)) == 0.0);
  // A different architecture: a strict load fails naming the keys.
  auto lin = std::make_shared<nn::Linear>(4, 3);
  CHECK_THROWS_WITH(nn::load(lin, path), Catch::Contains("Unexpected key(s) in state_dict:") && Catch::Contains("\"fc1.weight\"") &&
                                              Catch::Contains("Missing key(s) in state_dict: \"weight\", \"bias\""));
  std::filesystem::remove(path);
}

TEST_CASE("forward_scope calls the installed factory with the module", "[nn][amp]") {
  std::vector<std::string> seen;
  nn::set_forward_scope_factory([&](const nn::Module& m) -> std::shared_ptr<void> {
    seen.push_back(m.path());
    return nullptr;
  });
  auto net = std::make_shared<Net>();
  auto seq = std::make_shared<nn::Sequential>(std::make_shared<nn::ReLU>());
  net->register_module("extra", seq);
  net->forward(ones({1, 4}));
  seq->forward(ones({1}));
  nn::set_forward_scope_factory(nullptr);
  CHECK(seen == std::vector<std::string>{"fc1", "block.fc", "fc2", "extra", "extra.0"});
  net->forward(ones({1, 4}));
  CHECK(seen.size() == 5);
}
