# Packaging: the version header, install rules, the exported target minidl::minidl, the CMake
# package files (find_package(minidl)) and minidl.pc (pkg-config).
#
# Include scheme. Inside the library, headers include each other relative to the source root
# ("framework/dtype.h"): that is the tree's one convention, and tests/test_layering.cpp reads it
# to check the floors. Users write <minidl/minidl.h>. Both resolve from two include directories:
#   installed: <prefix>/include (for <minidl/...>) and <prefix>/include/minidl (the floors), the
#              headers copied there with the tree's layout;
#   in tree:   the source root (the floors) and <build>/include, where minidl is a link to the
#              source root (for <minidl/...>).
# Rewriting every include to "minidl/framework/..." would need the sources under a minidl/ folder
# (or the same link trick in the tree) and touch every file of the project for no gain in users'
# code; the cost of this scheme is that the floor names (framework/, ops/, nn/...) are visible on a
# user's include path, under the prefix's include/minidl.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MINIDL_BUILT_NATIVE 0)
set(MINIDL_BUILT_CPU_DISPATCH 0)
if(MINIDL_HAS_CPU_DISPATCH)
  set(MINIDL_BUILT_CPU_DISPATCH 1)
endif()
set(MINIDL_BUILT_WITH_CUDA 0)
set(MINIDL_BUILT_WITH_MPI 0)
if(MINIDL_NATIVE)
  set(MINIDL_BUILT_NATIVE 1)
endif()
if(MINIDL_HAS_CUDA)
  set(MINIDL_BUILT_WITH_CUDA 1)
endif()
if(MINIDL_HAS_MPI)
  set(MINIDL_BUILT_WITH_MPI 1)
endif()
set(MINIDL_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated)
configure_file(${PROJECT_SOURCE_DIR}/cmake/version.h.in ${MINIDL_GENERATED_DIR}/framework/version.h @ONLY)

# <minidl/...> in the tree: <build>/include/minidl links to the source root.
file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/include)
file(CREATE_LINK ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/include/minidl SYMBOLIC)

target_include_directories(minidl PUBLIC
  $<BUILD_INTERFACE:${MINIDL_GENERATED_DIR}>
  $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/minidl>)

install(TARGETS minidl EXPORT minidlTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# The public headers: every header of the library's floors and the umbrella, with the tree's
# layout. The backends' internals (framework/cuda, ops/cuda, ops/cpu, distributed/mpi) stay out.
install(FILES ${PROJECT_SOURCE_DIR}/minidl.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/minidl)
install(DIRECTORY ${MINIDL_GENERATED_DIR}/framework DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/minidl)
foreach(floor framework autocast ops autograd serialize nn optim amp data distributed)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${floor} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/minidl
          FILES_MATCHING PATTERN "*.h"
          PATTERN "cuda" EXCLUDE PATTERN "cpu" EXCLUDE PATTERN "mpi" EXCLUDE)
endforeach()

set(MINIDL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/minidl)
install(EXPORT minidlTargets NAMESPACE minidl:: DESTINATION ${MINIDL_CMAKE_DIR})
add_library(minidl::minidl ALIAS minidl)  # the same name for add_subdirectory users
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/minidlConfig.cmake.in
  ${PROJECT_BINARY_DIR}/minidlConfig.cmake INSTALL_DESTINATION ${MINIDL_CMAKE_DIR})
# 0.x: a minor version may break the interface, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/minidlConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/minidlConfig.cmake ${PROJECT_BINARY_DIR}/minidlConfigVersion.cmake
        DESTINATION ${MINIDL_CMAKE_DIR})

# pkg-config: minidl.pc, relocatable (the prefix is found from the file's own folder).
set(MINIDL_PC_REQUIRES "")
set(MINIDL_PC_CFLAGS "")
set(MINIDL_PC_LIBS "")
if(MINIDL_HAS_CUDA)
  set(MINIDL_PC_CFLAGS " -DMINIDL_WITH_CUDA=1")
  get_filename_component(cudnn_dir ${MINIDL_CUDNN_LIB} DIRECTORY)
  set(MINIDL_PC_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -L${cudnn_dir} -lcudnn -lcudart")
  if(CMAKE_DL_LIBS)  # cuBLAS is opened with dlopen (ops/cuda/cublas_library.h)
    string(APPEND MINIDL_PC_LIBS " -l${CMAKE_DL_LIBS}")
  endif()
endif()
if(MINIDL_HAS_MPI)
  set(MINIDL_PC_REQUIRES " ompi-c")
endif()
# Shared libraries the static library's objects call, by their folders (no .pc files of their own).
foreach(dep IN ITEMS DNNL NCCL)
  if(MINIDL_HAS_${dep})
    get_filename_component(dep_dir ${MINIDL_${dep}_LIB} DIRECTORY)
    get_filename_component(dep_name ${MINIDL_${dep}_LIB} NAME_WE)
    string(REGEX REPLACE "^lib" "" dep_name "${dep_name}")
    string(APPEND MINIDL_PC_LIBS " -L${dep_dir} -l${dep_name}")
  endif()
endforeach()
file(RELATIVE_PATH MINIDL_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" MINIDL_PC_TO_PREFIX "${MINIDL_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/minidl.pc.in ${PROJECT_BINARY_DIR}/minidl.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/minidl.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
