// Autograd against PyTorch's documented behaviour on cases the engine tests do not reach:
// accumulation across calls, non-leaf .grad, implicit gradients, retain_graph, grad() running only
// the nodes it needs (and an input's hooks), hook order with retain_grad, detach and version
// counters, zero-size tensors, integer tensors, create_graph accumulation.
#include <catch2/catch.hpp>

#include "gradcheck.h"

using namespace minidl;
using Catch::Contains;
using autograd::TensorList;

TEST_CASE("leaf gradients accumulate across separate backward calls until reset", "[autograd][parity]") {
  Tensor x = from_vector<double>({1.0, -2.0}).requires_grad_();
  mul(x, 3.0).sum().backward();
  mul(x, x).sum().backward();  // 2x
  CHECK(x.grad().to_vector<double>() == std::vector<double>{5.0, -1.0});
  x.set_grad(Tensor());  // optimizer.zero_grad(set_to_none=True)
  mul(x, 4.0).sum().backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{4.0, 4.0});
}

TEST_CASE("a non-leaf has no .grad unless it retains it", "[autograd][parity]") {
  Tensor x = from_vector<float>({1, 2}).requires_grad_();
  Tensor h = mul(x, 2.0);
  Tensor k = mul(x, 3.0);
  k.retain_grad();
  add(mul(h, h), k).sum().backward();
  CHECK_FALSE(h.is_leaf());
  CHECK_FALSE(h.grad().defined());
  CHECK(k.grad().to_vector<float>() == std::vector<float>{1, 1});
  CHECK(x.grad().to_vector<float>() == std::vector<float>{11, 19});  // 8x + 3
}

TEST_CASE("implicit gradients only for one-element outputs", "[autograd][parity]") {
  Tensor x = from_vector<float>({2}).requires_grad_();
  mul(x, 5.0).backward();  // shape [1]: PyTorch accepts any one-element output
  CHECK(x.grad().item() == 5.0);
  Tensor v = ones({2}).requires_grad_();
  CHECK_THROWS_WITH(mul(v, 2.0).backward(), Contains("grad can be implicitly created only for scalar outputs"));
  mul(v, 2.0).backward(from_vector<float>({1, 10}));
  CHECK(v.grad().to_vector<float>() == std::vector<float>{2, 20});
}

TEST_CASE("a second backward through freed saved tensors names retain_graph", "[autograd][parity]") {
  Tensor x = from_vector<float>({3}).requires_grad_();
  Tensor y = mul(x, x).sum();
  y.backward();
  CHECK_THROWS_WITH(y.backward(), Contains("second time") && Contains("retain_graph=true") && Contains("MulBackward"));
}

TEST_CASE("grad() runs only the nodes between the outputs and the inputs", "[autograd][parity]") {
  Tensor x = from_vector<double>({2.0}).requires_grad_();
  Tensor a = mul(x, x);
  Tensor y = mul(a, a);  // saves a
  int at_y = 0, beyond_y = 0;
  y.register_hook([&](const Tensor&) { ++at_y; return Tensor(); });
  a.register_hook([&](const Tensor&) { ++beyond_y; return Tensor(); });
  Tensor z = mul(y, 3.0).sum();
  auto g = autograd::grad({z}, {y});
  CHECK(g[0].item() == 3.0);
  CHECK(at_y == 1);      // an input's own hooks run before its gradient is captured
  CHECK(beyond_y == 0);  // nothing past the inputs runs
  CHECK_FALSE(x.grad().defined());
  y.sum().backward();    // y's node did not run, so its saved tensors were not freed
  CHECK(x.grad().item() == 32.0);  // d(x^4)/dx = 4x^3
}

