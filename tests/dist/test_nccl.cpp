// The NCCL process group (one GPU per rank): allreduce (sum, avg; f32, f64, i64, f16/bf16 summed
// in f32, non-contiguous), broadcast, allgather and barrier give the same results as the MPI
// group's tests; tensors of another device are refused by name; DDP on CUDA parameters ends with
// the average of the ranks' gradients, bitwise equal on every rank. Runs on any number of ranks.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "minidl.h"

using namespace minidl;

namespace {
Device here() { return Device::cuda(dist::default_group_device()); }

Tensor on_gpu(const std::vector<float>& v, DType t = DType::F32) { return from_vector<float>(v).to(here()).to(t); }

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  Tensor x = a.to(Device::cpu()).contiguous(), y = b.to(Device::cpu()).contiguous();
  return x.dtype() == y.dtype() && x.shape() == y.shape() && std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
}
}  // namespace

TEST_CASE("nccl allreduce sums and averages in place", "[nccl]") {
  auto g = dist::default_group();
  REQUIRE(g->backend() == "nccl");
  const int n = g->size(), r = g->rank();
  Tensor a = on_gpu({static_cast<float>(r + 1), static_cast<float>(2 * (r + 1))});
  Tensor b = from_vector<double>({0.5 * (r + 1)}).to(here());
  Tensor c = from_vector<int64_t>({(int64_t{1} << 40) + r}).to(here());
  g->allreduce({a, b, c})->wait();
  const float tri = n * (n + 1) / 2.f;
  CHECK(a.to_vector<float>() == std::vector<float>{tri, 2 * tri});
  CHECK(b.item() == 0.5 * tri);  // halves of small integers: exact in any order
  CHECK(c.item_int() == (int64_t{1} << 40) * n + n * (n - 1) / 2);
  Tensor d = on_gpu({static_cast<float>(r), 5});
  g->allreduce({d}, dist::AllreduceOptions().op(dist::ReduceOp::Avg))->wait();
  CHECK(d.to_vector<float>() == std::vector<float>{(n - 1) / 2.f, 5});
}

TEST_CASE("nccl allreduce sums f16 and bf16 in f32 and writes non-contiguous tensors back", "[nccl]") {
  auto g = dist::default_group();
  const int n = g->size(), r = g->rank();
  Tensor h = on_gpu({r == 0 ? 2048.f : 1.f, 0.25f}, DType::F16);
  g->allreduce({h})->wait();
  CHECK(h.dtype() == DType::F16);
  // The f32 sum rounds once to f16 (2048 + 1 would tie to even: 2048).
  const float expected = from_vector<float>({2048.f + (n - 1)}).to(DType::F16).to(DType::F32).item();
  CHECK(h.to(DType::F32).to_vector<float>() == std::vector<float>{expected, 0.25f * n});
  Tensor m = arange(0, 6, 1, DType::F32).view({2, 3}).to(here()).add_(ones({2, 3}).to(here()), r);
  Tensor t = m.t();
  g->allreduce({t})->wait();
  std::vector<float> want;
  for (int i = 0; i < 6; ++i) want.push_back(static_cast<float>(n * i + n * (n - 1) / 2));
  CHECK(m.to_vector<float>() == want);
}

TEST_CASE("nccl broadcast, allgather and barrier", "[nccl]") {
  auto g = dist::default_group();
  const int n = g->size(), r = g->rank();
  Tensor x = on_gpu({static_cast<float>(r) + 0.1f, -static_cast<float>(r)});
  const int root = n - 1;
  g->broadcast({x}, root)->wait();
  CHECK(x.to_vector<float>() == std::vector<float>{static_cast<float>(root) + 0.1f, -static_cast<float>(root)});
  std::vector<Tensor> all;
  g->allgather(all, on_gpu({static_cast<float>(10 * r)}))->wait();
  REQUIRE(static_cast<int>(all.size()) == n);
  for (int k = 0; k < n; ++k) CHECK(all[k].item() == 10.0 * k);
  CHECK_NOTHROW(g->barrier()->wait());
}

TEST_CASE("nccl group refuses tensors of another device by name", "[nccl]") {
  auto g = dist::default_group();
  CHECK_THROWS_WITH(g->allreduce({from_vector<float>({1.f})}),
                    Catch::Contains("allreduce") && Catch::Contains("cuda:"));
}

TEST_CASE("DistributedDataParallel over nccl averages CUDA gradients", "[nccl]") {
  auto g = dist::default_group();
  const int n = g->size(), r = g->rank();
  manual_seed(7);
  auto model = std::make_shared<nn::Linear>(6, 3);
  model->to(here());
  dist::DistributedDataParallel ddp(model, g);
  // Rank r's batch, made the same way on every rank so each can compute the average itself.
  auto batch = [](int rank) {
    Generator gen(100 + static_cast<uint64_t>(rank));
    return randn({4, 6}, {}, &gen);
  };
  Tensor loss = sum(ddp.forward(batch(r).to(here())));
  loss.backward();
  // The reference: every rank's gradient on a local copy of the same weights, averaged.
  Tensor w = model->weight.detach().clone().requires_grad_(true);
  Tensor expected;
  for (int k = 0; k < n; ++k) {
    Tensor y = sum(linear(batch(k).to(here()), w, model->bias.detach()));
    Tensor gk = autograd::grad({y}, {w})[0];
    expected = expected.defined() ? add(expected, gk) : gk;
  }
  expected = div(expected, static_cast<double>(n));
  Tensor got = model->weight.grad();
  REQUIRE(got.defined());
  CHECK(got.device() == here());
  // f32 sums over n ranks in another order: a few units of f32 rounding per element.
  const std::vector<float> a = got.to_vector<float>(), b = expected.to_vector<float>();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(std::abs(a[i] - b[i]) <= 8 * 1.2e-7f * n * (1 + std::abs(b[i])));
  std::vector<Tensor> all;
  g->allgather(all, got.contiguous())->wait();
  for (const Tensor& o : all) CHECK(bitwise_equal(o, all[0]));
}
