// The autograd engine: accumulation, retain_graph, create_graph, hooks, grad modes, version
// counters, deep graphs.
#include <catch2/catch.hpp>

#include "gradcheck.h"

using namespace minidl;

TEST_CASE("backward accumulates into leaf gradients", "[autograd]") {
  Tensor x = from_vector<float>({1, 2, 3}).requires_grad_();
  Tensor y = mul(x, x).sum();
  y.backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{2, 4, 6});
  // A second graph accumulates onto the existing .grad (poisoned value + new gradient).
  x.set_grad(from_vector<float>({100, 100, 100}));
  mul(x, 3.0).sum().backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{103, 103, 103});
}

TEST_CASE("a leaf used twice receives the sum of both paths", "[autograd]") {
  Tensor x = from_vector<double>({2.0}).requires_grad_();
  Tensor y = add(mul(x, x), mul(x, 5.0)).sum();  // x^2 + 5x -> 2x + 5 = 9
  y.backward();
  CHECK(x.grad().item() == 9.0);
}

TEST_CASE("backward twice without retain_graph is an error, with it, gradients add", "[autograd]") {
  Tensor x = from_vector<double>({3.0}).requires_grad_();
  Tensor y = mul(x, x).sum();
  y.backward(Tensor(), true);
  y.backward();
  CHECK(x.grad().item() == 12.0);
  CHECK_THROWS_WITH(y.backward(), Catch::Contains("backward through the graph a second time"));
}

TEST_CASE("named options: backward(BackwardOptions()) and grad(GradOptions()) as PyTorch's keywords", "[autograd]") {
  Tensor x = from_vector<double>({3.0}).requires_grad_();
  Tensor y = mul(x, x).sum();
  y.backward(BackwardOptions().retain_graph(true));
  y.backward(ones({}, DType::F64), BackwardOptions());
  CHECK(x.grad().item() == 12.0);
  CHECK_THROWS_WITH(y.backward(), Catch::Contains("backward through the graph a second time"));

  Tensor z = mul(mul(x, x), x).sum();  // x^3
  auto g = autograd::grad({z}, {x}, autograd::GradOptions().create_graph(true));
  CHECK(g[0].item() == Approx(27.0));
  CHECK(g[0].requires_grad());
  // retain_graph defaults to create_graph (PyTorch's retain_graph=None): z's graph is still there.
  auto again = autograd::grad({z}, {x}, autograd::GradOptions().grad_outputs({full({}, 2.0, DType::F64)}));
  CHECK(again[0].item() == Approx(54.0));
  CHECK_THROWS_WITH(autograd::grad({z}, {x}), Catch::Contains("second time"));
  Tensor u = from_vector<double>({1.0}).requires_grad_();
  Tensor w = mul(x, 2.0).sum();
  auto unused = autograd::grad({w}, {x, u}, autograd::GradOptions().allow_unused(true));
  CHECK(unused[0].item() == 2.0);
  CHECK_FALSE(unused[1].defined());
}

TEST_CASE("modifying a saved tensor in place is detected", "[autograd]") {
  Tensor w = from_vector<float>({1, 2}).requires_grad_();
  Tensor a = ones({2});
  Tensor y = mul(w, a).sum();
  a.mul_(2.0);  // a was saved for w's gradient
  CHECK_THROWS_WITH(y.backward(), Catch::Contains("modified by an inplace operation") && Catch::Contains("version 1"));
}

TEST_CASE("in-place ops refuse tensors that require grad", "[autograd]") {
  Tensor w = ones({2}).requires_grad_();
  CHECK_THROWS_WITH(w.mul_(2.0), Catch::Contains("mul_") && Catch::Contains("requires grad"));
  NoGradGuard ng;
  w.mul_(2.0);
  CHECK(w.to_vector<float>() == std::vector<float>{2, 2});
}

TEST_CASE("no-grad and inference mode record nothing", "[autograd]") {
  Tensor x = ones({2}).requires_grad_();
  {
    NoGradGuard ng;
    Tensor y = mul(x, 2.0);
    CHECK_FALSE(y.requires_grad());
    CHECK(y.grad_fn() == nullptr);
  }
  {
    InferenceMode im;
    CHECK(InferenceMode::is_enabled());
    CHECK_FALSE(mul(x, 2.0).requires_grad());
  }
  CHECK_FALSE(InferenceMode::is_enabled());
  CHECK(mul(x, 2.0).requires_grad());
}

TEST_CASE("nodes carry readable op names", "[autograd]") {
  Tensor x = ones({2, 2}).requires_grad_();
  CHECK(mul(x, x).grad_fn()->name() == "MulBackward");
  CHECK(mm(x, x).grad_fn()->name() == "MmBackward");
  CHECK(relu(x).grad_fn()->name() == "ReluBackward");
  CHECK(x.t().grad_fn()->name() == "PermuteBackward");
}

