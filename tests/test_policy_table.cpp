// The autocast policy table lists exactly the ops that consult autocast. Two directions:
// - every row is consulted by the op of its name: with the row overridden to a policy that leaves
//   a mark (Banned throws, naming the op), calling the op under autocast throws; with the override
//   reset, it runs. The op list below must name every row, and no other.
// - every OpPolicy declared in the op family sources is a row (so no declared policy can be left
//   out of its family's list), and a call site that consults autocast names a declared policy.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "gradcheck.h"
#include "random_values.h"

using namespace minidl;

namespace {
Tensor rand_t(const Shape& s, double lo = 0.1, double hi = 0.9) { return testing::random_tensor(s, 7, lo, hi).to(DType::F32).requires_grad_(); }
Tensor target01(const Shape& s) { return testing::random_tensor(s, 8, 0, 1).to(DType::F32); }

// One call per op in the table, on small CPU inputs that the op accepts.
const std::map<std::string, std::function<void()>>& op_calls() {
  static const std::map<std::string, std::function<void()>> calls = {
      {"mm", [] { mm(rand_t({2, 3}), rand_t({3, 2})); }},
      {"bmm", [] { bmm(rand_t({1, 2, 3}), rand_t({1, 3, 2})); }},
      {"matmul", [] { matmul(rand_t({2, 3}), rand_t({3})); }},
      {"addmm", [] { addmm(rand_t({2}), rand_t({2, 3}), rand_t({3, 2})); }},
      {"linear", [] { linear(rand_t({2, 3}), rand_t({4, 3}), rand_t({4})); }},
      {"conv2d", [] { conv2d(rand_t({1, 1, 4, 4}), rand_t({1, 1, 3, 3}), rand_t({1})); }},
      {"conv_transpose2d", [] { conv_transpose2d(rand_t({1, 1, 3, 3}), rand_t({1, 1, 2, 2}), rand_t({1})); }},
      {"cross_entropy", [] { cross_entropy(rand_t({2, 3}), from_vector<int64_t>({0, 2})); }},
      {"nll_loss", [] { nll_loss(rand_t({2, 3}, -2, -1), from_vector<int64_t>({1, 0})); }},
      {"mse_loss", [] { mse_loss(rand_t({3}), rand_t({3})); }},
      {"l1_loss", [] { l1_loss(rand_t({3}), rand_t({3})); }},
      {"binary_cross_entropy", [] { binary_cross_entropy(rand_t({3}), target01({3})); }},
      {"binary_cross_entropy_with_logits", [] { binary_cross_entropy_with_logits(rand_t({3}), target01({3})); }},
      {"smooth_l1_loss", [] { smooth_l1_loss(rand_t({3}), rand_t({3})); }},
      {"huber_loss", [] { huber_loss(rand_t({3}), rand_t({3})); }},
      {"kl_div", [] { kl_div(rand_t({2, 3}, -2, -1), target01({2, 3}), KLDivReduction::BatchMean); }},
      {"logsumexp", [] { logsumexp(rand_t({2, 3}), {1}); }},
      {"exp", [] { exp(rand_t({3})); }},
      {"log", [] { log(rand_t({3})); }},
      {"rsqrt", [] { rsqrt(rand_t({3})); }},
      {"pow", [] { pow(rand_t({3}), rand_t({3})); }},
      {"remainder", [] { remainder(rand_t({3}), rand_t({3})); }},
      {"fmod", [] { fmod(rand_t({3}), rand_t({3})); }},
      {"softplus", [] { softplus(rand_t({3})); }},
      {"prelu", [] { prelu(rand_t({2, 3}), rand_t({3})); }},
      {"reflection_pad1d", [] { pad(rand_t({1, 2, 4}), {1, 2}, PadMode::Reflect); }},
      {"reflection_pad2d", [] { pad(rand_t({1, 1, 3, 4}), {1, 1, 2, 0}, PadMode::Reflect); }},
      {"replication_pad1d", [] { pad(rand_t({2, 3}), {1, 1}, PadMode::Replicate); }},
      {"replication_pad2d", [] { pad(rand_t({1, 2, 2}), {1, 0, 0, 1}, PadMode::Replicate); }},
      {"replication_pad3d", [] { pad(rand_t({1, 1, 2, 2, 2}), {1, 1, 1, 1, 1, 1}, PadMode::Replicate); }},
      {"softmax", [] { softmax(rand_t({2, 3}), 1); }},
      {"log_softmax", [] { log_softmax(rand_t({2, 3}), 1); }},
      {"sum", [] { sum(rand_t({2, 3})); }},
      {"tan", [] { tan(rand_t({3})); }},
      {"asin", [] { asin(rand_t({3})); }},
      {"acos", [] { acos(rand_t({3})); }},
      {"sinh", [] { sinh(rand_t({3})); }},
      {"cosh", [] { cosh(rand_t({3})); }},
      {"log1p", [] { log1p(rand_t({3})); }},
      {"expm1", [] { expm1(rand_t({3})); }},
      {"log2", [] { log2(rand_t({3})); }},
      {"log10", [] { log10(rand_t({3})); }},
      {"erfinv", [] { erfinv(rand_t({3})); }},
      {"reciprocal", [] { reciprocal(rand_t({3})); }},
      {"atan2", [] { atan2(rand_t({3}), rand_t({3})); }},
      {"dot", [] { dot(rand_t({3}), rand_t({3})); }},
      {"cosine_similarity", [] { cosine_similarity(rand_t({2, 3}), rand_t({2, 3})); }},
      {"cdist", [] { cdist(rand_t({2, 3}), rand_t({4, 3})); }},
      {"margin_ranking_loss", [] { margin_ranking_loss(rand_t({3}), rand_t({3}), target01({3})); }},
      {"hinge_embedding_loss", [] { hinge_embedding_loss(rand_t({3}), target01({3})); }},
      {"soft_margin_loss", [] { soft_margin_loss(rand_t({3}), target01({3})); }},
      {"cosine_embedding_loss", [] { cosine_embedding_loss(rand_t({2, 3}), rand_t({2, 3}), target01({2})); }},
      {"triplet_margin_loss", [] { triplet_margin_loss(rand_t({2, 3}), rand_t({2, 3}), rand_t({2, 3})); }},
      {"multi_margin_loss", [] { multi_margin_loss(rand_t({2, 3}), from_vector<int64_t>({0, 2})); }},
      {"poisson_nll_loss", [] { poisson_nll_loss(rand_t({3}), target01({3})); }},
      {"cumsum", [] { cumsum(rand_t({2, 3}), 1); }},
      {"cumprod", [] { cumprod(rand_t({2, 3}), 1); }},
      {"scatter_add", [] { scatter_add(rand_t({2, 3}), 0, from_vector<int64_t>({1, 0, 1}, {1, 3}), rand_t({1, 3})); }},
      {"norm", [] { norm(rand_t({2, 3}), 2.0, {1}); }},
      {"cat", [] { cat({rand_t({2}), rand_t({3})}); }},
      {"stack", [] { stack({rand_t({2}), rand_t({2})}); }},
      {"max_pool2d", [] { max_pool2d(rand_t({1, 1, 4, 4}), {2, 2}); }},
      {"avg_pool2d", [] { avg_pool2d(rand_t({1, 1, 4, 4}), {2, 2}); }},
      {"adaptive_avg_pool2d", [] { adaptive_avg_pool2d(rand_t({1, 1, 4, 4}), {1, 1}); }},
      {"adaptive_max_pool2d", [] { adaptive_max_pool2d(rand_t({1, 1, 4, 4}), {2, 2}); }},
      {"batch_norm", [] { batch_norm(rand_t({2, 3, 2, 2}), Tensor(), Tensor(), rand_t({3}), rand_t({3}), true); }},
      {"layer_norm", [] { layer_norm(rand_t({2, 3}), {3}, rand_t({3}), rand_t({3})); }},
      {"group_norm", [] { group_norm(rand_t({2, 4, 2}), 2, rand_t({4}), rand_t({4})); }},
      {"conv1d", [] { conv1d(rand_t({1, 1, 4}), rand_t({1, 1, 3}), rand_t({1})); }},
      {"conv_transpose1d", [] { conv_transpose1d(rand_t({1, 1, 4}), rand_t({1, 1, 3}), rand_t({1})); }},
      {"scaled_dot_product_attention", [] { scaled_dot_product_attention(rand_t({2, 3}), rand_t({2, 3}), rand_t({2, 3})); }},
      {"rnn_tanh_cell", [] { rnn_tanh_cell(rand_t({2, 3}), rand_t({2, 2}), rand_t({2, 3}), rand_t({2, 2})); }},
      {"rnn_relu_cell", [] { rnn_relu_cell(rand_t({2, 3}), rand_t({2, 2}), rand_t({2, 3}), rand_t({2, 2})); }},
      {"lstm_cell", [] { lstm_cell(rand_t({2, 3}), rand_t({2, 2}), rand_t({2, 2}), rand_t({8, 3}), rand_t({8, 2})); }},
      {"gru_cell", [] { gru_cell(rand_t({2, 3}), rand_t({2, 2}), rand_t({6, 3}), rand_t({6, 2})); }},
      {"rnn_tanh", [] { recurrent(RecurrentMode::RNNTanh, rand_t({2, 1, 3}), Tensor(), Tensor(), {{rand_t({2, 3}), rand_t({2, 2}), Tensor(), Tensor()}}); }},
      {"rnn_relu", [] { recurrent(RecurrentMode::RNNReLU, rand_t({2, 1, 3}), Tensor(), Tensor(), {{rand_t({2, 3}), rand_t({2, 2}), Tensor(), Tensor()}}); }},
      {"lstm", [] { recurrent(RecurrentMode::LSTM, rand_t({2, 1, 3}), Tensor(), Tensor(), {{rand_t({8, 3}), rand_t({8, 2}), Tensor(), Tensor()}}); }},
      {"gru", [] { recurrent(RecurrentMode::GRU, rand_t({2, 1, 3}), Tensor(), Tensor(), {{rand_t({6, 3}), rand_t({6, 2}), Tensor(), Tensor()}}); }},
      {"grid_sample", [] { grid_sample(rand_t({1, 1, 3, 3}), rand_t({1, 2, 2, 2})); }},
      {"ctc_loss", [] { ctc_loss(log_softmax(rand_t({3, 1, 2}), 2), from_vector<int64_t>({1}, {1, 1}), std::vector<int64_t>{3}, std::vector<int64_t>{1}); }},
  };
  return calls;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("every policy table row is consulted by the op of its name, and the list covers the table", "[amp]") {
  std::set<std::string> rows, listed;
  for (const amp::PolicyRow& r : amp::policy_table()) rows.insert(r.op);
  for (const auto& [op, call] : op_calls()) listed.insert(op);
  CHECK(rows == listed);
  amp::autocast scope(DeviceType::CPU);
  for (const auto& [op, call] : op_calls()) {
    INFO("op " << op);
    REQUIRE_NOTHROW(call());
    amp::set_policy(op, DeviceType::CPU, amp::CastPolicy::Banned);
    CHECK_THROWS_WITH(call(), Catch::Contains(op + ": is unsafe to autocast"));
    amp::reset_policy(op);
    CHECK_NOTHROW(call());
  }
}

TEST_CASE("an op that does not consult autocast has no row and cannot be overridden", "[amp]") {
  CHECK(amp::policy_for("relu", DeviceType::CPU) == amp::CastPolicy::None);
  CHECK_THROWS_WITH(amp::set_policy("relu", DeviceType::CPU, amp::CastPolicy::FP32),
                    Catch::Contains("'relu' does not consult autocast"));
  CHECK_THROWS_WITH(amp::set_policy("embedding", DeviceType::CUDA, amp::CastPolicy::FP32),
                    Catch::Contains("'embedding' does not consult autocast"));
}

TEST_CASE("every OpPolicy declared in the op families is a row, and every consulting call names one", "[amp]") {
  std::set<std::string> rows;
  for (const amp::PolicyRow& r : amp::policy_table()) rows.insert(r.op);
  const std::regex declared(R"re(const amp::OpPolicy (k\w+)\{"(\w+)")re");
  const std::regex consulted(R"re(amp::AutocastInputs \w+\((k\w+),)re");
  std::set<std::string> declared_names, declared_vars, used_vars;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(MINIDL_SOURCE_DIR) / "ops")) {
    if (entry.path().extension() != ".cpp") continue;
    const std::string text = read_file(entry.path());
    for (std::sregex_iterator it(text.begin(), text.end(), declared), end; it != end; ++it) {
      declared_vars.insert(entry.path().filename().string() + ":" + (*it)[1].str());
      declared_names.insert((*it)[2].str());
    }
    for (std::sregex_iterator it(text.begin(), text.end(), consulted), end; it != end; ++it)
      used_vars.insert(entry.path().filename().string() + ":" + (*it)[1].str());
  }
  REQUIRE_FALSE(declared_names.empty());
  CHECK(declared_names == rows);
  for (const std::string& v : used_vars) {
    INFO("consulting call " << v);
    CHECK(declared_vars.count(v) == 1);
  }
}
