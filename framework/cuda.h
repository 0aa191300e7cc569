// Queries about the CUDA backend. Safe to call in every build: without the backend, or without a
// working GPU and driver, is_available() is false.
#pragma once

#include "framework/device.h"

namespace minidl::cuda {

bool is_available();
int device_count();
// Whether this build contains the CUDA backend at all.
bool is_compiled();

// Throws a minidl::Error naming `op` when `device` cannot be used here: a CUDA device in a build
// without the backend, on a machine without a GPU, or with an index past device_count().
void check_device(Device device, const char* op);

}  // namespace minidl::cuda
