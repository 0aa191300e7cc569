// The Open MPI backend of dist::ProcessGroup: nonblocking MPI collectives (MPI_Iallreduce,
// MPI_Ibcast, MPI_Iallgather, MPI_Ibarrier) on CPU tensors, over a duplicate of MPI_COMM_WORLD.
// Built only when MINIDL_MPI found MPI; this header does not include mpi.h.
#pragma once
#include "distributed/process_group.h"

namespace minidl::dist {

// Initializes MPI if needed (MPI_THREAD_SERIALIZED; MPI_Finalize registered at exit) and returns a
// group over all ranks. Calls into the group are serialized by a mutex, so threads may share it.
ProcessGroupPtr make_mpi_world_group();
// MPI_Abort on MPI_COMM_WORLD when MPI is running; returns otherwise.
void abort_mpi_world(int code);

}  // namespace minidl::dist
