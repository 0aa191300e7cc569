// embedding_bag and nn::EmbeddingBag against torch 1.13's (tests/torch_refs/embedding_bag.py): sum,
// mean and max with offsets (an empty bag among them), include_last_offset, padding_idx,
// per_sample_weights and 2-D inputs, values and gradients; max_norm (embedding and embedding_bag: the
// output, the renormalised table, its gradient); f64 gradchecks; the modules' initialisation and
// repr; errors; autocast; a [cuda] case.
#include <catch2/catch.hpp>

#include "minidl.h"
#include "cuda_checks.h"
#include "embedding_bag_torch_values.h"
#include "gradcheck.h"
#include "sine_operands.h"

using namespace minidl;
using Catch::Contains;
using testing::check_printed_case;
using testing::sine_leaves;

namespace {
using Mode = EmbeddingBagMode;
Tensor i64s(std::vector<int64_t> v, Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  return from_vector<int64_t>(v, shape);
}
const Tensor kIndices = i64s({1, 2, 4, 5, 4, 3, 2, 9});
const Tensor kOffsets = i64s({0, 3, 3, 6});
const Tensor kLast = i64s({0, 2, 2, 8});

EmbeddingBagFuncOptions bags(Mode mode, const Tensor& offsets = kOffsets) { return EmbeddingBagFuncOptions().offsets(offsets).mode(mode); }

struct Case {
  std::string name;
  std::vector<Shape> shapes;
  std::function<Tensor(const std::vector<Tensor>&)> fn;
};
// The cases of the torch script, their index tensors on `device`.
std::vector<Case> cases(Device device = Device::cpu()) {
  const Tensor idx = kIndices.to(device), off = kOffsets.to(device), last = kLast.to(device);
  auto on = [=](Mode m, const Tensor& o) { return EmbeddingBagFuncOptions().offsets(o).mode(m); };
  return {
      {"sum_offsets", {{10, 3}}, [=](auto& x) { return embedding_bag(idx, x[0], on(Mode::Sum, off)); }},
      {"mean_offsets", {{10, 3}}, [=](auto& x) { return embedding_bag(idx, x[0], on(Mode::Mean, off)); }},
      {"max_offsets", {{10, 3}}, [=](auto& x) { return embedding_bag(idx, x[0], on(Mode::Max, off)); }},
      {"mean_padding", {{10, 3}}, [=](auto& x) { return embedding_bag(idx, x[0], on(Mode::Mean, off).padding_idx(4)); }},
      {"max_padding", {{10, 3}}, [=](auto& x) { return embedding_bag(idx, x[0], on(Mode::Max, off).padding_idx(2)); }},
      {"sum_last", {{10, 3}}, [=](auto& x) { return embedding_bag(idx, x[0], on(Mode::Sum, last).include_last_offset(true)); }},
      {"max_last", {{10, 3}}, [=](auto& x) { return embedding_bag(idx, x[0], on(Mode::Max, last).include_last_offset(true)); }},
      {"sum_weighted", {{10, 3}, {8}},
       [=](auto& x) { return embedding_bag(idx, x[0], on(Mode::Sum, off).per_sample_weights(x[1])); }},
      {"mean_2d", {{10, 3}},
       [=](auto& x) { return embedding_bag(idx.reshape({2, 4}), x[0], EmbeddingBagFuncOptions().mode(Mode::Mean)); }},
      {"sum_2d_padding", {{10, 3}},
       [=](auto& x) { return embedding_bag(idx.reshape({4, 2}), x[0], EmbeddingBagFuncOptions().mode(Mode::Sum).padding_idx(4)); }},
  };
}
}  // namespace

TEST_CASE("embedding_bag matches torch: values and gradients of every mode", "[embedding_bag][torch]") {
  for (const Case& c : cases()) {
    std::vector<Tensor> in = sine_leaves(c.shapes);
    check_printed_case(torch_embedding_bag_values(), c.name, c.fn(in), in);
  }
}

TEST_CASE("embedding_bag: f64 finite-difference gradients", "[embedding_bag][gradcheck]") {
  for (const Case& c : cases()) {
    INFO(c.name);
    std::vector<Tensor> in = sine_leaves(c.shapes, 3);
    CHECK(testing::check_gradients(c.fn, in, 1e-6, 1e-7) == "");
  }
}

