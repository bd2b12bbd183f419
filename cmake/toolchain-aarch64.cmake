# Cross-compiling Tessera for 64-bit Arm Linux (RK3588 boards) with Debian's cross toolchain.
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
#
# The compiler is g++-aarch64-linux-gnu; the libraries come from Debian's arm64 packages
# installed beside the host's (multiarch: /usr/lib/aarch64-linux-gnu, headers in /usr/include).
# Programs built here run on the host through qemu-user (CMAKE_CROSSCOMPILING_EMULATOR): ctest
# and build-time generators use it. flatc stays the host's. scripts/aarch64.sh does all of this.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(TESSERA_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${TESSERA_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${TESSERA_CROSS_TRIPLE}-g++)
# Debian multiarch: find_package and find_library look in /usr/lib/aarch64-linux-gnu.
set(CMAKE_LIBRARY_ARCHITECTURE ${TESSERA_CROSS_TRIPLE})

# Run target programs (tests, build-time generators) under qemu. The arm64 library packages
# bring Debian's arm64 C library (libc6:arm64, /lib/aarch64-linux-gnu), which the loader finds
# through ld.so.cache; it must run with its own loader (/lib/ld-linux-aarch64.so.1), so qemu's
# prefix is / then: the cross package's loader (/usr/aarch64-linux-gnu/lib) with that libc.so
# is a mismatched pair and hangs in the first pthread_create. Without libc6:arm64 the cross
# C library is the only one and its folder is the prefix.
if(EXISTS /lib/ld-linux-aarch64.so.1)
  set(TESSERA_QEMU_PREFIX /)
else()
  set(TESSERA_QEMU_PREFIX /usr/${TESSERA_CROSS_TRIPLE})
endif()
find_program(TESSERA_QEMU_AARCH64 qemu-aarch64)
if(TESSERA_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${TESSERA_QEMU_AARCH64} -L ${TESSERA_QEMU_PREFIX})
endif()

# Programs (flatc, pkg-config) are the host's; libraries and packages the target's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# pkg-config must read the arm64 .pc files, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${TESSERA_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig)
