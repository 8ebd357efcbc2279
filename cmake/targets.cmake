# cmake/targets.cmake — the names an engine links, the same through add_subdirectory() and
# find_package(fp8kv):
#   fp8kv::plugin       the plugin ABI headers, fp8kv/plugin.h, fp8kv/kv_plugin.h and
#                       fp8kv/block_plugin.h (all a codec, KV-kernel or block-codec plugin needs)
#   fp8kv::conformance  the judge library (sweeps, vector checks, reports) and its dependencies
#   fp8kv::core         the semantic tables, .npy files and digests (no MPFR)
#   fp8kv::kernels_cpu  the built-in host codecs and CPU KV-cache reference paths
#   fp8kv::fp8kv        the fp8kv CLI
# and the variable fp8kv_VECTORS_DIR (the golden vectors). Included from the top-level
# CMakeLists.txt after the subdirectories; the package side is cmake/install.cmake.

# A plugin includes fp8kv/plugin.h and links against nothing of fp8kv's.
add_library(fp8kv_plugin INTERFACE)
target_include_directories(fp8kv_plugin INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/kernels/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

# The exported name of each target is the part after fp8kv:: (cmake/install.cmake).
set(FP8KV_PACKAGE_TARGETS fp8kv_plugin fp8kv_core fp8kv_kernels_cpu fp8kv_conformance fp8kv)
if(TARGET fp8kv_kernels_gpu)
  list(APPEND FP8KV_PACKAGE_TARGETS fp8kv_kernels_gpu)
endif()
foreach(_t IN LISTS FP8KV_PACKAGE_TARGETS)
  string(REGEX REPLACE "^fp8kv_" "" _name "${_t}")
  set_property(TARGET ${_t} PROPERTY EXPORT_NAME ${_name})
  get_target_property(_type ${_t} TYPE)
  if(_type STREQUAL "EXECUTABLE")
    add_executable(fp8kv::${_name} ALIAS ${_t})
  else()
    add_library(fp8kv::${_name} ALIAS ${_t})
  endif()
endforeach()

set(fp8kv_VECTORS_DIR "${PROJECT_SOURCE_DIR}/vectors")
if(NOT PROJECT_IS_TOP_LEVEL)
  set(fp8kv_VECTORS_DIR "${fp8kv_VECTORS_DIR}" PARENT_SCOPE)
endif()
