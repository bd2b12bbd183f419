# The library's components, each a static library, linked together as `tessera`.
# Splitting keeps incremental builds small and lets one component build without the others.

include(cmake/arch.cmake)  # which architecture-specific kernels this build compiles
tessera_component(tessera_core DIRS src/core src/ops DEPS fmt::fmt)
tessera_component(tessera_convert DIRS src/convert DEPS tessera_core)
tessera_component(tessera_runtime DIRS src/backend/common src/passes src/runtime DEPS tessera_convert)
# The devices. Each registers itself with the runtime's registry (src/runtime/device_registry.cpp)
# from a registrar of its own folder, src/backend/NAME/NAME_register.cpp, a static object
# nothing refers to. Those objects form tessera_devices, which the umbrella links whole
# ($<LINK_LIBRARY:WHOLE_ARCHIVE,...>, in the installed package too): every program over
# Tessera (tests, CLI, Python module, examples) then has every device, and only the
# registrars are forced in (the devices' own libraries link as usual). Explicit registration
# would need a list of devices above them all, or a call in every program.
add_library(tessera_devices STATIC)
# tessera_device(LIBRARY REGISTRAR): REGISTRAR (a source of LIBRARY's folder) leaves LIBRARY
# for tessera_devices, which links LIBRARY.
function(tessera_device lib registrar)
  get_target_property(srcs ${lib} SOURCES)
  if(NOT registrar IN_LIST srcs)
    message(FATAL_ERROR "tessera_device: ${registrar} is not a source of ${lib}")
  endif()
  list(REMOVE_ITEM srcs ${registrar})
  set_property(TARGET ${lib} PROPERTY SOURCES ${srcs})
  target_sources(tessera_devices PRIVATE ${registrar})
  target_link_libraries(tessera_devices PUBLIC ${lib})
endfunction()

