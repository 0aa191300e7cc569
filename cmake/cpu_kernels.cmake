# The CPU kernel layer: ops/cpu/*.cpp (with the bulk f16/bf16 conversions it runs on), built either
#   - once per x86-64 level, chosen at run time (MINIDL_CPU_DISPATCH, the default on x86-64): the
#     sets baseline (the compiler's default x86-64, SSE2), avx2 (-march=x86-64-v3) and avx512
#     (-march=x86-64-v4), each tuned generic; ops/cpu_isa.cpp picks the best one the CPU runs; or
#   - once, with the flags of the rest of the library (MINIDL_NATIVE=ON builds for the build
#     machine; the sanitizer and fuzz builds; other architectures).
# Why whole sets, and not per-function target attributes: the hot code is Eigen's GEMM and
# the kernels' templates, which a target attribute on one function does not reach.
# Why a partial link: the sets share every inline function and template instantiation (Eigen's
# kernels, std::vector<float>, the kernels' own templates) under the same names; linked side by
# side, the linker keeps one copy of each, maybe the AVX-512 one, and an AVX2 CPU would run it.
# So each set is linked alone into one relocatable object (ld -r, section groups dissolved), and
# objcopy then makes every symbol it defines local except its entry,
# minidl_register_cpu_kernels_<set>: the sets cannot see each other's code. What a set calls outside
# itself (the thread pool, oneDNN's convolution, the framework) stays one shared copy in the library.
# A set may run no code before it is chosen: the build fails if an avx2/avx512 set has a static
# initializer (which would run at start-up on any CPU).
set(MINIDL_CPU_DISPATCH AUTO CACHE STRING
    "CPU kernels built per x86-64 level and chosen at run time: AUTO (on for x86-64 GNU/Clang builds without MINIDL_NATIVE or sanitizers), ON or OFF")
set_property(CACHE MINIDL_CPU_DISPATCH PROPERTY STRINGS AUTO ON OFF)

# Files of ops/cpu built once whatever the mode: one thread pool for the process (parallel.cpp);
# oneDNN's convolution and bf16 matmul, which choose their own code at run time (conv_dnnl.cpp,
# matmul_dnnl.cpp).
set(MINIDL_CPU_SHARED_SOURCES ${PROJECT_SOURCE_DIR}/ops/cpu/parallel.cpp ${PROJECT_SOURCE_DIR}/ops/cpu/conv_dnnl.cpp
    ${PROJECT_SOURCE_DIR}/ops/cpu/matmul_dnnl.cpp)

set(MINIDL_HAS_CPU_DISPATCH OFF)
set(reason "MINIDL_CPU_DISPATCH=OFF")
if(NOT MINIDL_CPU_DISPATCH STREQUAL "OFF")
  set(reason "")
  if(NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
    set(reason "not an x86-64 build")
  elseif(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    set(reason "needs GCC or Clang")
  elseif(MINIDL_NATIVE)
    set(reason "MINIDL_NATIVE=ON builds one set for this machine")
  elseif(MINIDL_SANITIZE OR MINIDL_FUZZ)
    set(reason "sanitizer and fuzz builds instrument one set")
  elseif(NOT CMAKE_LINKER OR NOT CMAKE_OBJCOPY)
    set(reason "ld or objcopy not found")
  endif()
  if(reason STREQUAL "")
    set(MINIDL_HAS_CPU_DISPATCH ON)
  elseif(MINIDL_CPU_DISPATCH STREQUAL "ON")
    message(FATAL_ERROR "MINIDL_CPU_DISPATCH=ON but ${reason}")
  endif()
endif()
if(MINIDL_HAS_CPU_DISPATCH)
  message(STATUS "minidl CPU kernels: baseline, avx2 and avx512 sets, chosen at run time")
else()
  message(STATUS "minidl CPU kernels: one set (${reason})")
endif()

function(minidl_add_cpu_kernels target)
  file(GLOB kernel_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/ops/cpu/*.cpp)
  list(REMOVE_ITEM kernel_sources ${MINIDL_CPU_SHARED_SOURCES})
  target_sources(${target} PRIVATE ${MINIDL_CPU_SHARED_SOURCES})
  if(NOT MINIDL_HAS_CPU_DISPATCH)
    target_sources(${target} PRIVATE ${kernel_sources})
    set_source_files_properties(${PROJECT_SOURCE_DIR}/ops/cpu/register.cpp PROPERTIES
                                COMPILE_DEFINITIONS MINIDL_CPU_KERNELS_ENTRY=minidl_register_cpu_kernels_single)
    return()
  endif()
  target_compile_definitions(${target} PRIVATE MINIDL_CPU_ISA_DISPATCH=1)
  set(flags_baseline "")
  set(flags_avx2 -march=x86-64-v3 -mtune=generic)
  set(flags_avx512 -march=x86-64-v4 -mtune=generic)
  foreach(set baseline avx2 avx512)
    set(objects ${target}_cpu_${set})
    add_library(${objects} OBJECT ${kernel_sources})
    # The library's own definitions and include paths (MINIDL_WITH_CUDA changes headers), and the
    # usage requirements of what the kernels include.
    target_compile_definitions(${objects} PRIVATE $<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>
                               MINIDL_CPU_KERNELS_ENTRY=minidl_register_cpu_kernels_${set})
    target_include_directories(${objects} PRIVATE $<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>)
    target_link_libraries(${objects} PRIVATE Eigen3::Eigen OpenMP::OpenMP_CXX)
    # GCC marks static locals of inline functions (Eigen's cache sizes) STB_GNU_UNIQUE, a binding
    # objcopy cannot make local: as plain weak symbols they become each set's own.
    target_compile_options(${objects} PRIVATE ${flags_${set}} $<$<CXX_COMPILER_ID:GNU>:-fno-gnu-unique>)
    set(linked ${CMAKE_CURRENT_BINARY_DIR}/cpu_kernels/${set}.o)
    add_custom_command(
      OUTPUT ${linked}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/cpu_kernels
      COMMAND ${CMAKE_LINKER} -r --force-group-allocation -o ${linked}.partial $<TARGET_OBJECTS:${objects}>
      COMMAND ${CMAKE_OBJCOPY} --keep-global-symbol=minidl_register_cpu_kernels_${set} ${linked}.partial ${linked}
      COMMAND ${CMAKE_COMMAND} -DOBJECT=${linked} -DSET=${set} -DREADELF=${CMAKE_READELF}
              -P ${PROJECT_SOURCE_DIR}/cmake/cpu_kernels_check.cmake
      DEPENDS ${objects} $<TARGET_OBJECTS:${objects}> ${PROJECT_SOURCE_DIR}/cmake/cpu_kernels_check.cmake
      COMMAND_EXPAND_LISTS
      COMMENT "Linking the ${set} CPU kernel set")
    target_sources(${target} PRIVATE ${linked})
  endforeach()
endfunction()
