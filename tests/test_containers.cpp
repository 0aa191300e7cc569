// nn::ModuleDict, nn::ParameterList and nn::ParameterDict: names in the state dict as PyTorch's
// (own parameters first, then "<container>.<key>"), replacement in place, removal, errors that name
// the key or index, gradients reaching the held parameters, and replication through DataParallel.
#include <catch2/catch.hpp>

#include "gradcheck.h"
#include "minidl.h"
#include "nn/nn.h"

using namespace minidl;
using minidl::testing::max_abs_diff;

namespace {

// A model that picks a head by name and scales each layer by a learned per-layer gain: the three
// containers registered beside a plain parameter.
struct MultiHead : nn::Cloneable<MultiHead, nn::Layer> {
  Tensor offset;
  std::shared_ptr<nn::ParameterList> gains;
  std::shared_ptr<nn::ModuleDict> heads;
  std::shared_ptr<nn::ParameterDict> bias;
  MultiHead() {
    offset = register_parameter("offset", zeros({3}));
    gains = register_module("gains", std::make_shared<nn::ParameterList>(std::vector<Tensor>{ones({3}), full({3}, 0.5)}));
    heads = register_module("heads", std::make_shared<nn::ModuleDict>(std::vector<std::pair<std::string, nn::ModulePtr>>{
                                         {"digits", std::make_shared<nn::Linear>(3, 4)},
                                         {"parity", std::make_shared<nn::Linear>(3, 2)}}));
    bias = register_module("bias", std::make_shared<nn::ParameterDict>(
                                       std::vector<std::pair<std::string, Tensor>>{{"digits", zeros({4})}, {"parity", zeros({2})}}));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = add(x, offset);
    for (size_t i = 0; i < gains->size(); ++i) h = mul(h, (*gains)[static_cast<int64_t>(i)]);
    return add(heads->at<nn::Linear>("digits")->forward(h), (*bias)["digits"]);
  }
};

}  // namespace

TEST_CASE("the containers name their entries as PyTorch's state dict does", "[nn][container]") {
  MultiHead net;
  // Own parameters, then each child's in registration order (torch: offset, gains.0, gains.1,
  // heads.digits.weight, heads.digits.bias, heads.parity.weight, heads.parity.bias, bias.digits, bias.parity).
  const std::vector<std::string> expected{"offset",          "gains.0",           "gains.1",
                                          "heads.digits.weight", "heads.digits.bias", "heads.parity.weight",
                                          "heads.parity.bias",   "bias.digits",       "bias.parity"};
  CHECK(net.state_dict().keys() == expected);
  CHECK((*net.gains)[1].name() == "gains.1");
  CHECK((*net.bias)["parity"].name() == "bias.parity");
  for (const Tensor& p : net.parameters()) CHECK(p.requires_grad());
  CHECK(net.num_parameters() == 3 + 6 + (12 + 4) + (6 + 2) + 6);
  CHECK_THAT(net.summary(), Catch::Contains("(gains): ParameterList((0): Parameter [3] f32, (1): Parameter [3] f32)") &&
                                Catch::Contains("(digits): Linear(3 -> 4, bias)"));
}

TEST_CASE("ModuleDict: insertion order, replacement in place, pop and clear, errors naming the key", "[nn][container]") {
  auto heads = std::make_shared<nn::ModuleDict>();
  auto a = std::make_shared<nn::Linear>(2, 2), b = std::make_shared<nn::Linear>(2, 3);
  heads->insert("b", b);
  heads->insert("a", a);
  CHECK(heads->keys() == std::vector<std::string>{"b", "a"});
  CHECK(heads->contains("a"));
  CHECK_FALSE(heads->contains("c"));
  CHECK(heads->at<nn::Linear>("a") == a);
  CHECK_THROWS_WITH(heads->at<nn::ReLU>("a"), Catch::Contains("ModuleDict") && Catch::Contains("'a' is a Linear"));
  CHECK_THROWS_WITH((*heads)["c"], Catch::Contains("ModuleDict") && Catch::Contains("'c'"));
  CHECK_THROWS_WITH(heads->insert("x.y", a), Catch::Contains("cannot contain"));
  CHECK_THROWS_WITH(heads->insert("n", nullptr), Catch::Contains("null"));

  // d["b"] = c keeps b's place; b is a root again (its parameter names lose the "b." prefix).
  auto c = std::make_shared<nn::Linear>(2, 5);
  heads->insert("b", c);
  CHECK(heads->keys() == std::vector<std::string>{"b", "a"});
  CHECK(heads->at<nn::Linear>("b") == c);
  CHECK(c->weight.name() == "b.weight");
  CHECK(b->weight.name() == "weight");
  CHECK(heads->named_parameters().keys().front() == "b.weight");
  CHECK(heads->named_parameters()["b.weight"].shape() == Shape{5, 2});

  CHECK(heads->pop("b") == c);
  CHECK(heads->keys() == std::vector<std::string>{"a"});
  CHECK(c->weight.name() == "weight");
  CHECK_THROWS_WITH(heads->pop("b"), Catch::Contains("'b'"));
  heads->update({{"z", b}, {"a", c}});
  CHECK(heads->keys() == std::vector<std::string>{"a", "z"});
  CHECK(heads->size() == 2);
  heads->clear();
  CHECK(heads->empty());
  CHECK(heads->parameters().empty());
}

