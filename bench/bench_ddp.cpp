// Data-parallel training step of a model-zoo model over the MPI process group: samples/s of the
// whole step (forward, backward, optimizer) with DistributedDataParallel, and how much of the
// gradient allreduce the bucketed reducer hides behind backward:
//   local    forward + backward without DDP              (T_local)
//   comm     the same buckets' allreduces, one after another, nothing else running (T_comm)
//   ddp      forward + backward through DDP              (T_ddp)
//   overlap  from the reducer's bucket timing (Reducer::set_timing_callback, on during the DDP runs
//            only): per bucket, when its allreduce was posted and when it was first seen complete,
//            against the end of backward; the fraction of the summed allreduce time (posted to
//            complete) that lay before the end of backward, per iteration, and how long the end
//            of backward then waited for the last bucket ("exposed").
// The step figures are the median of `reps` interleaved repetitions of 5 steps; the overlap is the
// median (and range) over every DDP iteration, with the bucket table of the median iteration,
// printed by rank 0 from rank 0's clock. Run as
//   mpirun -np 2 build/bench/minidl-bench-ddp [model] [batch per rank] [reps] [bucket MiB]
// (bucket MiB: the first bucket and every later one, DDP's 1 and 25 MiB when omitted), and with
// -np 1 (then no DDP: the step alone) to compare 2 ranks x 1 thread with 1 process x 2 threads
// (OMP_NUM_THREADS sets the threads per process); bench/ddp_scaling.sh runs both.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "minidl.h"

using namespace minidl;

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double ms_between(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
  return 1e3 * std::chrono::duration<double>(to - from).count();
}

// The overlap fraction over the DDP iterations, and the buckets of the median one.
void print_overlap(std::vector<dist::BackwardTiming> timings) {
  if (timings.empty()) return;
  std::sort(timings.begin(), timings.end(),
            [](const auto& a, const auto& b) { return a.overlap_fraction() < b.overlap_fraction(); });
  std::vector<double> exposed;
  for (const auto& t : timings) exposed.push_back(1e3 * t.exposed().count());
  const dist::BackwardTiming& mid = timings[timings.size() / 2];
  std::printf("  overlap fraction:   %8.2f     (median of %zu iterations, range %.2f-%.2f; share of allreduce time\n"
              "                                  before the end of backward)\n",
              mid.overlap_fraction(), timings.size(), timings.front().overlap_fraction(), timings.back().overlap_fraction());
  std::printf("  exposed wait:       %8.3f ms   (median: end of backward to the last bucket's completion)\n",
              median(exposed));
  std::printf("  buckets of the median iteration (ms relative to the end of backward):\n");
  std::printf("    %6s %10s %10s %10s %10s\n", "bucket", "KiB", "posted", "complete", "in flight");
  for (size_t i = 0; i < mid.buckets.size(); ++i) {
    const auto& b = mid.buckets[i];
    std::printf("    %6zu %10.1f %10.3f %10.3f %10.3f\n", i, b.bytes / 1024.0, ms_between(mid.backward_end, b.launched),
                ms_between(mid.backward_end, b.completed), ms_between(b.launched, b.completed));
  }
}

// The zoo's input shapes: Fashion-MNIST images for mlp and lenet, CIFAR-10 images for the CNNs.
Shape input_shape(const std::string& model, int64_t batch) {
  if (model == "mlp") return {batch, 784};
  if (model == "lenet") return {batch, 1, 28, 28};
  return {batch, 3, 32, 32};
}
}  // namespace

int main(int argc, char** argv) {
  const std::string model_name = argc > 1 ? argv[1] : "mlp";
  const int64_t batch = argc > 2 ? std::atoll(argv[2]) : 64;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 7;
  const double bucket_mb = argc > 4 ? std::atof(argv[4]) : 0.0;  // 0: DDP's defaults
  const auto launch = dist::launch_info();
  dist::ProcessGroupPtr group;
  if (launch && launch->world_size > 1) group = dist::init_process_group();
  const int world = group ? group->size() : 1;
  const bool main_rank = !group || group->rank() == 0;

  manual_seed(1);
  auto model = nn::models::make_model(model_name);
  std::optional<dist::DistributedDataParallel<nn::Layer>> ddp;
  dist::DDPOptions ddp_options;
  if (bucket_mb > 0) ddp_options.first_bucket_mb(bucket_mb).bucket_cap_mb(bucket_mb);
  if (group) ddp.emplace(model, group, ddp_options);
  std::vector<dist::BackwardTiming> timings;  // one per DDP iteration of the timed runs
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01).momentum(0.9));
  Generator gen(7 + static_cast<uint64_t>(group ? group->rank() : 0));
  const Tensor x = randn(input_shape(model_name, batch), {}, &gen);
  const Tensor y = randint(0, 10, {batch}, DType::I64, &gen);

  auto fwd_bwd = [&](bool through_ddp) {
    opt.zero_grad();
    Tensor out = through_ddp ? ddp->forward(x) : model->forward(x);
    nn::functional::cross_entropy(out, y).backward();
  };
  // The buckets' communication alone: one blocking allreduce per bucket, in launch order.
  std::vector<Tensor> flats;
  if (group)
    for (const auto& bucket : ddp->reducer().bucket_indices()) {
      int64_t n = 0;
      for (size_t i : bucket) n += model->parameters()[i].numel();
      flats.push_back(zeros({n}));
    }
  auto comm = [&] {
    for (const Tensor& f : flats) group->allreduce({f}, dist::AllreduceOptions().op(dist::ReduceOp::Avg))->wait();
  };
  auto barrier = [&] {
    if (group) group->barrier()->wait();
  };

  for (int i = 0; i < 3; ++i) {  // warm-up: allocator caches, thread pool, MPI connections
    fwd_bwd(group != nullptr);
    opt.step();
  }
  std::vector<double> t_local, t_comm, t_ddp, t_step;
  const int iters = 5;
  for (int r = 0; r < reps; ++r) {
    auto timed = [&](auto&& f) {
      barrier();
      const double t0 = now();
      for (int i = 0; i < iters; ++i) f();
      barrier();
      return (now() - t0) / iters;
    };
    t_local.push_back(timed([&] { fwd_bwd(false); }));
    if (group) {
      t_comm.push_back(timed(comm));
      ddp->reducer().set_timing_callback([&](const dist::BackwardTiming& t) { timings.push_back(t); });
      t_ddp.push_back(timed([&] { fwd_bwd(true); }));
      ddp->reducer().set_timing_callback(nullptr);
    }
    t_step.push_back(timed([&] {
      fwd_bwd(group != nullptr);
      opt.step();
    }));
  }
  if (main_rank) {
    const char* threads = std::getenv("OMP_NUM_THREADS");
    std::printf("model %s, batch %lld per rank, %d rank(s) x %s thread(s), median of %d\n", model_name.c_str(),
                static_cast<long long>(batch), world, threads ? threads : "default", reps);
    std::printf("  step (fwd+bwd+SGD): %8.3f ms   %9.0f samples/s over all ranks\n", 1e3 * median(t_step),
                world * batch / median(t_step));
    std::printf("  fwd+bwd, no DDP:    %8.3f ms\n", 1e3 * median(t_local));
    if (group) {
      std::printf("  allreduce alone:    %8.3f ms   (%zu buckets, one after another)\n", 1e3 * median(t_comm), flats.size());
      std::printf("  fwd+bwd with DDP:   %8.3f ms\n", 1e3 * median(t_ddp));
      print_overlap(timings);
    }
  }
  if (group) dist::destroy_process_group();
  return 0;
}