TEST_CASE("grad() applies the hooks of a leaf input", "[autograd][parity]") {
  Tensor x = from_vector<float>({1, 2}).requires_grad_();
  x.register_hook([](const Tensor& g) { return mul(g, 10.0); });
  auto g = autograd::grad({mul(x, 3.0).sum()}, {x});
  CHECK(g[0].to_vector<float>() == std::vector<float>{30, 30});
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("hooks run in registration order and retain_grad sees their result", "[autograd][parity]") {
  Tensor x = from_vector<float>({1, 2}).requires_grad_();
  Tensor h = mul(x, 1.0);
  std::vector<int> order;
  h.retain_grad();
  h.register_hook([&](const Tensor& g) { order.push_back(1); return add(g, 1.0); });
  h.register_hook([&](const Tensor& g) { order.push_back(2); return mul(g, 10.0); });
  mul(h, from_vector<float>({2, 3})).sum().backward();
  CHECK(order == std::vector<int>{1, 2});
  // (g + 1) * 10: .grad of a retained tensor is the gradient after all of its hooks (PyTorch runs
  // the retain_grad hook last), and that is also what flows on to x.
  CHECK(h.grad().to_vector<float>() == std::vector<float>{30, 40});
  CHECK(x.grad().to_vector<float>() == std::vector<float>{30, 40});
}

TEST_CASE("requires_grad propagation, no_grad, detach and the shared version counter", "[autograd][parity]") {
  Tensor w = from_vector<float>({1, 2}).requires_grad_();
  Tensor c = from_vector<float>({3, 4});
  CHECK(add(w, c).requires_grad());
  CHECK_FALSE(add(c, c).requires_grad());
  {
    NoGradGuard ng;
    Tensor y = mul(w, c);
    CHECK_FALSE(y.requires_grad());
    CHECK(y.is_leaf());
  }
  Tensor h = mul(w, 2.0);
  Tensor d = h.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.is_leaf());
  CHECK(d.raw_data() == h.raw_data());
  Tensor y = mul(w, h).sum();  // saves h
  const uint32_t v0 = h.version();
  d.mul_(2.0);                 // an in-place change through the detached alias
  CHECK(h.version() == v0 + 1);
  CHECK_THROWS_WITH(y.backward(), Contains("one of the variables needed for gradient computation has been modified by an inplace operation"));
  CHECK_THROWS_WITH(w.add_(c), Contains("a leaf Variable that requires grad is being used in an in-place operation"));
  CHECK(mul(w, 2.0).to(DType::I64).requires_grad() == false);  // integer results are not differentiable
}

TEST_CASE("integer tensors cannot require gradients", "[autograd][parity]") {
  CHECK_THROWS_WITH(from_vector<int64_t>({1, 2}).requires_grad_(),
                    Contains("only Tensors of floating point dtype can require gradients"));
  CHECK_THROWS_WITH(zeros({2}, TensorOptions(DType::I32).requires_grad()), Contains("floating point dtype"));
  CHECK_NOTHROW(from_vector<int64_t>({1}).requires_grad_(false));
}

TEST_CASE("zero-size tensors run backward and get empty gradients", "[autograd][parity]") {
  Tensor x = zeros({0, 3}).requires_grad_();
  Tensor w = ones({3, 2}).requires_grad_();
  mm(x, w).sum().backward();
  REQUIRE(x.grad().defined());
  CHECK(x.grad().shape() == Shape{0, 3});
  CHECK(w.grad().to_vector<float>() == std::vector<float>(6, 0.0f));
}

TEST_CASE("a .grad built by create_graph is not updated in place by a later backward", "[autograd][parity]") {
  Tensor x = from_vector<double>({2.0}).requires_grad_();
  mul(mul(x, x), x).sum().backward(Tensor(), false, true);  // x.grad = 3x^2 = 12, with a graph
  Tensor first = x.grad();
  CHECK(first.requires_grad());
  CHECK(first.item() == 12.0);
  first.sum().backward();  // d(3x^2)/dx = 6x = 12, accumulated: 12 + 12
  CHECK(x.grad().item() == 24.0);
  CHECK(first.item() == 12.0);  // PyTorch adds out of place when .grad requires grad
  CHECK_FALSE(x.grad().is_same(first));
}