TEST_CASE("ParameterList: append, negative indices, replacement, errors", "[nn][container]") {
  nn::ParameterList list;
  Tensor w = randn({2, 3});
  CHECK(list.append(w).is_same(w));
  list.extend({ones({4}), zeros({1})});
  CHECK(list.size() == 3);
  CHECK(list[0].is_same(w));
  CHECK(list[-1].shape() == Shape{1});
  CHECK(list.named_parameters().keys() == std::vector<std::string>{"0", "1", "2"});
  CHECK(w.requires_grad());

  Tensor v = full({4}, 2.0);
  list.set(-2, v);
  CHECK(list[1].is_same(v));
  CHECK(list.named_parameters().keys() == std::vector<std::string>{"0", "1", "2"});
  CHECK(v.requires_grad());

  CHECK_THROWS_WITH(list[3], Catch::Contains("ParameterList") && Catch::Contains("index 3 is out of range for 3"));
  CHECK_THROWS_WITH(list[-4], Catch::Contains("index -4 is out of range"));
  CHECK_THROWS_WITH(list.set(5, v), Catch::Contains("index 5 is out of range"));
  CHECK_THROWS_WITH(list.append(zeros({2}, DType::I64)), Catch::Contains("only floating point parameters"));
  Tensor leaf = ones({2}, TensorOptions().requires_grad());
  CHECK_THROWS_WITH(list.append(mul(leaf, 2.0)), Catch::Contains("must be a leaf tensor"));
  CHECK_THROWS_WITH(list.append(Tensor()), Catch::Contains("undefined"));
  CHECK(list.size() == 3);  // the refused tensors were not registered
}

TEST_CASE("ParameterDict: keys in insertion order, replacement in place, pop, clear", "[nn][container]") {
  nn::ParameterDict dict({{"scale", ones({2})}, {"shift", zeros({2})}});
  CHECK(dict.keys() == std::vector<std::string>{"scale", "shift"});
  Tensor s = full({2}, 3.0);
  dict.insert("scale", s);
  CHECK(dict.keys() == std::vector<std::string>{"scale", "shift"});
  CHECK(dict["scale"].is_same(s));
  CHECK(dict.items().size() == 2);
  CHECK_THROWS_WITH(dict["gain"], Catch::Contains("ParameterDict") && Catch::Contains("'gain'"));
  CHECK(dict.pop("scale").is_same(s));
  CHECK(dict.keys() == std::vector<std::string>{"shift"});
  CHECK_FALSE(dict.contains("scale"));
  CHECK_THROWS_WITH(dict.pop("scale"), Catch::Contains("'scale'"));
  dict.insert("scale", s);  // back, now at the end
  CHECK(dict.keys() == std::vector<std::string>{"shift", "scale"});
  dict.clear();
  CHECK(dict.empty());
}

TEST_CASE("held parameters train: gradients, optimizer steps and a state-dict round trip", "[nn][container]") {
  manual_seed(3);
  MultiHead net;
  Tensor x = randn({5, 3});
  Tensor y = net.forward(x);
  sum(y).backward();
  for (const auto& [name, p] : net.named_parameters()) {
    const bool used = name.rfind("heads.parity", 0) != 0 && name != "bias.parity";
    INFO(name);
    CHECK(p.grad().defined() == used);
  }
  // d/d bias.digits of sum(y) is the batch size for every output.
  CHECK(max_abs_diff((*net.bias)["digits"].grad(), full({4}, 5.0)) == 0.0);

  optim::SGD sgd(net.parameters(), optim::SGDOptions(0.1));
  sgd.step();
  CHECK(max_abs_diff((*net.bias)["digits"], full({4}, -0.5)) < 1e-7);

  MultiHead copy;
  copy.load_state_dict(net.state_dict());
  CHECK(max_abs_diff(copy.forward(x), net.forward(x)) == 0.0);
}

TEST_CASE("models with the containers replicate through DataParallel", "[nn][container][data_parallel]") {
  manual_seed(5);
  auto net = std::make_shared<MultiHead>();
  net->gains->set(1, randn({3}));
  dist::DataParallel dp(net, 2, dist::DataParallelOptions().replicate());
  Tensor x = randn({6, 3});
  Tensor ref = net->forward(x);
  Tensor out = dp.forward(x);
  CHECK(max_abs_diff(out, ref) < 8 * traits(DType::F32).eps * (1 + max_abs_diff(ref, zeros_like(ref))));
  sum(out).backward();
  const Tensor g_dp = (*net->gains)[1].grad().clone();
  net->zero_grad();
  sum(net->forward(x)).backward();
  CHECK(max_abs_diff(g_dp, (*net->gains)[1].grad()) < 1e-5);
}
