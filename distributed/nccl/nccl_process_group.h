// The NCCL backend of dist::ProcessGroup: collectives on CUDA tensors, one GPU per rank (as
// torch.distributed's "nccl" backend). NCCL's communicator is bootstrapped through another group
// (the MPI world group): rank 0 makes the unique id and broadcasts it. Built only when MINIDL_NCCL
// found NCCL together with the CUDA and MPI backends; this header includes neither nccl.h nor CUDA.
#pragma once
#include "distributed/process_group.h"

namespace minidl::dist {

// A group over the ranks of `bootstrap`, each rank driving CUDA device `device`. Collective calls
// of every rank of `bootstrap` (all of them must call this, in the same order as their other
// collectives). Throws a minidl::Error when the device is not usable or NCCL fails to start.
ProcessGroupPtr make_nccl_group(ProcessGroup& bootstrap, int device);

// NCCL's version as "major.minor.patch", from the library that is linked.
std::string nccl_version();

}  // namespace minidl::dist
