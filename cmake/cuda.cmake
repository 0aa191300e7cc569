# CUDA backend detection. MINIDL_CUDA=AUTO turns it on only when nvcc, cuBLAS and cuDNN are all
# found; the CPU-only build must keep working where no CUDA toolkit exists.
set(MINIDL_HAS_CUDA OFF)
if(NOT MINIDL_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  find_package(CUDAToolkit QUIET)
  find_library(MINIDL_CUDNN_LIB cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu)
  find_path(MINIDL_CUDNN_INCLUDE cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include /usr/include)
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND TARGET CUDA::cublas AND MINIDL_CUDNN_LIB AND MINIDL_CUDNN_INCLUDE)
    set(MINIDL_HAS_CUDA ON)
  elseif(MINIDL_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MINIDL_CUDA=ON but nvcc, cuBLAS or cuDNN was not found")
  endif()
endif()
message(STATUS "minidl CUDA backend: ${MINIDL_HAS_CUDA}")

if(MINIDL_HAS_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)  # H100/H200; override with -DCMAKE_CUDA_ARCHITECTURES=...
  endif()
  enable_language(CUDA)
  # CMake 3.25 does not know nvcc's C++20 dialect: .cu files are C++17 (the host headers they
  # include must stay C++17-clean; framework/half.h is not, so kernels use cuda_fp16.h instead).
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
endif()

function(minidl_add_cuda_sources target)
  if(MINIDL_HAS_CUDA)
    file(GLOB cuda_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/framework/cuda/*.cu ${PROJECT_SOURCE_DIR}/ops/cuda/*.cu
         ${PROJECT_SOURCE_DIR}/ops/cuda/*.cpp)
    target_sources(${target} PRIVATE ${cuda_sources})
    target_compile_definitions(${target} PUBLIC MINIDL_WITH_CUDA=1)
    target_include_directories(${target} PRIVATE ${MINIDL_CUDNN_INCLUDE})
    # cuBLAS is opened at run time on the first CUDA product (ops/cuda/cublas_library.h: linked, its
    # cuBLASLt costs every program ~210 MB and ~0.35 s at start); the file found here is the fallback
    # when the loader's search path does not reach it.
    get_target_property(cublas_path CUDA::cublas IMPORTED_LOCATION)
    if(cublas_path)
      set_property(SOURCE ${PROJECT_SOURCE_DIR}/ops/cuda/cublas_library.cpp APPEND PROPERTY COMPILE_DEFINITIONS
                   MINIDL_CUBLAS_BUILD_PATH="${cublas_path}")
    endif()
    target_link_libraries(${target} PUBLIC CUDA::cudart ${MINIDL_CUDNN_LIB} ${CMAKE_DL_LIBS})
  endif()
endfunction()
