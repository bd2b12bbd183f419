# The library's components, each a static library, linked together as `tessera`.
# Splitting keeps incremental builds small and lets one component build without the others.

include(cmake/arch.cmake)  # which architecture-specific kernels this build compiles
tessera_component(tessera_core DIRS src/core src/ops DEPS fmt::fmt)
tessera_component(tessera_convert DIRS src/convert DEPS tessera_core)
tessera_component(tessera_runtime DIRS src/backend/common src/passes src/runtime DEPS tessera_convert)
tessera_component(tessera_cpu DIRS src/backend/cpu DEPS tessera_runtime)

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

# The umbrella library: the device registry and everything above.
add_library(tessera STATIC ${CMAKE_SOURCE_DIR}/src/registry.cpp)
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
