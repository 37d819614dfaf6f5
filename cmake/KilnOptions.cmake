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
# OpenCV decodes and resizes images (engine/data/image). Debian's OpenCVConfig.cmake comes with
# libopencv-dev, which pulls in every OpenCV module (71 packages); quickstart installs only the
# three -dev packages the engine needs (libopencv-imgcodecs-dev libopencv-imgproc-dev: 5 packages),
# which ship headers and libraries without the config file, so those are looked up directly.
find_package(OpenCV QUIET COMPONENTS core imgcodecs imgproc)
if(OpenCV_FOUND)
  set(KILN_OPENCV_LIBS opencv_core opencv_imgcodecs opencv_imgproc)
  set(KILN_OPENCV_INCLUDE ${OpenCV_INCLUDE_DIRS})
else()
  find_path(KILN_OPENCV_INCLUDE opencv2/imgcodecs.hpp PATH_SUFFIXES opencv4)
  find_library(KILN_OPENCV_CORE opencv_core)
  find_library(KILN_OPENCV_IMGCODECS opencv_imgcodecs)
  find_library(KILN_OPENCV_IMGPROC opencv_imgproc)
  if(KILN_OPENCV_INCLUDE AND KILN_OPENCV_CORE AND KILN_OPENCV_IMGCODECS AND KILN_OPENCV_IMGPROC)
    set(OpenCV_FOUND TRUE)
    set(KILN_OPENCV_LIBS ${KILN_OPENCV_IMGCODECS} ${KILN_OPENCV_IMGPROC} ${KILN_OPENCV_CORE})
  endif()
endif()
# engine/data/image/jpeg_decode.cpp decodes JPEGs with libjpeg-turbo directly (libjpeg-dev, the
# library OpenCV's imgcodecs links): image datasets need it with OpenCV.
find_package(JPEG QUIET)
if(NOT JPEG_FOUND)
  set(OpenCV_FOUND FALSE)
endif()

# SentencePiece (Debian's libsentencepiece-dev) trains and runs the subword tokenizer of text
# datasets (engine/data/text/sentencepiece_tokenizer.cpp). Its pkg-config file names the libraries.
find_path(KILN_SENTENCEPIECE_INCLUDE sentencepiece_trainer.h)
find_library(KILN_SENTENCEPIECE_LIB sentencepiece)
find_library(KILN_SENTENCEPIECE_TRAIN_LIB sentencepiece_train)
if(KILN_SENTENCEPIECE_INCLUDE AND KILN_SENTENCEPIECE_LIB AND KILN_SENTENCEPIECE_TRAIN_LIB)
  set(SentencePiece_FOUND TRUE)
endif()

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
kiln_feature(KILN_OPENCV OpenCV_FOUND "Build image datasets (OpenCV core, imgcodecs, imgproc; libjpeg)")
kiln_feature(KILN_SENTENCEPIECE SentencePiece_FOUND "Build the SentencePiece subword tokenizer (libsentencepiece-dev)")

foreach(part STUDIO VULKAN CUDA HIP ONNX OPENCV SENTENCEPIECE)
  message(STATUS "KILN_${part}: ${KILN_${part}}")
endforeach()

option(KILN_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
if(KILN_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
