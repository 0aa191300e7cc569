// cuBLAS, loaded on the first CUDA matrix product instead of linked. Why: libcublas.so pulls in
// cuBLASLt at program start, which costs every program of a CUDA-enabled build ~210 MB of resident
// memory and ~0.35 s before main (measured on an empty main, bench/README.md), whether or not it
// ever touches a GPU: CPU training, every test process, `minidl-train --help`. The functions minidl
// calls are resolved by name from the library once; each call then costs one indirect jump.
#pragma once
#include <cublas_v2.h>

#include "framework/error.h"

namespace minidl::kernels::cuda {

// The types of the two products as cuBLAS exports them (C++ callers also see inline overloads that
// take the legacy cudaDataType compute type, so decltype(&cublasGemmEx) is ambiguous; the .cpp
// checks these against the header's declarations).
using CublasGemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                        const void*, cudaDataType, int, const void*, cudaDataType, int, const void*,
                                        void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
using CublasGemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                                      int, const void*, const void*, cudaDataType, int, long long,
                                                      const void*, cudaDataType, int, long long, const void*, void*,
                                                      cudaDataType, int, long long, int, cublasComputeType_t,
                                                      cublasGemmAlgo_t);

// The cuBLAS entry points minidl uses, by their exported names (cublas_v2.h maps cublasCreate to
// cublasCreate_v2 and so on), with their types.
#define MINIDL_CUBLAS_FUNCTIONS(X)                                                                        \
  X(cublasCreate_v2, decltype(&::cublasCreate_v2))                                                        \
  X(cublasDestroy_v2, decltype(&::cublasDestroy_v2))                                                      \
  X(cublasSetStream_v2, decltype(&::cublasSetStream_v2))                                                  \
  X(cublasSetMathMode, decltype(&::cublasSetMathMode))                                                    \
  X(cublasGemmEx, CublasGemmEx)                                                                           \
  X(cublasGemmStridedBatchedEx, CublasGemmStridedBatchedEx)                                               \
  X(cublasGetStatusName, decltype(&::cublasGetStatusName))                                                \
  X(cublasGetStatusString, decltype(&::cublasGetStatusString))

struct CublasLibrary {
#define MINIDL_CUBLAS_MEMBER(name, type) type name = nullptr;
  MINIDL_CUBLAS_FUNCTIONS(MINIDL_CUBLAS_MEMBER)
#undef MINIDL_CUBLAS_MEMBER
  const char* path = nullptr;  // the file name the library was opened by
};

// Opens libcublas.so.<major of the headers> on the first call (the loader's search path: the
// program's RUNPATH, LD_LIBRARY_PATH, the system cache), falling back to the file the build found.
// Throws minidl::Error naming the files tried and the loader's message when neither opens or a
// function is missing; later calls retry, so a library installed meanwhile is found.
const CublasLibrary& cublas();

// Whether cuBLAS is mapped into this process yet (tests: nothing loads it before a CUDA product).
bool cublas_loaded();

}  // namespace minidl::kernels::cuda

// Every cuBLAS call is checked; a failure throws minidl::Error naming file:line, the call and
// cuBLAS's own name and message for the status.
#define MINIDL_CUBLAS_CHECK(call)                                                                         \
  do {                                                                                                    \
    cublasStatus_t st_ = (call);                                                                          \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                                   \
      const auto& lib_ = ::minidl::kernels::cuda::cublas();                                               \
      throw ::minidl::Error(::minidl::detail::concat(__FILE__, ":", __LINE__, ": ", #call, " failed: ",  \
                                                     lib_.cublasGetStatusName(st_), " (",                 \
                                                     lib_.cublasGetStatusString(st_), ")"));              \
    }                                                                                                     \
  } while (0)
