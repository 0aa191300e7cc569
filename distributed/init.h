// Starting the distributed runtime: which launcher started this process, and the default process
// group (torch.distributed.init_process_group). With Open MPI:
//   mpirun -np 2 ./train ...      ->   auto group = dist::init_process_group();
//                                      group->rank(), group->size()
#pragma once
#include <optional>
#include <string>

#include "distributed/process_group.h"

namespace minidl::dist {

// Rank and world size as the launcher exported them (Open MPI's OMPI_COMM_WORLD_RANK / _SIZE /
// _LOCAL_RANK, else PMI_RANK / PMI_SIZE), read without starting MPI; nullopt when not launched.
struct LaunchInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
};
std::optional<LaunchInfo> launch_info();

// True when minidl was built with an MPI backend (MINIDL_MPI found Open MPI).
bool is_mpi_available();

struct InitOptions {
  std::string backend_ = "mpi";   // the only backend so far
  bool require_launcher_ = true;  // refuse to start outside mpirun (a singleton MPI world)

  InitOptions& backend(std::string v) { backend_ = std::move(v); return *this; }
  InitOptions& require_launcher(bool v) { require_launcher_ = v; return *this; }
};

// Starts the backend (MPI_Init_thread; MPI_Finalize at exit) and makes the default group over
// all ranks. Throws when minidl has no MPI, or when not launched by mpirun (unless allowed), or
// when called twice without destroy_process_group().
ProcessGroupPtr init_process_group(InitOptions options = {});
bool is_initialized();
ProcessGroupPtr default_group();  // throws when not initialized
void destroy_process_group();     // drops the default group (MPI itself stays up until exit)
// Ends every rank's process with `code` (MPI_Abort): what a program does on an error that only
// some ranks may have hit, so that the others do not wait forever in a collective. Without a
// started backend it just exits.
[[noreturn]] void abort_all(int code);

}  // namespace minidl::dist
