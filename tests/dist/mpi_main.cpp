// main() of the multi-rank test programs: starts the default MPI process group, runs the Catch2
// session on every rank (each rank runs every test case, in the same order, so their collectives
// match), and returns non-zero when any rank failed. Run as `mpirun -np 2 test_dist_mpi`.
#include "catch_session.h"
#include "distributed/init.h"
#include "ops/ops.h"

int main(int argc, char** argv) {
  using namespace minidl;
  auto group = dist::init_process_group();
  const int rc = testing::run_catch_session(argc, argv);
  // Every rank reports the same verdict (mpirun also fails when any rank does).
  Tensor failed = from_vector<int32_t>({rc != 0 ? 1 : 0});
  group->allreduce({failed})->wait();
  const int any_failed = static_cast<int>(failed.item());
  dist::destroy_process_group();
  return any_failed ? 1 : 0;
}
