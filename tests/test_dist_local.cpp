// The parts of dist/ that need no second rank: DDP's bucket assignment, launcher detection, the
// errors of init_process_group outside mpirun (or in a build without MPI), and the reducer's
// bucket-timing hook over the group of one.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>

#include "distributed/dist.h"
#include "distributed/self_process_group.h"
#include "framework/cuda.h"
#include "minidl.h"
#include "ops/ops.h"

using namespace minidl;
using namespace minidl::dist;

TEST_CASE("bucket assignment: reverse order, small first bucket, one dtype per bucket", "[dist]") {
  // f32 parameters of 100, 200, 300000, 50, 10 elements (400, 800, 1.2M, 200, 40 bytes).
  std::vector<BucketParam> p = {{100, DType::F32}, {200, DType::F32}, {300000, DType::F32}, {50, DType::F32}, {10, DType::F32}};
  using Buckets = std::vector<std::vector<size_t>>;
  // First bucket closes once it reaches 1000 bytes (40 + 200 + 1.2M), the rest stays open.
  CHECK(compute_bucket_assignment(p, 1000, 2u << 20) == Buckets{{4, 3, 2}, {1, 0}});
  // Every parameter alone once the limits are a byte.
  CHECK(compute_bucket_assignment(p, 1, 1) == Buckets{{4}, {3}, {2}, {1}, {0}});
  // One bucket when nothing reaches the limits.
  CHECK(compute_bucket_assignment(p, 25u << 20, 25u << 20) == Buckets{{4, 3, 2, 1, 0}});
  // A bf16 parameter never shares an f32 bucket; each dtype has its own first bucket.
  p.push_back({600, DType::BF16});  // 1200 bytes: closes its dtype's first bucket alone
  p.insert(p.begin(), {10, DType::BF16});
  // indices: 0 bf16(10), 1..5 the f32 ones, 6 bf16(600)
  CHECK(compute_bucket_assignment(p, 1000, 2u << 20) == Buckets{{6}, {5, 4, 3}, {2, 1}, {0}});
  CHECK(compute_bucket_assignment({}, 1, 1).empty());
}

TEST_CASE("init_process_group outside mpirun is a clear error", "[dist]") {
  if (launch_info()) {
    WARN("skipped: running under a launcher");
    return;
  }
  CHECK_FALSE(is_initialized());
  if (is_mpi_available())
    CHECK_THROWS_WITH(init_process_group(), Catch::Contains("init_process_group") && Catch::Contains("not started by mpirun"));
  else
    CHECK_THROWS_WITH(init_process_group(), Catch::Contains("built without MPI"));
  CHECK_THROWS_WITH(init_process_group(InitOptions().backend("gloo")), Catch::Contains("unknown backend 'gloo'"));
  CHECK_THROWS_WITH(default_group(), Catch::Contains("not initialized"));
}

TEST_CASE("init_process_group with the nccl backend says what is missing", "[dist]") {
  // Each refusal comes before MPI or NCCL start, so this process stays a plain one.
  const InitOptions nccl = InitOptions().backend("nccl").require_launcher(false);
  if (!is_mpi_available()) {
    CHECK_THROWS_WITH(init_process_group(nccl), Catch::Contains("built without MPI"));
  } else if (!is_nccl_available()) {
    CHECK_THROWS_WITH(init_process_group(nccl), Catch::Contains("built without NCCL"));
  } else if (cuda::device_count() == 0) {
    CHECK_THROWS_WITH(init_process_group(nccl), Catch::Contains("nccl backend needs a CUDA GPU per rank"));
  } else {
    const int past = cuda::device_count();
    CHECK_THROWS_WITH(init_process_group(InitOptions(nccl).device(past)),
                      Catch::Contains("cuda:" + std::to_string(past)) && Catch::Contains("is not available"));
  }
  CHECK_FALSE(is_initialized());
}

