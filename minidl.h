// minidl: the one umbrella header a user program includes.
#pragma once

#include "amp/autocast.h"
#include "amp/custom_function.h"
#include "amp/policy.h"
#include "amp/precision_report.h"
#include "framework/autograd/engine.h"
#include "framework/autograd/function.h"
#include "framework/autograd/grad_mode.h"
#include "framework/autograd/node.h"
#include "framework/device.h"
#include "framework/dtype.h"
#include "framework/cuda.h"
#include "framework/error.h"
#include "framework/tensor.h"
#include "ops/ops.h"
