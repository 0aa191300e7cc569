# The install test (cmake -P): installs the built tree into a temporary prefix, then builds and runs
# a small program against it twice, once through find_package(minidl) and once through pkg-config,
# and runs the installed train program.
# Inputs: BUILD_DIR, SOURCE_DIR, WORK_DIR, VERSION, CXX, LAUNCHER (may be empty).
function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run_step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

foreach(f include/minidl/minidl.h include/minidl/framework/version.h include/minidl/ops/tensor.h bin/minidl-train)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "install test: ${f} is not installed")
  endif()
endforeach()
file(GLOB_RECURSE backend_internals ${prefix}/include/minidl/*/cuda/*.h ${prefix}/include/minidl/*/cpu/*.h)
if(backend_internals)
  message(FATAL_ERROR "install test: backend internals installed: ${backend_internals}")
endif()

# find_package(minidl)
set(launcher_arg "")
if(LAUNCHER)
  set(launcher_arg -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()
run_step("configuring the find_package consumer" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer
         -B ${WORK_DIR}/consumer -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX}
         -DMINIDL_EXPECT_VERSION=${VERSION} -DCMAKE_BUILD_TYPE=Release ${launcher_arg})
run_step("building the find_package consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run_step("running the find_package consumer" ${WORK_DIR}/consumer/consumer ${VERSION})
message(STATUS "find_package: ${step_output}")

# pkg-config
find_program(PKG_CONFIG pkg-config REQUIRED)
file(GLOB pc_dirs ${prefix}/lib*/pkgconfig ${prefix}/lib/*/pkgconfig)
string(REPLACE ";" ":" pc_path "${pc_dirs}")
set(ENV{PKG_CONFIG_PATH} "${pc_path}")
run_step("pkg-config --modversion" ${PKG_CONFIG} --modversion minidl)
string(STRIP "${step_output}" pc_version)
if(NOT pc_version STREQUAL VERSION)
  message(FATAL_ERROR "install test: minidl.pc says version ${pc_version}, expected ${VERSION}")
endif()
run_step("pkg-config --cflags --libs" ${PKG_CONFIG} --cflags --libs minidl)
string(STRIP "${step_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run_step("building the pkg-config consumer" ${LAUNCHER} ${CXX} -std=c++20 -O1
         ${SOURCE_DIR}/tests/install/consumer/main.cpp -o ${WORK_DIR}/pc_consumer ${flags})
run_step("running the pkg-config consumer" ${WORK_DIR}/pc_consumer ${VERSION})
message(STATUS "pkg-config: ${step_output}")

# The tool.
run_step("running the installed minidl-train --help" ${prefix}/bin/minidl-train --help)
