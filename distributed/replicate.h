// Replication for dist::DataParallel on several devices (torch.nn.parallel.replicate). A replica is
// a module built once by the original's clone_structure() (nn/module.h) and refreshed before every
// forward: its parameter slots become differentiable copies of the original's parameters on the
// replica's device (a device copy, or an alias on the original's own device, each recorded in the
// graph as PyTorch's Broadcast is, so backward adds every replica's gradient into the original's
// .grad), and its buffers become detached copies. As in PyTorch, what a replica writes into its
// buffers (batch norm's running statistics in training mode) is not written back to the original;
// only the chunk that runs on the original module itself (DataParallel's first) updates them.
#pragma once
#include <vector>

#include "framework/device.h"
#include "nn/module.h"

namespace minidl::dist::detail {

// Checks DataParallel's device list: at least one device, all CPU or all CUDA, CUDA devices that
// exist. Throws an Error naming DataParallel.
void check_data_parallel_devices(const std::vector<Device>& devices);

// Every parameter and buffer of module is on `device` (PyTorch: "module must have its parameters
// and buffers on device cuda:0 (device_ids[0])").
void check_module_on(const nn::Module& module, Device device);

// module.clone_structure(), with DataParallel's name on its errors. The default generator's state
// is restored afterwards: the new layers' random initialisation (overwritten anyway) does not
// change the numbers the program draws next.
nn::ModulePtr make_replica_structure(const nn::Module& module);

// Makes `replica` (from make_replica_structure(module)) a replica of `module` on `device`, with
// the caller's grad mode deciding whether the parameter copies are recorded.
void refresh_replica(nn::Module& replica, const nn::Module& module, Device device);

}  // namespace minidl::dist::detail
