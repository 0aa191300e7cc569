// Allreduce bandwidth of dist::ProcessGroup (MPI backend) against raw MPI on the same buffers:
// blocking MPI_Allreduce and MPI_Iallreduce + MPI_Wait (what the group posts), repetitions
// interleaved, printed by rank 0 as one line per size with the ratios. Also the f16 path (staged
// through f32) at the same element count. Run:
//   mpirun -np 2 --oversubscribe build/bench/minidl-bench-allreduce [reps]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "distributed/dist.h"
#include "ops/ops.h"

using namespace minidl;

namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

template <class F>
double best_of(int reps, int iters, F f) {  // seconds per call, best of reps (after a barrier)
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    for (int i = 0; i < iters; ++i) f();
    best = std::min(best, (now() - t0) / iters);
  }
  return best;
}
}  // namespace

int main(int argc, char** argv) {
  auto group = dist::init_process_group();
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  if (group->rank() == 0)
    std::printf("# allreduce (f32 sum, in place), %d ranks, best of %d; GB/s = bytes / time\n"
                "%10s %10s %10s %10s %12s %12s %12s\n", group->size(), reps, "bytes", "Allreduce", "Iallreduce",
                "group", "group/Allr.", "group/Iallr.", "f16 group*");
  for (int64_t bytes = 4 << 10; bytes <= (64 << 20); bytes *= 4) {
    const int64_t n = bytes / 4;
    Tensor t = ones({n});
    Tensor h = ones({n}, DType::F16);
    const int iters = static_cast<int>(std::max<int64_t>(3, (64 << 20) / bytes));
    double raw = 1e30, iraw = 1e30, grp = 1e30, f16 = 1e30;
    for (int r = 0; r < reps; ++r) {  // interleaved
      raw = std::min(raw, best_of(1, iters, [&] {
        MPI_Allreduce(MPI_IN_PLACE, t.raw_data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }));
      iraw = std::min(iraw, best_of(1, iters, [&] {
        MPI_Request req;
        MPI_Iallreduce(MPI_IN_PLACE, t.raw_data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
      }));
      grp = std::min(grp, best_of(1, iters, [&] { group->allreduce({t})->wait(); }));
      f16 = std::min(f16, best_of(1, iters, [&] { group->allreduce({h})->wait(); }));
    }
    if (group->rank() == 0)
      std::printf("%10lld %10.3f %10.3f %10.3f %12.2f %12.2f %12.3f\n", static_cast<long long>(bytes), bytes / raw / 1e9,
                  bytes / iraw / 1e9, bytes / grp / 1e9, raw / grp, iraw / grp, bytes / f16 / 1e9);
  }
  if (group->rank() == 0) std::printf("# * f16 tensors of the same element count (reduced in f32: converted, summed, converted back), per f32 byte\n");
  return 0;
}