TEST_CASE("hooks on leaf gradients can observe and replace them", "[autograd]") {
  Tensor x = from_vector<float>({1, 2}).requires_grad_();
  std::vector<float> seen;
  x.register_hook([&](const Tensor& g) {
    seen = g.to_vector<float>();
    return mul(g, 10.0);
  });
  mul(x, 3.0).sum().backward();
  CHECK(seen == std::vector<float>{3, 3});
  CHECK(x.grad().to_vector<float>() == std::vector<float>{30, 30});
}

TEST_CASE("mm gradients come in each operand's own layout, so linear's weight gradient arrives contiguous", "[autograd]") {
  // As PyTorch's mm_mat1_backward / mm_mat2_backward: linear multiplies by weight.t(), a column-major
  // view, so its gradient is made column-major and the transpose's backward hands the weight a
  // contiguous one (the leaf then keeps that buffer instead of copying it).
  Tensor x = arange(0, 12, 1, DType::F32).reshape({3, 4}).requires_grad_();
  Tensor w = arange(0, 20, 1, DType::F32).reshape({5, 4}).requires_grad_();
  Tensor b = zeros({5}).requires_grad_();
  bool weight_contiguous = false, input_contiguous = false;
  w.register_hook([&](const Tensor& g) {
    weight_contiguous = g.is_contiguous();
    return Tensor();
  });
  Tensor xt = arange(0, 12, 1, DType::F32).reshape({4, 3}).requires_grad_();
  xt.register_hook([&](const Tensor& g) {
    input_contiguous = g.is_contiguous();
    return Tensor();
  });
  Tensor gy = arange(0, 15, 1, DType::F32).reshape({3, 5});
  linear(x, w, b).backward(gy);
  CHECK(weight_contiguous);
  // Values: dW = gy^T x, dx = gy W.
  CHECK(testing::max_abs_diff(w.grad(), mm(gy.t(), x.detach())) == 0.0);
  CHECK(testing::max_abs_diff(x.grad(), mm(gy, w.detach())) == 0.0);
  // A column-major first operand gets a column-major gradient: its transpose's is contiguous.
  mm(xt.t(), w.detach().t()).backward(gy);
  CHECK(input_contiguous);
  CHECK(testing::max_abs_diff(xt.grad(), mm(gy, w.detach()).t()) == 0.0);
}

TEST_CASE("retain_grad keeps a non-leaf gradient", "[autograd]") {
  Tensor x = from_vector<float>({1, 2}).requires_grad_();
  Tensor h = mul(x, 2.0);
  h.retain_grad();
  mul(h, h).sum().backward();
  CHECK(h.grad().to_vector<float>() == std::vector<float>{4, 8});
}

TEST_CASE("a chain of 100,000 ops runs backward and is freed without recursion", "[autograd]") {
  Tensor x = from_vector<float>({1.0f}).requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = mul(y, 1.0);
  y.sum().backward();
  CHECK(x.grad().item() == 1.0);
  y = Tensor();  // releases the whole chain
}

TEST_CASE("create_graph gives second derivatives", "[autograd]") {
  Tensor x = from_vector<double>({1.5}).requires_grad_();
  Tensor y = mul(mul(x, x), x).sum();  // x^3
  auto g = autograd::grad({y}, {x}, {}, false, true);
  CHECK(g[0].item() == Approx(3 * 1.5 * 1.5));
  auto gg = autograd::grad({g[0].sum()}, {x});
  CHECK(gg[0].item() == Approx(6 * 1.5));
}

TEST_CASE("grad() does not touch .grad and reports unused inputs", "[autograd]") {
  Tensor x = from_vector<double>({1.0}).requires_grad_();
  Tensor z = from_vector<double>({1.0}).requires_grad_();
  Tensor y = mul(x, 4.0).sum();
  CHECK_THROWS_WITH(autograd::grad({y}, {z}, {}, true), Catch::Contains("not have been used"));
  auto g = autograd::grad({y}, {x});
  CHECK(g[0].item() == 4.0);
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("backward errors are clear", "[autograd]") {
  Tensor x = ones({3}).requires_grad_();
  CHECK_THROWS_WITH(mul(x, 2.0).backward(), Catch::Contains("only for scalar outputs"));
  CHECK_THROWS_WITH(ones({1}).backward(), Catch::Contains("does not require grad"));
}

TEST_CASE("fp32 leaves receive fp32 gradients through casts", "[autograd]") {
  Tensor w = ones({2, 2}).requires_grad_();
  Tensor y = cast(w, DType::BF16);
  CHECK(y.dtype() == DType::BF16);
  cast(mul(y, y), DType::F32).sum().backward();
  CHECK(w.grad().dtype() == DType::F32);
  CHECK(w.grad().to_vector<float>() == std::vector<float>{2, 2, 2, 2});
}
