# Configure-time options. Each optional part defaults to AUTO (ON when its
# dependencies are found) and can be forced OFF (-DKILN_STUDIO=OFF builds the
# engine alone: compiler, CMake, oneDNN and zlib).
option(KILN_BUILD_TESTS "Build the test suite (GoogleTest)" ON)

set(KILN_WARNINGS -Wall -Wextra -Wno-unused-parameter)

find_package(Qt6 6.4 QUIET COMPONENTS Widgets Test Svg Concurrent PrintSupport)  # PrintSupport: QCustomPlot links it
find_package(QCustomPlotQt6 QUIET)
find_package(SQLite3 QUIET)
if(Qt6_FOUND AND QCustomPlotQt6_FOUND AND SQLite3_FOUND)
  set(KILN_STUDIO_DEPS_FOUND TRUE)
endif()
find_package(Vulkan QUIET COMPONENTS glslc)
find_package(CUDAToolkit QUIET)
find_program(KILN_HIPCC hipcc)
find_package(ONNX QUIET)

# Each optional part is AUTO (built when its dependencies are found), ON (required: configuring
# fails naming what is missing) or OFF. AUTO is decided anew at every configure, so a build
# folder configured before the packages were installed picks them up once they are.
macro(kiln_feature name found doc)
  set(${name} AUTO CACHE STRING "${doc}: AUTO (when its dependencies are found), ON or OFF")
  set_property(CACHE ${name} PROPERTY STRINGS AUTO ON OFF)
  if(${name} STREQUAL "AUTO")
    if(${found})
      set(${name} ON)
    else()
      set(${name} OFF)
    endif()
  elseif(${name} AND NOT ${found})
    message(FATAL_ERROR "${name}=${${name}} but its dependencies were not found (${doc}); "
                        "installer/quickstart.sh installs them, or configure with -D${name}=OFF")
  endif()
endmacro()
kiln_feature(KILN_STUDIO KILN_STUDIO_DEPS_FOUND "Build Kiln Studio (Qt 6 Widgets, QCustomPlot, SQLite)")
kiln_feature(KILN_VULKAN Vulkan_FOUND "Build the Vulkan compute backend")
kiln_feature(KILN_CUDA CUDAToolkit_FOUND "Build the CUDA backend")
kiln_feature(KILN_HIP KILN_HIPCC "Build the HIP/ROCm backend")
kiln_feature(KILN_ONNX ONNX_FOUND "Build ONNX import/export")

foreach(part STUDIO VULKAN CUDA HIP ONNX)
  message(STATUS "KILN_${part}: ${KILN_${part}}")
endforeach()

option(KILN_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
if(KILN_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
