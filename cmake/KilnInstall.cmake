# `cmake --install` gives find_package(Kiln) with target Kiln::engine.
include(CMakePackageConfigHelpers)
install(TARGETS kiln_engine EXPORT KilnTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln)
if(KILN_OPENCV)
  install(DIRECTORY engine DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln FILES_MATCHING PATTERN "*.h" PATTERN "*.def")
else()  # engine/data/image is not in libkiln then
  install(DIRECTORY engine DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln FILES_MATCHING PATTERN "*.h" PATTERN "*.def"
          PATTERN image EXCLUDE)
endif()
install(EXPORT KilnTargets NAMESPACE Kiln:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)
configure_package_config_file(cmake/KilnConfig.cmake.in ${PROJECT_BINARY_DIR}/KilnConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/KilnConfig.cmake ${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# Not in the Debian package, whose copyright file points to /usr/share/common-licenses/GPL-3.
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT license)
