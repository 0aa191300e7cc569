// channel_shuffle, local_response_norm, lp_pool1d/2d and max_unpool1d/2d with their layers: values
// and gradients against torch 1.13's (tests/torch_refs/cnn_extras.py; channel_shuffle's gradient
// from the same rearrangement written in view and transpose, as 1.13 has none), f64 gradient
// checks to second order, reprs, errors, and a [cuda] case.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cnn_extras_torch_values.h"
#include "cuda_checks.h"
#include "gradcheck.h"
#include "minidl.h"
#include "nn/python_repr.h"
#include "sine_operands.h"

using namespace minidl;
using Catch::Contains;
using testing::sine_operand;

namespace {
struct Case {
  Shape shape;
  testing::TensorFn fn;
  bool smooth = true;  // no kinks near the operands: a finite-difference check applies
};
Tensor positive(const Tensor& x) { return add(abs(x), 0.1); }
Tensor unpool2d(const Tensor& x, int64_t k, int64_t s, std::optional<Size2> out = std::nullopt) {
  const MaxPoolResult r = max_pool2d_with_indices(x, {k, k}, {s, s});
  return max_unpool2d(r.values, r.indices, {k, k}, {s, s}, {0, 0}, out);
}
const std::map<std::string, Case>& cases() {
  static const std::map<std::string, Case> c = {
      {"channel_shuffle 3d", {{2, 6, 2}, [](const auto& x) { return channel_shuffle(x[0], 3); }}},
      {"channel_shuffle 4d", {{1, 4, 2, 2}, [](const auto& x) { return channel_shuffle(x[0], 2); }}},
      {"local_response_norm 3d", {{2, 5, 3}, [](const auto& x) { return local_response_norm(x[0], 3); }}},
      {"local_response_norm 4d", {{2, 6, 2, 2}, [](const auto& x) { return local_response_norm(x[0], 4, 0.1, 0.6, 2.0); }}},
      {"local_response_norm 5d size1", {{1, 3, 2, 2, 2}, [](const auto& x) { return local_response_norm(x[0], 1, 0.5); }}},
      {"lp_pool2d p2", {{1, 2, 4, 5}, [](const auto& x) { return lp_pool2d(positive(x[0]), 2, {2, 2}); }, false}},
      {"lp_pool2d p3 rect stride1", {{1, 2, 4, 5}, [](const auto& x) { return lp_pool2d(positive(x[0]), 3, {2, 3}, {1, 1}); }, false}},
      {"lp_pool2d p1.5 ceil", {{1, 1, 6, 7}, [](const auto& x) { return lp_pool2d(positive(x[0]), 1.5, {3, 3}, {2, 2}, true); }, false}},
      {"lp_pool1d p2", {{2, 3, 8}, [](const auto& x) { return lp_pool1d(positive(x[0]), 2, 3, 2); }, false}},
      {"max_unpool2d overlapping", {{1, 2, 5, 5}, [](const auto& x) { return unpool2d(x[0], 3, 2); }, false}},
      {"max_unpool2d output_size", {{2, 1, 4, 4}, [](const auto& x) { return unpool2d(x[0], 2, 2, Size2{5, 5}); }, false}},
      {"max_unpool1d output_size",
       {{2, 3, 6},
        [](const auto& x) {
          const MaxPoolResult r = max_pool1d_with_indices(x[0], 2, 2);
          return max_unpool1d(r.values, r.indices, 2, 2, 0, 7);
        },
        false}},
  };
  return c;
}
}  // namespace

TEST_CASE("channel_shuffle, local_response_norm, lp_pool and max_unpool match torch: values and gradients", "[nn][cnn_extras]") {
  const auto& want = torch_cnn_extras_values();
  for (const auto& [name, c] : cases()) {
    const std::vector<Tensor> xs{sine_operand(0, c.shape).requires_grad_()};
    testing::check_printed_case(want, name, c.fn(xs), xs);
  }
}

TEST_CASE("channel_shuffle, local_response_norm and lp_pool: f64 gradient checks, first and second order",
          "[nn][cnn_extras][gradcheck]") {
  for (const auto& [name, c] : cases()) {
    INFO(name);
    std::vector<Tensor> xs{sine_operand(3, c.shape).requires_grad_()};
    if (!c.smooth) xs[0] = add(abs(sine_operand(3, c.shape)), 0.2).detach().requires_grad_();  // away from |x|'s kink
    if (name.rfind("max_unpool", 0) == 0) continue;  // piecewise: the printed gradients above are its check
    CHECK(testing::check_gradients(c.fn, xs, 1e-6, 1e-6) == "");
    CHECK(testing::check_second_order(c.fn, xs, 1e-6, 1e-5) == "");
  }
  // max_unpool's own backward (a gather at the indices) against finite differences, with fixed
  // distinct indices (where windows overlap and share a maximum, only the last copy lands in the
  // output, yet each copy gets the gradient, as PyTorch's: no finite difference sees that).
  const MaxPoolResult r = max_pool2d_with_indices(sine_operand(2, {2, 2, 6, 6}), {2, 2}, {2, 2});
  const testing::TensorFn unpool = [&](const std::vector<Tensor>& in) {
    return max_unpool2d(in[0], r.indices, {2, 2}, {2, 2});
  };
  std::vector<Tensor> pooled{r.values.detach().requires_grad_()};
  CHECK(testing::check_gradients(unpool, pooled, 1e-6, 1e-6) == "");
  CHECK(testing::check_second_order(unpool, pooled, 1e-6, 1e-5) == "");
}

