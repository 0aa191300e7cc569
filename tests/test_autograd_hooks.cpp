// The engine hooks DistributedDataParallel is built on: post-accumulate-grad hooks on leaves and
// end-of-backward callbacks (autograd::queue_callback).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "minidl.h"

using namespace minidl;

TEST_CASE("a post-accumulate-grad hook sees the leaf's updated .grad", "[autograd][hooks]") {
  Tensor x = from_vector<float>({1, 2, 3}).requires_grad_();
  std::vector<std::vector<float>> seen;
  x.register_post_accumulate_grad_hook([&](const Tensor& leaf) {
    CHECK(leaf.is_same(x));
    seen.push_back(leaf.grad().to_vector<float>());
  });
  mul(x, x).sum().backward();  // 2x
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == std::vector<float>{2, 4, 6});
  mul(x, 3.0).sum().backward();  // accumulated: 2x + 3
  REQUIRE(seen.size() == 2);
  CHECK(seen[1] == std::vector<float>{5, 7, 9});
}

TEST_CASE("post-accumulate-grad hooks run after gradient hooks, once per backward", "[autograd][hooks]") {
  Tensor x = from_vector<double>({2.0}).requires_grad_();
  x.register_hook([](const Tensor& g) { return mul(g, 10.0); });  // before accumulation
  int calls = 0;
  double seen = 0;
  x.register_post_accumulate_grad_hook([&](const Tensor& leaf) {
    ++calls;
    seen = leaf.grad().item();
  });
  add(mul(x, x), mul(x, 5.0)).sum().backward();  // x used twice: one accumulation of 10 * (2x + 5)
  CHECK(calls == 1);
  CHECK(seen == 90.0);
  CHECK(x.grad().item() == 90.0);
}

TEST_CASE("a post-accumulate-grad hook may rewrite .grad in place", "[autograd][hooks]") {
  Tensor w = from_vector<float>({1, -1}).requires_grad_();
  w.register_post_accumulate_grad_hook([](const Tensor& leaf) { leaf.grad().mul_(0.5); });
  mul(w, 4.0).sum().backward();
  CHECK(w.grad().to_vector<float>() == std::vector<float>{2, 2});
}

TEST_CASE("post-accumulate-grad hooks: leaves only, removable", "[autograd][hooks]") {
  Tensor x = ones({2}).requires_grad_();
  Tensor y = mul(x, 2.0);
  CHECK_THROWS_WITH(y.register_post_accumulate_grad_hook([](const Tensor&) {}),
                    Catch::Contains("register_post_accumulate_grad_hook") && Catch::Contains("non-leaf"));
  Tensor c = ones({2});
  CHECK_THROWS_WITH(c.register_post_accumulate_grad_hook([](const Tensor&) {}),
                    Catch::Contains("doesn't require gradient"));
  int a = 0, b = 0;
  uint64_t ia = x.register_post_accumulate_grad_hook([&](const Tensor&) { ++a; });
  x.register_post_accumulate_grad_hook([&](const Tensor&) { ++b; });
  y.sum().backward();
  x.remove_post_accumulate_grad_hook(ia);
  mul(x, 2.0).sum().backward();
  CHECK(a == 1);
  CHECK(b == 2);
}

TEST_CASE("grad() does not touch .grad and runs no post-accumulate-grad hook", "[autograd][hooks]") {
  Tensor x = from_vector<float>({3}).requires_grad_();
  int calls = 0;
  x.register_post_accumulate_grad_hook([&](const Tensor&) { ++calls; });
  autograd::TensorList g = autograd::grad({mul(x, x).sum()}, {x});
  CHECK(g[0].item() == 6.0);
  CHECK(calls == 0);
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("end-of-backward callbacks run once, after every leaf's hooks", "[autograd][hooks]") {
  CHECK_FALSE(autograd::in_backward());
  CHECK_THROWS_WITH(autograd::queue_callback([] {}),
                    Catch::Contains("queue_callback") && Catch::Contains("during the backward pass"));
  Tensor a = from_vector<float>({1}).requires_grad_();
  Tensor b = from_vector<float>({2}).requires_grad_();
  std::vector<std::string> events;
  bool queued = false;
  auto hook = [&](const std::string& name) {
    return [&, name](const Tensor& leaf) {
      CHECK(autograd::in_backward());
      events.push_back(name + "=" + std::to_string(static_cast<int>(leaf.grad().item())));
      if (!queued) {  // as DDP: the first hook of a backward queues the finalizer
        queued = true;
        autograd::queue_callback([&] {
          // Every .grad is final here.
          events.push_back("end a=" + std::to_string(static_cast<int>(a.grad().item())) +
                           " b=" + std::to_string(static_cast<int>(b.grad().item())));
          autograd::queue_callback([&] { events.push_back("queued by a callback"); });
        });
      }
    };
  };
  a.register_post_accumulate_grad_hook(hook("a"));
  b.register_post_accumulate_grad_hook(hook("b"));
  add(mul(a, 3.0), mul(b, 5.0)).sum().backward();
  REQUIRE(events.size() == 4);
  CHECK(events[2] == "end a=3 b=5");
  CHECK(events[3] == "queued by a callback");
  CHECK(((events[0] == "a=3" && events[1] == "b=5") || (events[0] == "b=5" && events[1] == "a=3")));
  CHECK_FALSE(autograd::in_backward());
  // The next backward starts with an empty queue.
  events.clear();
  mul(a, 2.0).sum().backward();
  CHECK(events == std::vector<std::string>{"a=5"});
}

TEST_CASE("a failed backward drops its queued callbacks", "[autograd][hooks]") {
  Tensor w = from_vector<float>({1, 2}).requires_grad_();
  Tensor s = ones({2});
  Tensor q = mul(w, s);    // older node: runs after r's, and fails
  Tensor r = mul(w, 3.0);  // newer node: its gradient hook runs first and queues a callback
  bool hook_ran = false;
  int ran = 0;
  r.register_hook([&](const Tensor& g) {
    hook_ran = true;
    autograd::queue_callback([&] { ++ran; });
    return g;
  });
  Tensor loss = add(q.sum(), r.sum());
  s.mul_(2.0);  // invalidates the tensor q's node saved
  CHECK_THROWS_WITH(loss.backward(), Catch::Contains("modified by an inplace operation"));
  CHECK(hook_ran);
  CHECK(ran == 0);
  CHECK_FALSE(autograd::in_backward());
}
