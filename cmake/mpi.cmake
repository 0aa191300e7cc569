# MPI (Open MPI) for the distributed/ process group. MINIDL_MPI=AUTO turns it on when an MPI C library is
# found; the build without MPI keeps working (dist::init_process_group then throws, and the
# multi-rank tests report themselves skipped).
set(MINIDL_HAS_MPI OFF)
if(NOT MINIDL_MPI STREQUAL "OFF")
  # The C API through the CXX component (the project enables no C language); no MPI C++ bindings.
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI QUIET COMPONENTS CXX)
  if(MPI_CXX_FOUND AND MPIEXEC_EXECUTABLE)
    set(MINIDL_HAS_MPI ON)
  elseif(MINIDL_MPI STREQUAL "ON")
    message(FATAL_ERROR "MINIDL_MPI=ON but no MPI library or mpiexec was found (Debian: libopenmpi-dev openmpi-bin)")
  endif()
endif()
message(STATUS "minidl MPI backend: ${MINIDL_HAS_MPI}")

# The MPI process group source and its link; the rest of distributed/ builds either way.
function(minidl_add_mpi_sources target)
  if(MINIDL_HAS_MPI)
    file(GLOB mpi_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/distributed/mpi/*.cpp)
    target_sources(${target} PRIVATE ${mpi_sources})
    # Only distributed/init.cpp asks which backends exist: toggling MPI recompiles nothing else.
    set_property(SOURCE ${PROJECT_SOURCE_DIR}/distributed/init.cpp APPEND PROPERTY COMPILE_DEFINITIONS MINIDL_WITH_MPI=1)
    target_link_libraries(${target} PUBLIC MPI::MPI_CXX)
  endif()
endfunction()

# Registers a test that runs `exe` on `ranks` MPI processes over loopback; without MPI, a test that
# reports itself skipped (CTest's SKIP_RETURN_CODE).
function(minidl_add_mpi_test name exe ranks)
  if(MINIDL_HAS_MPI)
    add_test(NAME ${name} COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe
             ${MPIEXEC_NUMPROC_FLAG} ${ranks} --mca btl self,tcp --mca btl_tcp_if_include lo
             $<TARGET_FILE:${exe}> ${ARGN})
    set_tests_properties(${name} PROPERTIES TIMEOUT 120 PROCESSORS ${ranks}
                         ENVIRONMENT "OMP_NUM_THREADS=1")
  else()
    add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} -E echo "skipped: minidl built without MPI")
    set_tests_properties(${name} PROPERTIES SKIP_REGULAR_EXPRESSION "skipped: minidl built without MPI")
  endif()
endfunction()