TEST_CASE("the layers print as torch's and call their ops", "[nn][cnn_extras]") {
  const auto& reprs = torch_cnn_extras_reprs();
  CHECK(nn::ChannelShuffle(3).describe() == reprs.at("channel_shuffle"));
  CHECK(nn::LocalResponseNorm(3).describe() == reprs.at("lrn"));
  CHECK(nn::LPPool2d(2, {3, 3}, {2, 2}).describe() == reprs.at("lp_pool2d"));
  CHECK(nn::LPPool1d(1.5, 2).describe() == reprs.at("lp_pool1d"));
  CHECK(nn::MaxUnpool2d({2, 2}).describe() == reprs.at("max_unpool2d"));
  CHECK(nn::MaxUnpool1d(3, 2, 1).describe() == reprs.at("max_unpool1d"));
  Tensor x = sine_operand(1, {2, 4, 6, 6});
  CHECK(testing::max_abs_diff(nn::LocalResponseNorm(3).forward(x), local_response_norm(x, 3)) == 0.0);
  CHECK(testing::max_abs_diff(nn::ChannelShuffle(2).forward(x), channel_shuffle(x, 2)) == 0.0);
  CHECK(testing::max_abs_diff(nn::LPPool2d(2, {2, 2}).forward(positive(x)), lp_pool2d(positive(x), 2, {2, 2})) == 0.0);
  const MaxPoolResult r = max_pool2d_with_indices(positive(x), {2, 2}, {2, 2});
  nn::MaxUnpool2d unpool({2, 2});
  Tensor restored = unpool.forward(r.values, r.indices);
  CHECK(restored.shape() == x.shape());
  // Unpooling puts every (positive) maximum back where it was: pooling again gives the same maxima.
  CHECK(testing::max_abs_diff(max_pool2d(restored, {2, 2}, {2, 2}), r.values) == 0.0);
}

TEST_CASE("the new ops refuse bad input with torch's words", "[nn][cnn_extras][errors]") {
  CHECK_THROWS_WITH(channel_shuffle(ones({2, 3, 4}), 2),
                    Contains("channel_shuffle") && Contains("Number of channels must be divisible by groups. Got 3 channels and 2 groups."));
  CHECK_THROWS_WITH(channel_shuffle(ones({2, 4, 4}), 0), Contains("Number of groups to divide channels in must be positive"));
  CHECK_THROWS_WITH(channel_shuffle(ones({4, 2}), 2), Contains("channel_shuffle expects input with > 2 dims"));
  CHECK_THROWS_WITH(local_response_norm(ones({2, 3}), 2),
                    Contains("local_response_norm") && Contains("Expected 3D or higher dimensionality input (got 2 dimensions)"));
  CHECK_THROWS_WITH(lp_pool2d(ones({1, 1, 1, 1}), 2, {2, 2}), Contains("avg_pool2d"));
  CHECK_THROWS_WITH(lp_pool1d(ones({1, 1, 4}), 0.0, 2), Contains("lp_pool1d") && Contains("norm_type"));
  Tensor v = ones({1, 1, 2, 2});
  CHECK_THROWS_WITH(max_unpool2d(v, from_vector<int64_t>({0, 1, 2, 17}, {1, 1, 2, 2}), {2, 2}),
                    Contains("max_unpool2d") && Contains("Found an invalid max index: 17 (output volumes are of size [4, 4])"));
  CHECK_THROWS_WITH(max_unpool2d(v, zeros({1, 1, 2, 3}, DType::I64), {2, 2}),
                    Contains("Expected shape of indices to be same as that of the input tensor ([1, 1, 2, 2]) but got indices "
                             "tensor with shape: [1, 1, 2, 3]"));
  CHECK_THROWS_WITH(max_unpool2d(v, zeros({1, 1, 2, 2}, DType::I32), {2, 2}), Contains("should be type int64"));
}

TEST_CASE("cuda: the new ops agree with the CPU, values and gradients", "[cuda][cnn_extras]") {
  using namespace minidl::cuda_test;
  MINIDL_REQUIRE_GPU();
  for (const auto& [name, c] : cases()) {
    INFO(name);
    const Tensor x0 = cast(sine_operand(4, c.shape), DType::F32);
    const Tensor xc = x0.clone().requires_grad_(), xd = x0.to(kCuda).requires_grad_();
    const Tensor yc = c.fn({xc}), yd = c.fn({xd});
    sum(mul(yc, yc)).backward();
    sum(mul(yd, yd)).backward();
    check_close(yd.to(Device::cpu()), yc, 1e-5, 1e-6, "output");
    check_close(xd.grad().to(Device::cpu()), xc.grad(), 1e-4, 1e-5, "input gradient");
  }
}

TEST_CASE("python_float writes floats as Python's repr", "[nn][repr]") {
  // The strings Python 3 prints for repr() of these values.
  const std::vector<std::pair<double, std::string>> cases{
      {0.0001, "0.0001"}, {1e-5, "1e-05"},  {2.0, "2.0"},   {0.75, "0.75"},     {1234.5, "1234.5"},
      {1.5e20, "1.5e+20"}, {1e16, "1e+16"}, {0.1, "0.1"},   {-0.00012, "-0.00012"}, {0.0, "0.0"},
      {-0.0, "-0.0"},     {3e-300, "3e-300"}, {9999999999999998.0, "9999999999999998.0"}};
  for (const auto& [v, want] : cases) CHECK(nn::detail::python_float(v) == want);
}
