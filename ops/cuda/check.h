// Every CUDA, cuBLAS and cuDNN call is checked; a failure throws minidl::Error naming file:line,
// the call and the library's message.
#pragma once
#include <cuda_runtime.h>

#include "framework/error.h"

#define MINIDL_CUDA_CHECK(call)                                                                          \
  do {                                                                                                   \
    cudaError_t err_ = (call);                                                                           \
    if (err_ != cudaSuccess)                                                                             \
      throw ::minidl::Error(::minidl::detail::concat(__FILE__, ":", __LINE__, ": ", #call, " failed: ", \
                                                     cudaGetErrorString(err_)));                         \
  } while (0)
