// Data-parallel training step of a model-zoo model over the MPI process group: samples/s of the
// whole step (forward, backward, optimizer) with DistributedDataParallel, and how much of the
// gradient allreduce the bucketed reducer hides behind backward:
//   local    forward + backward without DDP              (T_local)
//   comm     the same buckets' allreduces, one after another, nothing else running (T_comm)
//   ddp      forward + backward through DDP              (T_ddp)
//   overlap  (T_local + T_comm - T_ddp) / T_comm, clamped to [0, 1]: 1 when the communication is
//            entirely hidden, 0 when DDP costs backward plus the whole communication.
// Every figure is the median of `reps` interleaved repetitions, printed by rank 0. Run as
//   mpirun -np 2 build/bench/minidl-bench-ddp [model] [batch per rank] [reps]
// and with -np 1 (then no DDP: the step alone) to compare 2 ranks x 1 thread with 1 process x 2
// threads (OMP_NUM_THREADS sets the threads per process); bench/ddp_scaling.sh runs both.
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
  const auto launch = dist::launch_info();
  dist::ProcessGroupPtr group;
  if (launch && launch->world_size > 1) group = dist::init_process_group();
  const int world = group ? group->size() : 1;
  const bool main_rank = !group || group->rank() == 0;

  manual_seed(1);
  auto model = nn::models::make_model(model_name);
  std::optional<dist::DistributedDataParallel<nn::Layer>> ddp;
  if (group) ddp.emplace(model, group);
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
      t_ddp.push_back(timed([&] { fwd_bwd(true); }));
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
      const double tl = median(t_local), tc = median(t_comm), td = median(t_ddp);
      const double overlap = std::clamp((tl + tc - td) / tc, 0.0, 1.0);
      std::printf("  allreduce alone:    %8.3f ms   (%zu buckets)\n", 1e3 * tc, flats.size());
      std::printf("  fwd+bwd with DDP:   %8.3f ms\n", 1e3 * td);
      std::printf("  overlap fraction:   %8.2f     (1 = communication fully hidden by backward)\n", overlap);
    }
  }
  if (group) dist::destroy_process_group();
  return 0;
}
