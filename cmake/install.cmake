# cmake/install.cmake — `cmake --install` of the parts an engine uses: the CLI, the host
# libraries (fp8kv_core, fp8kv_kernels_cpu, fp8kv_conformance; not the MPFR oracle), their
# public headers, the golden vectors, the CMake package (fp8kvConfig.cmake, targets fp8kv::*)
# and fp8kv.pc. Included from the top-level CMakeLists.txt after cmake/targets.cmake.
include(CMakePackageConfigHelpers)

set(FP8KV_CMAKE_INSTALL_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/fp8kv")
# The CLI finds the installed vectors at CMAKE_INSTALL_FULL_DATADIR/fp8kv/vectors.
set(FP8KV_VECTORS_INSTALL_DIR "${CMAKE_INSTALL_DATADIR}/fp8kv/vectors")

# ---- usage requirements that point into the build --------------------------------------
# The subdirectories give their include dirs as source paths and link jansson through
# PkgConfig::JANSSON (an imported target of this build's own pkg-config run). In the package,
# the include dir is <prefix>/include, and jansson is PkgConfig::fp8kv_jansson, which
# fp8kvConfig.cmake creates with its own pkg-config run.
function(fp8kv_make_exportable target)
  get_target_property(_dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
  if(_dirs)
    set(_new "")
    foreach(_d IN LISTS _dirs)
      if(_d MATCHES "^\\$<" OR NOT IS_ABSOLUTE "${_d}")
        list(APPEND _new "${_d}")
      else()
        list(APPEND _new "$<BUILD_INTERFACE:${_d}>")
      endif()
    endforeach()
    list(APPEND _new "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
    list(REMOVE_DUPLICATES _new)
    set_property(TARGET ${target} PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${_new}")
  endif()
  get_target_property(_libs ${target} INTERFACE_LINK_LIBRARIES)
  if(_libs)
    list(TRANSFORM _libs REPLACE "^PkgConfig::JANSSON$"
      "$<BUILD_INTERFACE:PkgConfig::JANSSON>;$<INSTALL_INTERFACE:PkgConfig::fp8kv_jansson>")
    set_property(TARGET ${target} PROPERTY INTERFACE_LINK_LIBRARIES "${_libs}")
  endif()
endfunction()

# Two export sets: the plugin header and the CLI need nothing at all, the libraries need
# OpenSSL, OpenMP and jansson (fp8kvConfig.cmake looks for those only when asked for the
# conformance component, so a plugin builds where only fp8kv itself is installed).
set(_lib_targets fp8kv_core fp8kv_kernels_cpu fp8kv_conformance)
if(TARGET fp8kv_kernels_gpu)
  list(APPEND _lib_targets fp8kv_kernels_gpu fp8kv_reference_gpu)
endif()
foreach(_t IN LISTS _lib_targets)
  fp8kv_make_exportable(${_t})
endforeach()

install(TARGETS fp8kv_plugin fp8kv EXPORT fp8kvPluginTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS ${_lib_targets} EXPORT fp8kvConformanceTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# the bits codec as a plugin, where an installed `fp8kv bench` looks for it (lib/fp8kv/)
install(TARGETS fp8kv_bits_plugin LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/fp8kv)
install(EXPORT fp8kvPluginTargets NAMESPACE fp8kv::
  FILE fp8kvPluginTargets.cmake DESTINATION ${FP8KV_CMAKE_INSTALL_DIR})
install(EXPORT fp8kvConformanceTargets NAMESPACE fp8kv::
  FILE fp8kvConformanceTargets.cmake DESTINATION ${FP8KV_CMAKE_INSTALL_DIR})

# ---- headers: the MPFR-free ones only (core, kernels, conformance; not oracle/) -------------
install(DIRECTORY ${PROJECT_SOURCE_DIR}/core/include/ ${PROJECT_SOURCE_DIR}/kernels/include/
  ${PROJECT_SOURCE_DIR}/conformance/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")

# ---- golden vectors --------------------------------------------------------------------
install(DIRECTORY ${PROJECT_SOURCE_DIR}/vectors/ DESTINATION ${FP8KV_VECTORS_INSTALL_DIR})

# ---- fp8kvConfig.cmake, fp8kvConfigVersion.cmake -------------------------------------------
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/fp8kvConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/fp8kvConfig.cmake
  INSTALL_DESTINATION ${FP8KV_CMAKE_INSTALL_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR FP8KV_VECTORS_INSTALL_DIR)
# 0.x: a minor version may break the API, so only the same major.minor is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/fp8kvConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/fp8kvConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/fp8kvConfigVersion.cmake
  DESTINATION ${FP8KV_CMAKE_INSTALL_DIR})

# ---- fp8kv.pc ------------------------------------------------------------------------------
# Relocatable: the prefix is found from the .pc file's own place. The libraries are static, so
# their dependencies are public (Requires, Libs): `pkg-config --libs fp8kv` links as it is.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(FP8KV_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(FP8KV_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH _up "/root/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/root")
  string(REGEX REPLACE "/$" "" _up "${_up}")
  set(FP8KV_PC_PREFIX "\${pcfiledir}/${_up}")
  set(FP8KV_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(FP8KV_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(FP8KV_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(FP8KV_PC_OPENMP "${OpenMP_C_FLAGS}")
# A GPU build's judge library also needs the device kernels and their runtime (resolved to
# files below, by file(GENERATE): the CUDA and HIP runtimes come without .pc files).
set(FP8KV_PC_GPU_LIBS "")
if(FP8KV_GPU STREQUAL "cuda")
  set(FP8KV_PC_GPU_LIBS
    " -lfp8kv_kernels_gpu $<TARGET_FILE:CUDA::cudart_static> -ldl -lrt -lpthread -lstdc++")
elseif(FP8KV_GPU STREQUAL "hip")
  set(FP8KV_PC_GPU_LIBS " -lfp8kv_kernels_gpu $<TARGET_LINKER_FILE:hip::amdhip64> -lstdc++")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/fp8kv.pc.in ${PROJECT_BINARY_DIR}/cmake/fp8kv.pc.gen
  @ONLY)
file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/cmake/fp8kv.pc
  INPUT ${PROJECT_BINARY_DIR}/cmake/fp8kv.pc.gen)
install(FILES ${PROJECT_BINARY_DIR}/cmake/fp8kv.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
