// Every CUDA and cuDNN call is checked; a failure throws minidl::Error naming file:line, the call
// and the library's message. The cuDNN macro needs cudnn.h included by the file that uses it (this
// header pulls in only the runtime). cuBLAS's check is in ops/cuda/cublas_library.h (it is loaded
// at run time).
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

// After a kernel launch: reports a bad configuration (or an earlier asynchronous fault) at the
// launch site instead of at some later, unrelated call.
#define MINIDL_CUDA_CHECK_LAUNCH(name)                                                                    \
  do {                                                                                                    \
    cudaError_t err_ = cudaGetLastError();                                                                \
    if (err_ != cudaSuccess)                                                                              \
      throw ::minidl::Error(::minidl::detail::concat(__FILE__, ":", __LINE__, ": launching ", name,       \
                                                     " failed: ", cudaGetErrorString(err_)));             \
  } while (0)

#define MINIDL_CUDNN_CHECK(call)                                                                          \
  do {                                                                                                    \
    cudnnStatus_t st_ = (call);                                                                           \
    if (st_ != CUDNN_STATUS_SUCCESS)                                                                      \
      throw ::minidl::Error(::minidl::detail::concat(__FILE__, ":", __LINE__, ": ", #call, " failed: ",  \
                                                     cudnnGetErrorString(st_)));                          \
  } while (0)
