# NCCL for the distributed/ process group on CUDA ranks. MINIDL_NCCL=AUTO turns it on when the CUDA
# and MPI backends are both on (MPI launches the ranks and carries NCCL's unique id) and nccl.h and
# libnccl are found (the CUDA toolkit ships them under /usr/local/cuda). Without it everything else
# builds; init_process_group(backend "nccl") then says why it is missing.
set(MINIDL_HAS_NCCL OFF)
if(NOT MINIDL_NCCL STREQUAL "OFF")
  if(MINIDL_HAS_CUDA AND MINIDL_HAS_MPI)
    find_path(MINIDL_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include /usr/include)
    find_library(MINIDL_NCCL_LIB NAMES nccl libnccl.so.2
                 HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu)
  endif()
  if(MINIDL_NCCL_INCLUDE AND MINIDL_NCCL_LIB)
    set(MINIDL_HAS_NCCL ON)
  elseif(MINIDL_NCCL STREQUAL "ON")
    message(FATAL_ERROR "MINIDL_NCCL=ON needs the CUDA and MPI backends and NCCL (nccl.h, libnccl.so)")
  endif()
endif()
message(STATUS "minidl NCCL backend: ${MINIDL_HAS_NCCL}")

function(minidl_add_nccl_sources target)
  if(MINIDL_HAS_NCCL)
    file(GLOB nccl_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/distributed/nccl/*.cpp)
    target_sources(${target} PRIVATE ${nccl_sources})
    set_property(SOURCE ${PROJECT_SOURCE_DIR}/distributed/init.cpp APPEND PROPERTY COMPILE_DEFINITIONS MINIDL_WITH_NCCL=1)
    set_source_files_properties(${nccl_sources} PROPERTIES INCLUDE_DIRECTORIES ${MINIDL_NCCL_INCLUDE})
    target_link_libraries(${target} PUBLIC ${MINIDL_NCCL_LIB})
  endif()
endfunction()
