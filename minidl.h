// minidl: the one umbrella header a user program includes. Listed floor by floor, bottom up.
#pragma once

// core
#include "framework/cpu_allocator.h"
#include "framework/cuda.h"
#include "framework/device.h"
#include "framework/dtype.h"
#include "framework/error.h"
#include "framework/grad_mode.h"
#include "framework/json.h"
// autocast state
#include "autocast/cast_cache.h"
#include "autocast/policy.h"
#include "autocast/state.h"
// ops (Tensor, the graph, the autocast hook and policy table)
#include "ops/autocast_hook.h"
#include "ops/node.h"
#include "ops/ops.h"
#include "ops/tensor.h"
// autograd engine, serialization
#include "autograd/engine.h"
#include "autograd/function.h"
#include "serialize/serialize.h"
#include "serialize/tensor_dict.h"
// modules, optimizers
#include "nn/conv.h"
#include "nn/models.h"
#include "nn/vit.h"
#include "nn/nn.h"
#include "optim/optim.h"
// amp
#include "amp/custom_function.h"
#include "amp/grad_scaler.h"
#include "amp/precision_report.h"
// distributed
#include "distributed/dist.h"
// data
#include "data/cifar.h"
#include "data/dataloader.h"
#include "data/mnist.h"
#include "data/tensor_dataset.h"
#include "data/transforms.h"
