# The engine sits below the backends (DESIGN.md, "Layers"): no file under engine/
# includes a header of backends/. The CPU backend registers itself with the registry
# (backends/cpu/cpu_backend.cpp), the GPU backends are plugins the registry dlopens.
#   cmake -DSOURCE_DIR=<source tree> -P check_layering.cmake
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_layering.cmake: pass -DSOURCE_DIR=<source tree>")
endif()
file(GLOB_RECURSE files LIST_DIRECTORIES false
     ${SOURCE_DIR}/engine/*.h ${SOURCE_DIR}/engine/*.hpp ${SOURCE_DIR}/engine/*.cpp ${SOURCE_DIR}/engine/*.cc
     ${SOURCE_DIR}/engine/*.cu ${SOURCE_DIR}/engine/*.cuh ${SOURCE_DIR}/engine/*.inc)
list(LENGTH files count)
if(count EQUAL 0)
  message(FATAL_ERROR "check_layering.cmake: no engine sources under ${SOURCE_DIR}/engine")
endif()
set(bad "")
foreach(f ${files})
  file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"](\\.\\./)*backends/")
  foreach(line ${lines})
    file(RELATIVE_PATH rel ${SOURCE_DIR} ${f})
    string(STRIP "${line}" line)
    string(APPEND bad "\n  ${rel}: ${line}")
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "engine/ includes backends/ (the engine must not depend on a backend):${bad}")
endif()
message(STATUS "engine layering: ${count} files under engine/, none includes backends/")