TEST_CASE("sign of a tensor that requires grad is differentiable with a zero gradient", "[autograd][parity]") {
  // PyTorch 1.13: x = torch.tensor([-2., 0., 3.], requires_grad=True); s = x.sign()
  // s.requires_grad -> True (grad_fn SignBackward0); s.sum().backward(); x.grad -> [0., 0., 0.]
  Tensor x = from_vector<float>({-2, 0, 3}).requires_grad_();
  Tensor s = sign(x);
  CHECK(s.requires_grad());
  CHECK(s.to_vector<float>() == std::vector<float>{-1, 0, 1});
  s.sum().backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{0, 0, 0});
  // torch.autograd.grad(x.sign().sum(), x) -> (tensor([0., 0., 0.]),)
  auto g = autograd::grad({sign(x).sum()}, {x});
  CHECK(g[0].to_vector<float>() == std::vector<float>{0, 0, 0});
  CHECK_FALSE(sign(from_vector<float>({1})).requires_grad());
}

TEST_CASE("an assigned .grad must match the tensor's dtype as well as its shape", "[autograd][parity]") {
  // PyTorch 1.13: x = torch.zeros(3, requires_grad=True); x.grad = torch.zeros(3, dtype=torch.float64)
  // -> RuntimeError "assigned grad has data of a different type"
  Tensor x = zeros({3}).requires_grad_();
  CHECK_THROWS_WITH(x.set_grad(zeros({3}, DType::F64)), Contains("set_grad") && Contains("f64[3]") && Contains("f32[3]"));
  CHECK_NOTHROW(x.set_grad(zeros({3})));
  CHECK_NOTHROW(x.set_grad(Tensor()));
}

TEST_CASE("misuse PyTorch refuses is refused: hooks changing a leaf gradient's size or type, retain_grad without grad, grad of no inputs", "[autograd][parity]") {
  // PyTorch 1.13: "hook '<lambda>' has changed the size of value", "... the type of value",
  // "can't retain_grad on Tensor that has requires_grad=False", "grad requires non-empty inputs."
  Tensor x = zeros({2}).requires_grad_();
  x.register_hook([](const Tensor&) { return ones({3}); });
  CHECK_THROWS_WITH(sum(mul(x, 2.0)).backward(), Contains("hook") && Contains("size") && Contains("[3]"));
  Tensor y = zeros({2}).requires_grad_();
  y.register_hook([](const Tensor& g) { return cast(g, DType::F64); });
  CHECK_THROWS_WITH(sum(mul(y, 2.0)).backward(), Contains("hook") && Contains("type") && Contains("f64"));
  Tensor z = zeros({2}).requires_grad_();
  z.register_hook([](const Tensor& g) { return mul(g, 10.0); });  // same size and type: taken
  sum(mul(z, 2.0)).backward();
  CHECK(z.grad().to_vector<float>() == std::vector<float>{20, 20});
  CHECK_THROWS_WITH(zeros({2}).retain_grad(), Contains("retain_grad") && Contains("requires_grad=false"));
  CHECK_THROWS_WITH(autograd::grad({sum(z)}, {}), Contains("grad") && Contains("non-empty inputs"));
}

TEST_CASE("copy_, add_ and mul_ of a source that requires grad are refused instead of losing its gradient", "[autograd][parity]") {
  // PyTorch makes c part of the graph (w.grad = [5, 5] for sum(c * 5)); minidl records no graph for
  // in-place ops, so it refuses rather than dropping w's gradient (README: deliberate differences).
  Tensor w = ones({2}).requires_grad_();
  Tensor c = zeros({2});
  CHECK_THROWS_WITH(c.copy_(w), Contains("copy_") && Contains("requires grad") && Contains("lost"));
  CHECK_THROWS_WITH(c.add_(w), Contains("add_") && Contains("requires grad"));
  CHECK_THROWS_WITH(c.mul_(w), Contains("mul_") && Contains("requires grad"));
  {
    NoGradGuard ng;  // no gradient wanted: allowed
    c.copy_(w);
  }
  CHECK(c.to_vector<float>() == std::vector<float>{1, 1});
  c.add_(w.detach());
  CHECK(c.to_vector<float>() == std::vector<float>{2, 2});
}

