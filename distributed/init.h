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
// True when minidl was built with the NCCL backend (MINIDL_NCCL: CUDA, MPI and NCCL found). Says
// nothing about GPUs: the group also needs a usable CUDA device per rank.
bool is_nccl_available();

struct InitOptions {
  std::string backend_ = "mpi";   // "mpi" (CPU tensors) or "nccl" (CUDA tensors, one GPU per rank)
  bool require_launcher_ = true;  // refuse to start outside mpirun (a singleton MPI world)
  int device_ = -1;               // nccl: this rank's GPU; -1: the local rank modulo the GPU count

  InitOptions& backend(std::string v) { backend_ = std::move(v); return *this; }
  InitOptions& require_launcher(bool v) { require_launcher_ = v; return *this; }
  InitOptions& device(int v) { device_ = v; return *this; }
};

// Starts the backend (MPI_Init_thread; MPI_Finalize at exit; with "nccl" also a communicator
// over the MPI ranks, bootstrapped through MPI) and makes the default group over all ranks. Throws
// when minidl lacks the backend, when "nccl" finds no usable GPU, when not launched by mpirun
// (unless allowed), or when called twice without destroy_process_group().
ProcessGroupPtr init_process_group(InitOptions options = {});
bool is_initialized();
ProcessGroupPtr default_group();  // throws when not initialized
// The GPU the "nccl" default group drives on this rank (a CUDA tensor's index); -1 for "mpi".
int default_group_device();
void destroy_process_group();     // drops the default group (MPI itself stays up until exit)
// Ends every rank's process with `code` (MPI_Abort): what a program does on an error that only
// some ranks may have hit, so that the others do not wait forever in a collective. Without a
// started backend it just exits.
[[noreturn]] void abort_all(int code);

}  // namespace minidl::dist
