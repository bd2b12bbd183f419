# The library's components, each a static library, linked together as `tessera`.
# Splitting keeps incremental builds small and lets one component build without the others.

include(cmake/arch.cmake)  # which architecture-specific kernels this build compiles
tessera_component(tessera_core DIRS src/core src/ops DEPS fmt::fmt)
tessera_component(tessera_convert DIRS src/convert DEPS tessera_core)
tessera_component(tessera_runtime DIRS src/backend/common src/passes src/runtime DEPS tessera_convert)
tessera_component(tessera_cpu DIRS src/backend/cpu DEPS tessera_runtime)
# exp_approx and the attention and silu kernels' scalar, AVX2 and NEON twins must give the same bits: no a * b + c is
# contracted into an fma behind their back (each fma is written out).
set_source_files_properties(${CMAKE_SOURCE_DIR}/src/ops/exp_approx.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/kernels/attention.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/x86/attention_avx2.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/x86/unary_avx2.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/arm/attention_neon.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/arm/unary_neon.cpp
                            PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")

set(tessera_parts tessera_core tessera_convert tessera_runtime tessera_cpu)
foreach(part tile rknpu)
  if(EXISTS ${CMAKE_SOURCE_DIR}/src/backend/${part}/CMakeLists.txt)
    add_subdirectory(src/backend/${part})
    # A component may skip itself (e.g. rknpu without its register database).
    if(TARGET tessera_${part})
      list(APPEND tessera_parts tessera_${part})
    endif()
  endif()
endforeach()
foreach(part tflite gguf)
  if(EXISTS ${CMAKE_SOURCE_DIR}/src/import/${part}/CMakeLists.txt)
    add_subdirectory(src/import/${part})
    list(APPEND tessera_parts tessera_${part})
  endif()
endforeach()

# The umbrella library: the device registry and the embedding API (src/api:
# include/tessera/model.h and generate.h) above everything else.
file(GLOB api_srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/api/*.cpp)
add_library(tessera STATIC ${CMAKE_SOURCE_DIR}/src/registry.cpp ${api_srcs})
target_link_libraries(tessera PUBLIC ${tessera_parts})
foreach(part ${tessera_parts})
  string(REPLACE "tessera_" "" short ${part})
  string(TOUPPER ${short} upper)
  target_compile_definitions(tessera PRIVATE TESSERA_HAS_${upper}=1)
endforeach()
# The runtime creates devices through the registry, which lives in the umbrella: a cycle
# between static libraries, which CMake resolves by repeating them on the link line.
target_link_libraries(tessera_runtime INTERFACE tessera)
set_property(TARGET tessera APPEND PROPERTY LINK_INTERFACE_MULTIPLICITY 3)

# The C API (include/tessera/tessera_c.h) over the umbrella.
file(GLOB capi_srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/capi/*.cpp)
add_library(tessera_c STATIC ${capi_srcs})
target_link_libraries(tessera_c PUBLIC tessera)

# Installed and exported names: Tessera::tessera (everything), Tessera::c (the C API) and
# the parts (Tessera::core, Tessera::convert, ..., Tessera::tflite, Tessera::gguf).
set(tessera_exported ${tessera_parts} tessera tessera_c)
foreach(t ${tessera_exported})
  string(REGEX REPLACE "^tessera_" "" short ${t})
  set_target_properties(${t} PROPERTIES EXPORT_NAME ${short})
  # Source-tree include folders are for the build; installed users get <prefix>/include.
  get_target_property(dirs ${t} INTERFACE_INCLUDE_DIRECTORIES)
  set(iface)
  if(dirs)
    foreach(d ${dirs})
      list(APPEND iface "$<BUILD_INTERFACE:${d}>")
    endforeach()
  endif()
  list(APPEND iface "$<BUILD_INTERFACE:${CMAKE_BINARY_DIR}/generated>" "$<INSTALL_INTERFACE:include>")
  list(REMOVE_DUPLICATES iface)
  set_target_properties(${t} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${iface}")
endforeach()

# `tessera serve` (docs/serving.md): the protocol logic (requests, tensors, streaming, metrics,
# model queues) as a component of its own, apart from the umbrella; the HTTP socket layer
# lives with the CLI (tools/tessera/serve) and links cpp-httplib.
# TESSERA_BUILD_SERVE=OFF leaves it out (the aarch64 cross-build, which has no arm64 cpp-httplib).
if(TESSERA_BUILD_SERVE)
  find_package(nlohmann_json 3 REQUIRED)
  tessera_component(tessera_serve DIRS src/serve DEPS tessera nlohmann_json::nlohmann_json fmt::fmt)
endif()