# The cpu device, always built: the reference the others are compared with.
tessera_component(tessera_cpu DIRS src/backend/cpu DEPS tessera_runtime)
tessera_device(tessera_cpu ${CMAKE_SOURCE_DIR}/src/backend/cpu/cpu_register.cpp)
# exp_approx, exp_f32, the attention, silu, exp and logistic kernels and the K-quant
# fully_connected kernels' scalar, AVX2, AVX-512 and NEON twins must give the same bits: no a * b + c is
# contracted into an fma behind their back (each fma is written out). The float conv2d
# kernel and its fast path (conv_fast.cpp, x86/conv_fast_x86.cpp) add their products in the
# TFLite interpreter's order (kernels/gemm_sum.h), rounded one by one as there. The hybrid
# kernels quantize their input with a float multiply and add (add + v * inv) and convert
# their sums with another, each rounded as in the interpreter.
set_source_files_properties(${CMAKE_SOURCE_DIR}/src/ops/exp_approx.cpp
                            ${CMAKE_SOURCE_DIR}/src/ops/exp_f32.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/kernels/attention.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/kernels/conv.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/kernels/conv_fast.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/x86/conv_fast_x86.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/x86/attention_avx2.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/x86/unary_avx2.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/x86/unary_avx512.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/kernels/hybrid.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/kernels/hybrid_fast.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/x86/hybrid_x86.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/arm/hybrid_neon.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/kernels/linear_kq.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/x86/linear_kq_avx2.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/arm/attention_neon.cpp
                            ${CMAKE_SOURCE_DIR}/src/backend/cpu/arm/unary_neon.cpp
                            PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")

set(tessera_parts tessera_core tessera_convert tessera_runtime tessera_cpu)
# The other devices: every folder src/backend/NAME with a CMakeLists.txt, which defines
# tessera_NAME and calls tessera_device. A device may skip itself (e.g. rknpu without its
# register database).
file(GLOB device_lists CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/backend/*/CMakeLists.txt)
foreach(list_file ${device_lists})
  get_filename_component(dir ${list_file} DIRECTORY)
  get_filename_component(part ${dir} NAME)
  add_subdirectory(${dir})
  if(TARGET tessera_${part})
    list(APPEND tessera_parts tessera_${part})
  endif()
endforeach()
foreach(part tflite gguf)
  if(EXISTS ${CMAKE_SOURCE_DIR}/src/import/${part}/CMakeLists.txt)
    add_subdirectory(src/import/${part})
    list(APPEND tessera_parts tessera_${part})
  endif()
endforeach()

# The umbrella library: the embedding API (src/api: include/tessera/model.h and generate.h)
# above everything else, and the devices' registrars. Every library links only libraries
# below it (cmake/layers.txt, the `layers` test): no cycles.
file(GLOB api_srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/api/*.cpp)
add_library(tessera STATIC ${api_srcs})
# (The export does not rename a target inside $<LINK_LIBRARY>: the installed name is given.)
target_link_libraries(tessera PUBLIC "$<BUILD_INTERFACE:$<LINK_LIBRARY:WHOLE_ARCHIVE,tessera_devices>>"
                      "$<INSTALL_INTERFACE:$<LINK_LIBRARY:WHOLE_ARCHIVE,Tessera::devices>>" ${tessera_parts})

# The C API (include/tessera/tessera_c.h) over the umbrella.
file(GLOB capi_srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/capi/*.cpp)
add_library(tessera_c STATIC ${capi_srcs})
target_link_libraries(tessera_c PUBLIC tessera)

# The shared library libtessera.so: the objects of every static library above (the parts,
# the devices' registrars, the embedding API and the C API), linked once. The sources are
# compiled with -fvisibility=hidden (CMakeLists.txt), so it exports what the public headers
# mark TESSERA_API (include/tessera/export.h) and, through cmake/tessera.map, nothing outside
# Tessera's names. The registrars are objects of it like any other: a program linking only
# libtessera.so has every device, registered when the library loads. SOVERSION: the major
# and minor version (0.1 -> libtessera.so.0.1), as the API may change at every minor before 1.0.
# The tests, the CLI and the Python module link the static libraries; the installed package
# holds the shared library only (cmake/install.cmake).
set(tessera_shared_parts ${tessera_parts} tessera_devices tessera tessera_c)
set(tessera_shared_objects)
set(tessera_shared_deps)
foreach(t ${tessera_shared_parts})
  list(APPEND tessera_shared_objects $<TARGET_OBJECTS:${t}>)
  # What the parts link besides each other: fmt, flatbuffers, stb, threads.
  get_target_property(libs ${t} LINK_LIBRARIES)
  foreach(l ${libs})
    if(l AND NOT l MATCHES "tessera")
      list(APPEND tessera_shared_deps ${l})
    endif()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES tessera_shared_deps)
add_library(tessera_shared SHARED ${tessera_shared_objects})
add_dependencies(tessera_shared ${tessera_shared_parts})
target_link_libraries(tessera_shared PRIVATE ${tessera_shared_deps})
target_link_options(tessera_shared PRIVATE -Wl,--no-undefined
                    -Wl,--version-script=${CMAKE_SOURCE_DIR}/cmake/tessera.map)
set_target_properties(tessera_shared PROPERTIES OUTPUT_NAME tessera LINKER_LANGUAGE CXX
                      VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
                      LINK_DEPENDS ${CMAKE_SOURCE_DIR}/cmake/tessera.map EXPORT_NAME tessera)
target_include_directories(tessera_shared INTERFACE "$<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>"
                           "$<BUILD_INTERFACE:${CMAKE_BINARY_DIR}/generated>" "$<INSTALL_INTERFACE:include>")
# The C API's target: the same library (tessera/tessera_c.h is one of its headers).
add_library(tessera_c_shared INTERFACE)
target_link_libraries(tessera_c_shared INTERFACE tessera_shared)
set_target_properties(tessera_c_shared PROPERTIES EXPORT_NAME c)
# Installed and exported names: Tessera::tessera (the C++ API) and Tessera::c (the C API).
set(tessera_exported tessera_shared tessera_c_shared)

# `tessera serve` (docs/serving.md): the protocol logic (requests, tensors, streaming, metrics,
# model queues) as a component of its own, apart from the umbrella; the HTTP socket layer
# lives with the CLI (tools/tessera/serve) and links cpp-httplib.
# TESSERA_BUILD_SERVE=OFF leaves it out (the aarch64 cross-build, which has no arm64 cpp-httplib).
if(TESSERA_BUILD_SERVE)
  find_package(nlohmann_json 3 REQUIRED)
  tessera_component(tessera_serve DIRS src/serve DEPS tessera nlohmann_json::nlohmann_json fmt::fmt)
endif()
