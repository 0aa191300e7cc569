# Checks one linked CPU kernel set (cmake/cpu_kernels.cmake): its only global definition is its
# entry, and an avx2/avx512 set has no static initializer (it would run on CPUs without the set's
# instructions before any choice is made). -DOBJECT=<set.o> -DSET=<name> -DREADELF=<readelf>
if(NOT READELF)
  return()  # nothing to check with
endif()
execute_process(COMMAND ${READELF} -W --sections ${OBJECT} OUTPUT_VARIABLE sections RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf failed on ${OBJECT}")
endif()
if(NOT SET STREQUAL "baseline" AND sections MATCHES "\\.(init_array|ctors|preinit_array)")
  message(FATAL_ERROR "The ${SET} CPU kernel set has a static initializer (.init_array): it would run "
                      "on every CPU at start-up. Make the global in ops/cpu constexpr or a function-local static.")
endif()
execute_process(COMMAND ${READELF} -W --syms ${OBJECT} OUTPUT_VARIABLE syms)
string(REPLACE "\n" ";" lines "${syms}")
foreach(line IN LISTS lines)
  # Num: Value Size Type Bind Vis Ndx Name; a defined (Ndx not UND) GLOBAL/WEAK/UNIQUE symbol.
  if(line MATCHES "^ *[0-9]+: +[0-9a-f]+ +[0-9]+ +[A-Z_]+ +(GLOBAL|WEAK|UNIQUE) +[A-Z]+ +([A-Z0-9]+) +(.+)$")
    set(ndx "${CMAKE_MATCH_2}")
    set(name "${CMAKE_MATCH_3}")
    if(NOT ndx STREQUAL "UND" AND NOT name STREQUAL "minidl_register_cpu_kernels_${SET}")
      message(FATAL_ERROR "The ${SET} CPU kernel set exports ${name}: only its entry may stay global")
    endif()
  endif()
endforeach()
