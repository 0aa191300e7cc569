// Batch statistics across processes (PyTorch's SyncBatchNorm and torch.distributed.nn's
// differentiable all_reduce): with DistributedDataParallel each process normalizes its share of the
// batch with the mean and variance of the whole global batch, as one process would with all of it,
// instead of with its own share's. Worth it where the per-process batch is small (a few images per
// GPU); it costs two collectives per batch norm in forward and two in backward.
//
//   auto model = std::make_shared<nn::ResNet20>();
//   dist::convert_sync_batchnorm(*model, group);   // every BatchNorm in the model, in place
//   dist::DistributedDataParallel ddp(model, group);
#pragma once
#include "distributed/process_group.h"
#include "nn/module.h"

namespace minidl::dist {

// The elementwise sum of x over every rank of `group` (a new tensor), recorded so that its
// gradient is the sum of the ranks' gradients (torch.distributed.nn.functional.all_reduce). Every
// rank must call it, and run backward through it, in the same order. CPU tensors over MPI, CUDA
// tensors over NCCL, as the group's collectives.
Tensor all_reduce_sum(const Tensor& x, const ProcessGroupPtr& group);

// Makes every BatchNorm in `module` (itself included) normalize with the statistics of the global
// batch in training mode (nn::BatchNorm::set_batch_stats_all_sum with all_reduce_sum over
// `group`); evaluation mode is unchanged. A deliberate difference from PyTorch's
// convert_sync_batchnorm: the modules are converted in place and keep their type (C++ models hold
// their layers by typed pointers that a replacement would leave behind), so the state dict is the
// same too. A group of one rank leaves them as they are (PyTorch falls back to batch_norm there).
// Replicas and copies (clone_structure: DataParallel, AveragedModel) start unconverted. Returns
// the number of batch norms converted.
int convert_sync_batchnorm(nn::Module& module, const ProcessGroupPtr& group);

}  // namespace minidl::dist
