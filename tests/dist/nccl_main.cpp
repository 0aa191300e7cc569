// main() of the NCCL test program: one rank per GPU, launched by mpirun like test_dist_mpi, or run
// alone as a world of one (what the GPU check does: it carries no MPI runtime). Where
// the ranks cannot each have a GPU it reports itself skipped (a failure under MINIDL_EXPECT_GPU=1
// when there is no GPU at all; a machine with fewer GPUs than ranks always skips, saying so).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "catch_session.h"
#include "distributed/init.h"
#include "framework/cuda.h"
#include "ops/ops.h"

int main(int argc, char** argv) {
  using namespace minidl;
  const auto launch = dist::launch_info();
  const int ranks = launch ? launch->world_size : 1;
  const int gpus = cuda::device_count();
  const char* expect = std::getenv("MINIDL_EXPECT_GPU");
  const bool expect_gpu = expect != nullptr && std::string(expect) == "1";
  if (!dist::is_nccl_available() || gpus < ranks) {
    const bool fail = expect_gpu && (gpus == 0 || !dist::is_nccl_available());
    std::printf("%s: NCCL tests need %d GPU(s) (one per rank) and the NCCL backend; this machine has %d GPU(s), "
                "NCCL %s%s\n",
                fail ? "FAILED" : "skipped", ranks, gpus, dist::is_nccl_available() ? "built" : "not built",
                fail ? " (MINIDL_EXPECT_GPU=1)" : "");
    return fail ? 1 : 0;
  }
  // Without mpirun: a world of one (one GPU), which NCCL starts without MPI.
  auto group = dist::init_process_group(dist::InitOptions().backend("nccl").require_launcher(false));
  const int rc = testing::run_catch_session(argc, argv);
  Tensor failed = from_vector<int32_t>({rc != 0 ? 1 : 0}).to(Device::cuda(dist::default_group_device()));
  group->allreduce({failed})->wait();
  const int any_failed = static_cast<int>(failed.item());
  dist::destroy_process_group();
  return any_failed ? 1 : 0;
}
