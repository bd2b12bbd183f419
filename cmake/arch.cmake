# Architecture selection (included by cmake/components.cmake before the components).
#
# Architecture-specific kernels are compiled only for their architecture; every other build
# keeps them out and runs the portable scalar kernels, which exist for everything:
#   x86-64   *_avx2.cpp and src/**/x86/*.cpp   AVX2 + FMA + F16C, chosen at run time
#                                               (convert::use_avx2(): CPUID)
#   aarch64  src/**/arm/*_neon.cpp              NEON (Advanced SIMD, part of every aarch64 CPU)
# The files also guard their contents with the architecture's predefined macro, and the
# dispatch (convert/simd.h) compiles to the scalar path elsewhere, so a build that includes
# them anyway still works. See docs/aarch64.md.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64|x64)$")
  set(TESSERA_ARCH x86_64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64|armv8.*)$")
  set(TESSERA_ARCH aarch64)
else()
  set(TESSERA_ARCH generic)
endif()
message(STATUS "Tessera: ${TESSERA_ARCH} kernels (CMAKE_SYSTEM_PROCESSOR ${CMAKE_SYSTEM_PROCESSOR})")

file(GLOB_RECURSE tessera_arch_srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/*.cpp)
set(tessera_x86_srcs ${tessera_arch_srcs})
list(FILTER tessera_x86_srcs INCLUDE REGEX "(_avx2\\.cpp|/x86/[^/]+\\.cpp)$")
set(tessera_arm_srcs ${tessera_arch_srcs})
list(FILTER tessera_arm_srcs INCLUDE REGEX "/arm/[^/]+_neon\\.cpp$")

set(tessera_foreign_srcs)
if(NOT TESSERA_ARCH STREQUAL "x86_64")
  list(APPEND tessera_foreign_srcs ${tessera_x86_srcs})
endif()
if(NOT TESSERA_ARCH STREQUAL "aarch64")
  list(APPEND tessera_foreign_srcs ${tessera_arm_srcs})
endif()
# The components glob every .cpp of their folders: these stay listed but are not compiled.
if(tessera_foreign_srcs)
  set_source_files_properties(${tessera_foreign_srcs} PROPERTIES HEADER_FILE_ONLY ON)
endif()
