# Debian packages through CPack: `cpack -G DEB` in the build folder (installer/quickstart.sh
# package does it and runs lintian) writes
#   kiln_<version>_<arch>.deb       kiln, kiln-studio, libkiln(_onnx), the Vulkan plugin, headers,
#                                   CMake package files, .desktop, AppStream metainfo, icon, man pages
#   kiln-cuda_<version>_<arch>.deb  the CUDA plugin (needs the CUDA runtime, cuBLAS and cuDNN;
#                                   NCCL, Suggested, only for multi-GPU training: loaded at run time)
#   kiln-hip_<version>_<arch>.deb   the HIP plugin (Debian's libamdhip64)
# The plugins are apart so that a CPU-only user is not made to install the CUDA or ROCm
# runtime; without a plugin package (or its runtime) the registry simply does not offer that
# backend. The Vulkan plugin stays in kiln: it opens the loader (libvulkan1, a small ordinary
# package, Recommended) at run time and falls back to the CPU without it.
#
# Layout under /usr: bin/, lib/<multiarch>/ (libkiln.so.0, libkiln_onnx.so.0, kiln/ with the
# plugins, cmake/Kiln/), include/kiln/engine/..., share/{applications,metainfo,icons,man,doc}.
# Binaries carry a RUNPATH relative to $ORIGIN only (lintian accepts it; it also lets the
# extracted package run from any root, which tests/install/package.sh checks).
set(KILN_PACKAGE_ID org.kiln.studio)  # the AppStream id: .desktop file, metainfo, icon name
set(KILN_PACKAGE_MAINTAINER "The Kiln developers <kiln@packages.invalid>" CACHE STRING
    "Maintainer field of the Debian packages (cpack -G DEB)")
set(KILN_PACKAGE_COMPONENTS kiln)
foreach(part cuda hip)
  if(TARGET kiln_backend_${part})
    list(APPEND KILN_PACKAGE_COMPONENTS ${part})
  endif()
endforeach()

# ---- files a desktop package carries besides the build's targets ----
set(pkg_dir ${PROJECT_BINARY_DIR}/package)
if(KILN_STUDIO)
  install(FILES installer/${KILN_PACKAGE_ID}.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
  install(FILES installer/${KILN_PACKAGE_ID}.metainfo.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/metainfo)
  install(FILES resources/icons/kiln.svg DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps
          RENAME ${KILN_PACKAGE_ID}.svg)
endif()

# Debian wants /usr/share/doc/<package>/{copyright,changelog.gz} in every package (gzip -n:
# no name or time stamp, so the package is reproducible).
set(KILN_CHANGELOG_GZ ${pkg_dir}/changelog.gz)
add_custom_command(OUTPUT ${KILN_CHANGELOG_GZ}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${pkg_dir}
  COMMAND sh -c "gzip -n -9 -c '${PROJECT_SOURCE_DIR}/installer/changelog' > '${KILN_CHANGELOG_GZ}'"
  DEPENDS ${PROJECT_SOURCE_DIR}/installer/changelog VERBATIM)
set(KILN_PACKAGE_OUTPUTS ${KILN_CHANGELOG_GZ})
file(STRINGS installer/changelog top LIMIT_COUNT 1)
if(NOT top MATCHES "^kiln \\(${PROJECT_VERSION}[-)]")
  message(WARNING "installer/changelog starts with '${top}': add an entry for ${PROJECT_VERSION}")
endif()
foreach(c ${KILN_PACKAGE_COMPONENTS})
  if(c STREQUAL "kiln")
    set(doc share/doc/kiln)
  else()
    set(doc share/doc/kiln-${c})
  endif()
  install(FILES installer/copyright ${KILN_CHANGELOG_GZ} DESTINATION ${doc} COMPONENT ${c})
endforeach()

# Man pages from the programs' --help and --version (help2man), compressed as Debian wants.
find_program(KILN_HELP2MAN help2man)
if(KILN_HELP2MAN)
  set(man_dir ${pkg_dir}/man)
  set(KILN_MAN_PAGES)
  macro(kiln_man_page prog target description help_opt version_opt)
    add_custom_command(OUTPUT ${man_dir}/${prog}.1.gz
      COMMAND ${CMAKE_COMMAND} -E make_directory ${man_dir}
      COMMAND ${KILN_HELP2MAN} --no-info --section=1 --name=${description}
              --help-option=${help_opt} --version-option=${version_opt}
              --output=${man_dir}/${prog}.1 $<TARGET_FILE:${target}>
      COMMAND gzip -n -9 -f ${man_dir}/${prog}.1
      DEPENDS ${target} VERBATIM)
    list(APPEND KILN_MAN_PAGES ${man_dir}/${prog}.1.gz)
  endmacro()
  if(TARGET kiln)
    kiln_man_page(kiln kiln "command line of the Kiln deep-learning engine" --help --version)
  endif()
  if(TARGET kiln-studio)  # --headless: the options print without a display
    kiln_man_page(kiln-studio kiln-studio "Kiln Studio, a desktop machine-learning workbench"
                  "--headless --help" "--headless --version")
  endif()
  install(FILES ${KILN_MAN_PAGES} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
  list(APPEND KILN_PACKAGE_OUTPUTS ${KILN_MAN_PAGES})
else()
  message(STATUS "help2man not found: no man pages (the Debian package needs them; apt install help2man)")
endif()
add_custom_target(kiln_package_files ALL DEPENDS ${KILN_PACKAGE_OUTPUTS})

# The lintian overrides, each with its reason (installer/lintian-overrides).
install(FILES installer/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME kiln)

# ---- CPack ----
set(CPACK_PACKAGE_NAME kiln)
set(CPACK_PACKAGE_VENDOR "The Kiln developers")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT ${KILN_PACKAGE_MAINTAINER})
# Each package's Description below starts with its own synopsis; CPackDeb prepends the
# summary to it unless the summary is CPack's default, so keep that default.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${CMAKE_PROJECT_NAME} built using CMake")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)   # lintian: unstripped-binary-or-object is an error
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/packages)
set(CPACK_COMPONENTS_ALL ${KILN_PACKAGE_COMPONENTS})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${KILN_PACKAGE_MAINTAINER})
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
# dpkg-shlibdeps computes Depends from the ELF files (CPack adds --ignore-missing-info, so
# libraries no package owns, like libkiln itself or CUDA under /usr/local/cuda, add nothing);
# -l: where it finds libkiln for the plugins' packages, and the CUDA libraries.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# DEBIAN/shlibs for libkiln and libkiln_onnx (= this version: their ABI is not stable yet),
# and the ldconfig trigger that a package with public libraries activates.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_KILN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/installer/deb/triggers)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/lib)
if(TARGET kiln_backend_cuda)
  list(APPEND CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CUDAToolkit_LIBRARY_DIR})
  if(KILN_CUDNN_LIBRARY)
    get_filename_component(cudnn_dir ${KILN_CUDNN_LIBRARY} DIRECTORY)
    list(APPEND CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${cudnn_dir})
  endif()