TEST_CASE("the group of one rank: collectives are complete at once and leave the values", "[dist]") {
  auto g = make_self_group();
  CHECK((g->rank() == 0 && g->size() == 1 && g->backend() == "self"));
  Tensor a = from_vector<float>({1.5f, -2.f});
  auto w = g->allreduce({a}, AllreduceOptions().op(ReduceOp::Avg));
  CHECK(w->is_completed());
  CHECK(a.to_vector<float>() == std::vector<float>{1.5f, -2.f});
  std::vector<Tensor> out;
  g->allgather(out, a)->wait();
  REQUIRE(out.size() == 1);
  CHECK(out[0].to_vector<float>() == a.to_vector<float>());
  CHECK_FALSE(out[0].is_same(a));  // a copy, as with more ranks
  CHECK_THROWS_WITH(g->broadcast({a}, 1), Catch::Contains("broadcast") && Catch::Contains("root 1"));
}

TEST_CASE("launch_info reads Open MPI's environment", "[dist]") {
  if (launch_info()) {
    WARN("skipped: running under a launcher");
    return;
  }
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  auto info = launch_info();
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
  REQUIRE(info.has_value());
  CHECK(info->rank == 3);
  CHECK(info->world_size == 4);
  CHECK(info->local_rank == 1);
  CHECK_FALSE(launch_info().has_value());
}

TEST_CASE("BackwardTiming: the fraction of allreduce time before the end of backward", "[dist]") {
  using ms = std::chrono::milliseconds;
  const auto t0 = std::chrono::steady_clock::time_point() + std::chrono::hours(1);
  dist::BackwardTiming t{t0 + ms(10), {}};
  CHECK(t.overlap_fraction() == 0.0);  // nothing launched
  t.buckets.push_back({100, t0, t0 + ms(4)});           // all 4 ms before the end
  t.buckets.push_back({200, t0 + ms(8), t0 + ms(14)});  // 2 of its 6 ms before the end
  CHECK(t.overlap_fraction() == Approx(0.6));
  CHECK(t.exposed().count() == Approx(0.004));
  t.buckets.push_back({300, t0 + ms(12), t0 + ms(16)});  // launched after the end: none of it hidden
  CHECK(t.overlap_fraction() == Approx(6.0 / 14.0));
  CHECK(t.exposed().count() == Approx(0.006));
}

TEST_CASE("DDP timing hook: one report per synchronized backward, one entry per bucket", "[dist]") {
  manual_seed(2);
  auto net = std::make_shared<nn::models::MLP>(8, std::vector<int64_t>{16, 16}, 4);
  dist::DistributedDataParallel ddp(net, dist::make_self_group(),
                                    dist::DDPOptions().first_bucket_bytes(64).bucket_cap_bytes(600));
  const size_t n_buckets = ddp.reducer().bucket_indices().size();
  REQUIRE(n_buckets >= 3);
  std::vector<dist::BackwardTiming> reports;
  ddp.reducer().set_timing_callback([&](const dist::BackwardTiming& t) { reports.push_back(t); });
  const Tensor x = randn({4, 8}), y = randn({4, 4});
  auto step = [&] { mse_loss(ddp.forward(x), y).backward(); };
  step();
  REQUIRE(reports.size() == 1);
  const dist::BackwardTiming& r = reports[0];
  REQUIRE(r.buckets.size() == n_buckets);
  size_t bytes = 0;
  for (size_t i = 0; i < r.buckets.size(); ++i) {
    CHECK(r.buckets[i].launched <= r.buckets[i].completed);
    CHECK(r.buckets[i].launched <= r.backward_end);  // every gradient was ready before backward ended
    if (i > 0) CHECK(r.buckets[i - 1].launched <= r.buckets[i].launched);  // in launch order
    bytes += r.buckets[i].bytes;
  }
  CHECK(bytes == static_cast<size_t>(net->num_parameters()) * sizeof(float));
  CHECK(r.overlap_fraction() >= 0.0);
  CHECK(r.overlap_fraction() <= 1.0);
  {
    auto guard = ddp.no_sync();
    step();  // no synchronization, no report
  }
  CHECK(reports.size() == 1);
  ddp.reducer().set_timing_callback(nullptr);
  step();
  CHECK(reports.size() == 1);
}