TEST_CASE("a new tensor from a factory is at version 0, as PyTorch's", "[autograd][parity]") {
  // torch.zeros(2)._version, torch.ones(2)._version, torch.full(...)._version, zeros_like(...)._version: 0
  CHECK(zeros({2}).version() == 0);
  CHECK(ones({2}).version() == 0);
  CHECK(full({2}, 3.0).version() == 0);
  CHECK(zeros_like(ones({3})).version() == 0);
  Tensor z = zeros({2});
  z.fill_(1.0);  // an in-place write still counts
  CHECK(z.version() == 1);
  CHECK_THROWS_WITH(full({1}, 300.0, DType::U8), Contains("full: value 300 cannot be converted to u8 without overflow"));
}

TEST_CASE("a custom function's integer and bool outputs are not differentiable", "[autograd][parity]") {
  // class F(Function): forward(ctx, a) returns (a * 2, a.argmax(), a > 0); backward gets zeros for the last two.
  Tensor a = from_vector<float>({1, 3, -2}).requires_grad_();
  TensorList seen;
  auto outs = autograd::apply_function(
      "IntOut", {a},
      [](autograd::FunctionCtx&, const TensorList& in) -> TensorList { return {mul(in[0], 2.0), argmax(in[0]), gt(in[0], 0.0)}; },
      [&seen](autograd::FunctionCtx&, const TensorList& g) -> TensorList {
        seen = g;
        return {mul(g[0], 2.0)};
      });
  CHECK(outs[0].requires_grad());
  CHECK_FALSE(outs[1].requires_grad());
  CHECK(outs[1].is_leaf());
  CHECK_FALSE(outs[2].requires_grad());
  CHECK(outs[2].is_leaf());
  outs[0].sum().backward();
  CHECK(a.grad().to_vector<float>() == std::vector<float>{2, 2, 2});
  REQUIRE(seen.size() == 3);
  CHECK(seen[1].dtype() == DType::I64);
  CHECK(seen[1].item() == 0);
  CHECK(seen[2].dtype() == DType::Bool);
}

