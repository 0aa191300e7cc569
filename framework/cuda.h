// Queries about the CUDA backend. Safe to call in every build: without the backend, or without a
// working GPU and driver, is_available() is false.
#pragma once

namespace minidl::cuda {

bool is_available();
int device_count();
// Whether this build contains the CUDA backend at all.
bool is_compiled();

}  // namespace minidl::cuda