endif()

set(CPACK_COMPONENT_KILN_DISPLAY_NAME "Kiln")
set(CPACK_DEBIAN_KILN_PACKAGE_NAME kiln)
# Fashion-MNIST is what `kiln train` and the Studio's templates train on by default.
set(CPACK_DEBIAN_KILN_PACKAGE_RECOMMENDS "dataset-fashion-mnist, libvulkan1")
set(CPACK_DEBIAN_KILN_PACKAGE_SUGGESTS "kiln-cuda, kiln-hip, mesa-vulkan-drivers")
set(CPACK_DEBIAN_KILN_DESCRIPTION
"desktop machine-learning workbench and deep-learning engine
Kiln is a desktop workbench for neural networks built on its own C++
deep-learning engine: design a network on a graph canvas, import ONNX
models, train with live loss plots and export ONNX or C++, without Python.

This package contains Kiln Studio (kiln-studio), the kiln command line,
the engine library with its headers and CMake package (find_package(Kiln),
target Kiln::engine), ONNX support and the Vulkan compute backend. The CPU
backend uses oneDNN. Install kiln-cuda or kiln-hip for NVIDIA or AMD GPUs.")

set(CPACK_COMPONENT_CUDA_DISPLAY_NAME "Kiln CUDA backend")
set(CPACK_COMPONENT_CUDA_DEPENDS kiln)
set(CPACK_DEBIAN_CUDA_PACKAGE_NAME kiln-cuda)
set(CPACK_DEBIAN_CUDA_PACKAGE_SECTION contrib/science)
set(CPACK_DEBIAN_CUDA_DESCRIPTION
"CUDA backend of the Kiln deep-learning engine
The plugin with which Kiln trains and runs models on NVIDIA GPUs (kernels,
cuBLAS and cuDNN, CUDA graphs). It needs the NVIDIA driver and the CUDA 13
runtime with cuBLAS and cuDNN 9 (libcudart.so.13, libcublas.so.13,
libcudnn.so.9) on the library path, as NVIDIA's CUDA installer sets up under
/usr/local/cuda; those are not Debian packages, so they are not dependencies.
Without them Kiln does not offer the CUDA devices and says why in
kiln devices.

Training on several GPUs (kiln train --gpus) also needs NCCL 2
(libnccl.so.2, NVIDIA's libnccl2 package or the CUDA toolkit's), which the
plugin loads only then: without it everything else still runs on the GPU.")
set(CPACK_DEBIAN_CUDA_PACKAGE_SUGGESTS "libnccl2")

set(CPACK_COMPONENT_HIP_DISPLAY_NAME "Kiln HIP backend")
set(CPACK_COMPONENT_HIP_DEPENDS kiln)
set(CPACK_DEBIAN_HIP_PACKAGE_NAME kiln-hip)
set(CPACK_DEBIAN_HIP_DESCRIPTION
"HIP (ROCm) backend of the Kiln deep-learning engine
The plugin with which Kiln trains and runs models on AMD GPUs through HIP,
compiled from the CUDA backend's kernels. It uses Debian's ROCm runtime
(libamdhip64); without a supported GPU Kiln does not offer the HIP devices
and says why in kiln devices.")

include(CPack)