TEST_CASE("embedding_bag: empty inputs and bags, elements after the last offset, i32 indices", "[embedding_bag]") {
  Tensor w = sine_leaves({{10, 3}})[0];
  // No bags: [0, dim]. No elements: every bag zeros (max too).
  CHECK(embedding_bag(kIndices, w, bags(Mode::Sum, i64s({}))).shape() == Shape{0, 3});
  for (Mode m : {Mode::Sum, Mode::Mean, Mode::Max}) {
    Tensor y = embedding_bag(i64s({}), w, bags(m, i64s({0, 0})));
    CHECK(y.shape() == Shape{2, 3});
    CHECK(testing::max_abs_diff(y, zeros({2, 3}, DType::F64)) == 0.0);
  }
  // A bag of only padding: zeros in every mode; i32 indices and offsets as i64 ones.
  for (Mode m : {Mode::Sum, Mode::Mean, Mode::Max}) {
    Tensor y = embedding_bag(i64s({4, 4, 1}), w, bags(m, i64s({0, 2})).padding_idx(4));
    CHECK(testing::max_abs_diff(y.select(0, 0), zeros({3}, DType::F64)) == 0.0);
    Tensor y32 = embedding_bag(cast(i64s({4, 4, 1}), DType::I32), w, bags(m, cast(i64s({0, 2}), DType::I32)).padding_idx(4));
    CHECK(testing::max_abs_diff(y, y32) == 0.0);
  }
  // With include_last_offset, elements after the last offset belong to no bag (minidl's reading;
  // torch 1.13 reads past its buffers there).
  Tensor cut = embedding_bag(kIndices, w, bags(Mode::Sum, i64s({0, 2, 5})).include_last_offset(true));
  Tensor whole = embedding_bag(kIndices.narrow(0, 0, 5), w, bags(Mode::Sum, i64s({0, 2})));
  CHECK(testing::max_abs_diff(cut, whole) == 0.0);
}

TEST_CASE("embedding_bag: errors name the op and the problem", "[embedding_bag]") {
  Tensor w = ones({10, 3});
  CHECK_THROWS_WITH(embedding_bag(kIndices, w, bags(Mode::Sum, i64s({1, 4}))), Contains("embedding_bag") && Contains("offsets[0] has to be 0"));
  CHECK_THROWS_WITH(embedding_bag(kIndices, w, bags(Mode::Sum, i64s({0, 4, 3}))), Contains("offsets must be non-decreasing"));
  CHECK_THROWS_WITH(embedding_bag(kIndices, w, bags(Mode::Sum, i64s({0, 9}))),
                    Contains("offsets[-1] can not be greater than the input's length 8, got 9"));
  CHECK_THROWS_WITH(embedding_bag(kIndices, w, bags(Mode::Mean).per_sample_weights(ones({8}))),
                    Contains("per_sample_weights is only supported for mode sum"));
  CHECK_THROWS_WITH(embedding_bag(kIndices, w, bags(Mode::Sum).per_sample_weights(ones({7}))),
                    Contains("must have the input's shape [8]"));
  CHECK_THROWS_WITH(embedding_bag(kIndices.reshape({2, 4}), w, bags(Mode::Sum)), Contains("if input is 2D, then offsets has to be undefined"));
  CHECK_THROWS_WITH(embedding_bag(kIndices, w), Contains("offsets has to be a 1-D tensor with a 1-D input"));
  CHECK_THROWS_WITH(embedding_bag(kIndices.reshape({2, 2, 2}), w), Contains("input has to be a 1-D or 2-D tensor"));
  CHECK_THROWS_WITH(embedding_bag(cast(kIndices, DType::F32), w, bags(Mode::Sum)), Contains("expected an i64 or i32 index tensor"));
  CHECK_THROWS_WITH(embedding_bag(i64s({1, 10}), w, bags(Mode::Sum, i64s({0}))), Contains("index 10 is out of range for a table of 10 rows"));
  CHECK_THROWS_WITH(embedding_bag(i64s({1, -1}), w, bags(Mode::Sum, i64s({0}))), Contains("index -1 is out of range"));
  CHECK_THROWS_WITH(embedding_bag(kIndices, w, bags(Mode::Sum).padding_idx(10)), Contains("padding_idx 10 must be within num_embeddings"));
  CHECK_THROWS_WITH(embedding_bag(kIndices, ones({10}), bags(Mode::Sum)), Contains("weight must be 2-D"));
}

