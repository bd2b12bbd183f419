# Debian packages with CPack: in a build folder, `cpack -G DEB` writes
#   <build>/packages/tessera_<version>_<arch>.deb
# holding what the install rules install (cmake/install.cmake, python/CMakeLists.txt) under
# /usr: the CLI (/usr/bin/tessera), the shared library (/usr/lib/libtessera.so.0.1 and its
# links), the headers (/usr/include/tessera), the CMake package
# (/usr/lib/cmake/Tessera), tessera.pc (/usr/lib/pkgconfig) and, when built, the Python
# package (/usr/lib/python3/dist-packages/tessera). The architecture is the target's: amd64
# for the ordinary build, arm64 for the aarch64 cross build (scripts/aarch64.sh makes and
# tests that one). tests/package/deb_test.sh unpacks the amd64 package into a scratch root
# and runs `tessera demo` and the examples against it.
#
# cpack (and `make install`) build nothing first: CPack's `preinstall` step would build the
# whole `all` target, every test and benchmark; the install rules need only the libraries,
# the CLI and the Python module, which a build (scripts/setup.sh, scripts/aarch64.sh) makes.
# Packing before building them fails with the missing file named.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(CPACK_PACKAGE_NAME tessera)
set(CPACK_PACKAGE_VENDOR "The Tessera authors")
set(CPACK_PACKAGE_CONTACT "Tessera maintainers <tessera@example.org>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "inference runtime for NPUs with first-class device tensor formats")
set(CPACK_PACKAGE_DESCRIPTION "Tessera runs quantized vision models (TFLite) and LLMs (GGUF) on the CPU and on
device models of a Tenstorrent-style tile NPU and the Rockchip RK3588 NPU, with the devices'
own tensor formats (tiles, block floats, NC1HWC2) converted exactly.
This package holds the tessera command-line tool, the shared library, the C++ and C
headers, the CMake package (find_package(Tessera)), tessera.pc for pkg-config and the
Python module.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
# Install with DESTDIR, so the install rules see the real prefix (/usr): the Python package
# then goes to Debian's /usr/lib/python3/dist-packages (python/CMakeLists.txt).
set(CPACK_SET_DESTDIR ON)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR})
set(CPACK_OUTPUT_FILE_PREFIX ${CMAKE_BINARY_DIR}/packages)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # tessera_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/tessera-runtime/tessera")
# The target's architecture; for the native build, dpkg's own (CPack's default).
if(CMAKE_CROSSCOMPILING)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
  elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64)$")
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
  else()
    message(WARNING "package: no Debian architecture known for ${CMAKE_SYSTEM_PROCESSOR}; cpack would label the package with the host's")
  endif()
endif()

# Dependencies. The libraries the programs link: found by dpkg-shlibdeps in a native build;
# declared here for a cross build (dpkg-shlibdeps reads the host's objdump and package
# database), as Debian 12's shlibs files give them (scripts/aarch64.sh checks that every
# library the arm64 CLI needs comes from a package listed).
set(deps)
if(CMAKE_CROSSCOMPILING)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
  list(APPEND deps "libc6 (>= 2.34)" "libgcc-s1 (>= 3.0)" "libstdc++6 (>= 12)" "libfmt9 (>= 9.1.0+ds1)"
       "libflatbuffers2 (>= 2.0.8+dfsg1)" "libstb0 (>= 0.0~git20220908.8b5f1f3+ds)")
  if(TESSERA_BUILD_SERVE)
    list(APPEND deps "libcpp-httplib0.11 (>= 0.11.4+ds)")
  endif()
else()
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()
# (The CMake package and tessera.pc link libtessera.so alone: its users need no -dev package.)
# The Python module is built for one minor version of Python 3.
if(TESSERA_WITH_PYTHON)
  math(EXPR py_next "${Python_VERSION_MINOR} + 1")
  list(APPEND deps "python3 (>= ${Python_VERSION_MAJOR}.${Python_VERSION_MINOR})"
       "python3 (<< ${Python_VERSION_MAJOR}.${py_next})" python3-numpy)
endif()
list(JOIN deps ", " CPACK_DEBIAN_PACKAGE_DEPENDS)

include(CPack)