TEST_CASE("a skipped empty input of cat gets an empty gradient", "[autograd][parity]") {
  // a = torch.zeros(0, requires_grad=True); b = torch.tensor([1., 2], requires_grad=True)
  // (torch.cat([a, b]) * 3).sum().backward(); a.grad -> tensor([]), b.grad -> [3., 3.]
  Tensor a = zeros({0}).requires_grad_();
  Tensor b = from_vector<float>({1, 2}).requires_grad_();
  mul(cat({a, b}), 3.0).sum().backward();
  REQUIRE(a.grad().defined());
  CHECK(a.grad().shape() == Shape{0});
  CHECK(b.grad().to_vector<float>() == std::vector<float>{3, 3});
  // Every input empty: the (empty) result still requires grad and both get empty gradients, and a
  // skipped f64 input beside an f32 one gets its own dtype back.
  Tensor c = zeros({0}, DType::F64).requires_grad_();
  Tensor d = zeros({0}).requires_grad_();
  Tensor e = cat({c, d});
  CHECK(e.requires_grad());
  CHECK(e.dtype() == DType::F64);
  e.sum().backward();
  CHECK(c.grad().shape() == Shape{0});
  CHECK(d.grad().shape() == Shape{0});
  CHECK(d.grad().dtype() == DType::F32);
  // Along dim 1 of a 2-D tensor, beside a 1-D empty one.
  Tensor m = from_vector<float>({1, 2, 3, 4}).reshape({2, 2}).requires_grad_();
  Tensor f = zeros({0}).requires_grad_();
  mul(cat({f, m}, 1), from_vector<float>({1, 2, 3, 4}).reshape({2, 2})).sum().backward();
  CHECK(m.grad().to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  CHECK(f.grad().shape() == Shape{0});
}

TEST_CASE("double backward through relu and leaky_relu gives zeros for the input", "[autograd][parity]") {
  // g, = torch.autograd.grad((x.relu() * w).sum(), x, create_graph=True)
  // torch.autograd.grad((g * g).sum(), x) -> (tensor([0., 0., 0.]),)
  for (int leaky = 0; leaky < 2; ++leaky) {
    Tensor x = from_vector<float>({-1, 2, 3}).requires_grad_();
    Tensor w = from_vector<float>({1, 2, 3});
    Tensor y = leaky ? leaky_relu(x, 0.1) : relu(x);
    auto g = autograd::grad({mul(y, w).sum()}, {x}, {}, false, true);
    REQUIRE(g[0].requires_grad());
    auto gg = autograd::grad({mul(g[0], g[0]).sum()}, {x});
    REQUIRE(gg[0].defined());
    CHECK(gg[0].to_vector<float>() == std::vector<float>{0, 0, 0});
  }
}

TEST_CASE("a non-leaf hook and an input's hook under grad() may not change the gradient's size or type either", "[autograd][parity]") {
  // h = x * 2; h.register_hook(lambda g: torch.ones(1, 2)); (h * 3).sum().backward()
  // -> "hook '<lambda>' has changed the size of value"; a dtype change -> "... the type of value".
  Tensor x = from_vector<float>({1, 2}).requires_grad_();
  Tensor h = mul(x, 2.0);
  h.register_hook([](const Tensor&) { return ones({1, 2}); });
  CHECK_THROWS_WITH(mul(h, 3.0).sum().backward(), Contains("register_hook") && Contains("size") && Contains("[1, 2]"));
  Tensor k = mul(x, 2.0);
  k.register_hook([](const Tensor& g) { return cast(g, DType::F64); });
  CHECK_THROWS_WITH(mul(k, 3.0).sum().backward(), Contains("register_hook") && Contains("type"));
  Tensor w = from_vector<float>({1, 2}).requires_grad_();
  w.register_hook([](const Tensor&) { return ones({3}); });
  CHECK_THROWS_WITH(autograd::grad({mul(w, 2.0).sum()}, {w}), Contains("register_hook") && Contains("size"));
}

TEST_CASE("a custom function's gradient of a shape its input broadcasts to is summed back", "[autograd][parity]") {
  // class BcastShape(Function): backward returns g.expand(2, 2) (or g.unsqueeze(0)) for a [2] input:
  // PyTorch's validate_outputs sums it to [2] (is_expandable_to + sum_to); a [3] gradient is an error.
  Tensor a = from_vector<float>({1, 2}).requires_grad_();
  auto fwd = [](autograd::FunctionCtx&, const TensorList& in) -> TensorList { return {mul(in[0], 2.0)}; };
  auto out = autograd::apply_function("BcastShape", {a}, fwd, [](autograd::FunctionCtx&, const TensorList& g) -> TensorList {
    return {g[0].unsqueeze(0).expand({3, 2})};
  });
  mul(out[0], from_vector<float>({1, 10})).sum().backward();
  CHECK(a.grad().to_vector<float>() == std::vector<float>{3, 30});
  Tensor b = from_vector<float>({1, 2}).requires_grad_();
  auto bad = autograd::apply_function("WrongShape", {b}, fwd, [](autograd::FunctionCtx&, const TensorList&) -> TensorList {
    return {ones({3})};
  });
  CHECK_THROWS_WITH(bad[0].sum().backward(), Contains("WrongShape") && Contains("shape [3]") && Contains("expected [2]"));
}