TEST_CASE("nn::EmbeddingBag: PyTorch's initialisation, repr, forward forms, autocast", "[embedding_bag][nn]") {
  Generator gen(3);
  nn::EmbeddingBag bag(nn::EmbeddingBagOptions(10, 3).mode(Mode::Sum).padding_idx(-1), &gen);
  CHECK(bag.describe() == "EmbeddingBag(10, 3, mode=sum, padding_idx=9)");
  CHECK(nn::EmbeddingBag(nn::EmbeddingBagOptions(10, 3)).describe() == "EmbeddingBag(10, 3, mode=mean)");
  CHECK(bag.state_dict().keys() == std::vector<std::string>{"weight"});
  CHECK(sum(abs(bag.weight.select(0, 9))).item() == 0.0);
  CHECK(sum(abs(bag.weight.select(0, 8))).item() > 0.0);
  Tensor y = bag.forward(kIndices, kOffsets);
  CHECK(testing::max_abs_diff(y, embedding_bag(kIndices, bag.weight, bags(Mode::Sum).padding_idx(9))) == 0.0);
  CHECK(testing::max_abs_diff(bag.forward(kIndices.reshape({2, 4})),
                              embedding_bag(kIndices.reshape({2, 4}), bag.weight, EmbeddingBagFuncOptions().mode(Mode::Sum).padding_idx(9))) == 0.0);
  Tensor psw = full({8}, 2.0);
  CHECK(testing::max_abs_diff(bag.forward(kIndices, kOffsets, psw), mul(y, 2.0)) < 1e-6);
  // Not on PyTorch's autocast lists: an f32 table gives f32 under bf16 autocast.
  {
    amp::autocast scope(DeviceType::CPU);
    CHECK(bag.forward(kIndices, kOffsets).dtype() == DType::F32);
  }
  sum(bag.forward(kIndices, kOffsets)).backward();
  REQUIRE(bag.weight.grad().defined());
  // Row 4 is taken twice, row 9 (padding) takes no part.
  CHECK(bag.weight.grad().select(0, 4).to_vector<float>() == std::vector<float>{2, 2, 2});
  CHECK(bag.weight.grad().select(0, 9).to_vector<float>() == std::vector<float>{0, 0, 0});
}

TEST_CASE("cuda: embedding_bag agrees with the CPU, values and gradients", "[cuda][embedding_bag]") {
  using namespace minidl::cuda_test;
  MINIDL_REQUIRE_GPU();
  const std::vector<Case> on_cpu = cases(), on_device = cases(kCuda);
  for (size_t i = 0; i < on_cpu.size(); ++i) {
    const Case& c = on_cpu[i];
    INFO(c.name);
    std::vector<Tensor> cpu, dev;
    for (size_t k = 0; k < c.shapes.size(); ++k) {
      const Tensor v = cast(testing::sine_operand(static_cast<int>(k), c.shapes[k]), DType::F32);
      cpu.push_back(v.clone().requires_grad_());
      dev.push_back(v.to(kCuda).requires_grad_());
    }
    const Tensor yc = c.fn(cpu);
    const Tensor yd = on_device[i].fn(dev);
    sum(mul(yc, yc)).backward();
    sum(mul(yd, yd)).backward();
    check_close(yd.to(Device::cpu()), yc, 1e-6, 1e-6, "output");
    for (size_t k = 0; k < cpu.size(); ++k)
      check_close(dev[k].grad().to(Device::cpu()), cpu[k].grad(), 1e-5, 1e-5, "gradient " + std::to_string(k));
  }
}

TEST_CASE("max_norm renormalises the named rows in place, as torch's embedding_renorm_", "[embedding_bag][embedding]") {
  const auto& want = torch_embedding_bag_values();
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> cases{
      {"renorm_embedding", [](const Tensor& w) { return embedding(kIndices.reshape({2, 4}), w, std::nullopt, 1.0); }},
      {"renorm_embedding_p1", [](const Tensor& w) { return embedding(kIndices, w, 2, 1.5, 1.0); }},
      {"renorm_bag", [](const Tensor& w) { return embedding_bag(kIndices, w, bags(Mode::Sum).max_norm(1.2)); }},
  };
  for (const auto& [key, f] : cases) {
    INFO(key);
    Tensor w = mul(testing::sine_operand(0, {10, 3}), 1.5).requires_grad_();
    Tensor y = f(w);
    testing::check_printed_values(y, want.at(key + ".value"));
    testing::check_printed_values(w, want.at(key + ".table"));
    sum(mul(y, testing::cosine_weights(y.shape()))).backward();
    testing::check_printed_values(w.grad(), want.at(key + ".grad0"));
  }
  // The modules: reprs as PyTorch's, the same renormalisation.
  nn::Embedding e(nn::EmbeddingOptions(10, 3).padding_idx(2).max_norm(1.0).norm_type(1.0));
  CHECK(e.describe() == "Embedding(10, 3, padding_idx=2, max_norm=1.0, norm_type=1.0)");
  nn::EmbeddingBag b(nn::EmbeddingBagOptions(10, 3).max_norm(2.0).padding_idx(1));
  CHECK(b.describe() == "EmbeddingBag(10, 3, max_norm=2.0, mode=mean, padding_idx=1)");
  {
    NoGradGuard no_grad;
    e.weight.copy_(mul(testing::sine_operand(0, {10, 3}), 3.0));
  }
  e.forward(kIndices);
  const Tensor row_norms = norm(e.weight.detach(), 1.0, {1});
  for (int64_t r : {1, 3, 4, 5, 9}) CHECK(row_norms.select(0, r).item() <= 1.0 + 1e-6);
  CHECK(row_norms.select(0, 0).item() > 1.0);  // not named: untouched
  CHECK_THROWS_WITH(embedding_renorm_(e.weight, i64s({10}), 1.0), Contains("embedding_renorm_: an index is out of range"));
}
