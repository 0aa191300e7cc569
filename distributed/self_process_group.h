// A process group of one rank with no engine behind it: every collective is already complete
// (a sum or average over one rank is the tensor itself). It bootstraps an NCCL group of one
// process started without a launcher (one GPU, no mpirun), as torch.distributed does for a world
// of one.
#pragma once
#include "distributed/process_group.h"

namespace minidl::dist {

ProcessGroupPtr make_self_group();

}  // namespace minidl::dist
