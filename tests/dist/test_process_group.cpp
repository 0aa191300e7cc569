// The MPI process group on 2 ranks: exact results of allreduce (sum, avg; f32, f64, f16, bf16,
// i64, non-contiguous), broadcast (bitwise, from either root), allgather, barrier, and the errors.
#include <catch2/catch.hpp>

#include "distributed/dist.h"
#include "ops/ops.h"

using namespace minidl;

TEST_CASE("allreduce sums and averages in place", "[dist][mpi]") {
  auto g = dist::default_group();
  REQUIRE(g->size() == 2);
  const double r = g->rank();
  Tensor a = from_vector<float>({static_cast<float>(r + 1), static_cast<float>(2 * (r + 1))});
  Tensor b = from_vector<double>({0.1 * (r + 1)});
  Tensor c = from_vector<int64_t>({(int64_t{1} << 40) + static_cast<int64_t>(r)});
  g->allreduce({a, b, c})->wait();
  CHECK(a.to_vector<float>() == std::vector<float>{3, 6});
  CHECK(b.item() == 0.1 + 0.2);  // one double addition, either order
  CHECK(c.item_int() == (int64_t{1} << 41) + 1);
  Tensor d = from_vector<float>({static_cast<float>(r), 5});
  g->allreduce({d}, dist::AllreduceOptions().op(dist::ReduceOp::Avg))->wait();
  CHECK(d.to_vector<float>() == std::vector<float>{0.5f, 5});
}

TEST_CASE("allreduce sums f16 and bf16 in f32, and handles non-contiguous tensors", "[dist][mpi]") {
  auto g = dist::default_group();
  const int r = g->rank();
  // 2048 + 1 is not an f16 (spacing 2 there): the f32 sum 2049 rounds once, to even (2048).
  Tensor h = from_vector<float>({r == 0 ? 2048.f : 1.f, 0.25f}).to(DType::F16);
  Tensor bf = from_vector<float>({r == 0 ? 256.f : 1.f}).to(DType::BF16);
  g->allreduce({h, bf})->wait();
  CHECK(h.dtype() == DType::F16);
  CHECK(h.to(DType::F32).to_vector<float>() == std::vector<float>{2048.f, 0.5f});
  CHECK(bf.to(DType::F32).item() == 256.f);  // 257: a tie at bf16 spacing 2, to even
  Tensor m = arange(0, 6, 1, DType::F32).view({2, 3}).add_(ones({2, 3}), r);
  Tensor t = m.t();  // non-contiguous view: reduced through a staging copy, written back in place
  g->allreduce({t})->wait();
  CHECK(m.to_vector<float>() == std::vector<float>{1, 3, 5, 7, 9, 11});
}

TEST_CASE("broadcast copies the root's bytes, allgather collects every rank", "[dist][mpi]") {
  auto g = dist::default_group();
  const int r = g->rank();
  Tensor x = full({3}, r == 1 ? 0.1 : -7.0, TensorOptions(DType::F32));
  Tensor y = full({2}, r == 1 ? 0.3 : 9.0, TensorOptions(DType::BF16));
  Tensor z = full({2, 2}, r == 1 ? 1.0 : 0.0).t();
  g->broadcast({x, y, z}, 1)->wait();
  CHECK(x.to_vector<float>() == std::vector<float>(3, 0.1f));
  CHECK(y.to(DType::F32).to_vector<float>() == full({2}, 0.3, TensorOptions(DType::BF16)).to(DType::F32).to_vector<float>());
  CHECK(z.contiguous().to_vector<float>() == std::vector<float>(4, 1.f));
  std::vector<Tensor> all;
  g->allgather(all, from_vector<int64_t>({r, 10 * r}))->wait();
  REQUIRE(all.size() == 2);
  CHECK(all[0].to_vector<int64_t>() == std::vector<int64_t>{0, 0});
  CHECK(all[1].to_vector<int64_t>() == std::vector<int64_t>{1, 10});
  g->barrier()->wait();
}

TEST_CASE("a work in flight completes on wait, and the errors name the collective", "[dist][mpi]") {
  auto g = dist::default_group();
  Tensor a = ones({1 << 16});
  dist::WorkPtr w = g->allreduce({a});
  w->wait();
  CHECK(w->is_completed());
  CHECK(a.sum().item() == 2.0 * (1 << 16));
  CHECK_THROWS_WITH(g->allreduce({ones({2}, DType::I64)}, dist::AllreduceOptions().op(dist::ReduceOp::Avg)),
                    Catch::Contains("allreduce") && Catch::Contains("avg needs a floating tensor"));
  CHECK_THROWS_WITH(g->allreduce({ones({2}, DType::Bool)}), Catch::Contains("cannot reduce tensors of dtype"));
  CHECK_THROWS_WITH(g->broadcast({ones({2})}, 2), Catch::Contains("root 2 is not a rank"));
  CHECK_THROWS_WITH(dist::init_process_group(), Catch::Contains("already initialized"));
}
