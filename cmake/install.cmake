# Install rules: `cmake --install build --prefix P` puts
#   P/include/tessera/*.h (+ ops.def, version.h)      the public headers
#   P/lib/libtessera.so.0.1.0 (+ the links libtessera.so.0.1, its soname, and libtessera.so)
#   P/lib/cmake/Tessera/TesseraConfig.cmake (+ version and targets files)
#   P/lib/pkgconfig/tessera.pc
# so that another project can use find_package(Tessera) with target Tessera::tessera (C++)
# or Tessera::c (the C API), or pkg-config: each links the shared library. The static
# libraries are the build's own (tests, CLI, Python module) and are not installed. The CLI
# is installed as P/bin/tessera.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TESSERA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)

install(TARGETS ${tessera_exported} EXPORT TesseraTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS tessera_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/tessera DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(FILES ${CMAKE_BINARY_DIR}/generated/tessera/ops.def ${CMAKE_BINARY_DIR}/generated/tessera/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tessera)
install(EXPORT TesseraTargets NAMESPACE Tessera:: DESTINATION ${TESSERA_CMAKE_DIR})

configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/TesseraConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/TesseraConfig.cmake INSTALL_DESTINATION ${TESSERA_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/TesseraConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/TesseraConfig.cmake ${CMAKE_BINARY_DIR}/TesseraConfigVersion.cmake
        DESTINATION ${TESSERA_CMAKE_DIR})

# pkg-config: the shared library (tessera.pc.in).
configure_file(${CMAKE_SOURCE_DIR}/cmake/tessera.pc.in ${CMAKE_BINARY_DIR}/tessera.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/tessera.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
