# ROCm backend: csrc/rocm/saxpy.hip compiled by hipcc from MINIFW_TOOLKIT_ROOT
# (e.g. /opt/rocm-6.4.1) into a PIC object, one --offload-arch per entry of
# MINIFW_GPU_ARCHS (gfx908;gfx90a;gfx942;...), linked into _C with the shared
# HIP runtime (libamdhip64.so.<major>), found at run time via MINIFW_RPATH.
# CMake's HIP language is not used, for the same reasons as for CUDA: the
# pinned toolkit is driven directly.

function(minifw_add_rocm_backend target)
  if(NOT MINIFW_TOOLKIT_ROOT)
    message(FATAL_ERROR "MINIFW_ACCELERATOR=rocm needs MINIFW_TOOLKIT_ROOT "
                        "(the ROCm root holding bin/hipcc, include/hip and lib/).")
  endif()
  set(hipcc "${MINIFW_TOOLKIT_ROOT}/bin/hipcc")
  if(NOT EXISTS "${hipcc}")
    message(FATAL_ERROR "hipcc not found: '${hipcc}' does not exist "
                        "(MINIFW_TOOLKIT_ROOT='${MINIFW_TOOLKIT_ROOT}').")
  endif()

  # HIP version ("HIP version: 6.4.43482-..."), checked against MINIFW_ACCELERATOR_VERSION.
  execute_process(COMMAND "${hipcc}" --version
                  OUTPUT_VARIABLE hip_out ERROR_VARIABLE hip_err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT hip_out MATCHES "HIP version: ([0-9]+)\\.([0-9]+)")
    message(FATAL_ERROR "'${hipcc} --version' failed (rc=${rc}): ${hip_out}${hip_err}")
  endif()
  set(hip_major "${CMAKE_MATCH_1}")
  set(hip_minor "${CMAKE_MATCH_2}")
  if(MINIFW_ACCELERATOR_VERSION STREQUAL "")
    set(MINIFW_ACCELERATOR_VERSION "${hip_major}.${hip_minor}")
  elseif(NOT MINIFW_ACCELERATOR_VERSION MATCHES "^${hip_major}\\.${hip_minor}(\\.|$)")
    message(FATAL_ERROR "MINIFW_ACCELERATOR_VERSION=${MINIFW_ACCELERATOR_VERSION} but "
                        "${hipcc} is HIP ${hip_major}.${hip_minor}.")
  endif()

  set(offload "")
  string(REPLACE " " ";" archs "${MINIFW_GPU_ARCHS}")
  foreach(arch IN LISTS archs)
    if(arch STREQUAL "")
      continue()
    endif()
    # gfx90a, gfx942, gfx1100, gfx90a:xnack+ ...
    if(NOT arch MATCHES "^gfx[0-9a-f]+(:[a-z]+[+-])*$")
      message(FATAL_ERROR "MINIFW_GPU_ARCHS: '${arch}' is not a ROCm target like gfx90a.")
    endif()
    list(APPEND offload "--offload-arch=${arch}")
  endforeach()
  if(NOT offload)
    message(FATAL_ERROR "MINIFW_GPU_ARCHS is empty; a ROCm build needs e.g. "
                        "'gfx908;gfx90a;gfx942'.")
  endif()

  file(GLOB amdhip "${MINIFW_TOOLKIT_ROOT}/lib/libamdhip64.so.${hip_major}")
  if(NOT amdhip)
    message(FATAL_ERROR "libamdhip64.so.${hip_major} not found in '${MINIFW_TOOLKIT_ROOT}/lib'.")
  endif()
  add_library(minifw_amdhip SHARED IMPORTED)
  set_target_properties(minifw_amdhip PROPERTIES
    IMPORTED_LOCATION "${amdhip}" IMPORTED_SONAME "libamdhip64.so.${hip_major}")

  set(src "${CMAKE_CURRENT_SOURCE_DIR}/csrc/rocm/saxpy.hip")
  set(obj "${CMAKE_CURRENT_BINARY_DIR}/rocm_saxpy.o")
  add_custom_command(
    OUTPUT "${obj}"
    COMMAND "${hipcc}" -x hip -std=c++20 -O3 -fPIC -fvisibility=hidden
            ${offload} ${MINIFW_PREFIX_MAP_FLAGS}
            "-I${CMAKE_CURRENT_SOURCE_DIR}/csrc" -c "${src}" -o "${obj}"
    DEPENDS "${src}" "${CMAKE_CURRENT_SOURCE_DIR}/csrc/accel.h"
    COMMENT "hipcc ${hip_major}.${hip_minor}: csrc/rocm/saxpy.hip [${MINIFW_GPU_ARCHS}]"
    VERBATIM COMMAND_EXPAND_LISTS)
  set_source_files_properties("${obj}" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  target_sources(${target} PRIVATE "${obj}")
  target_link_libraries(${target} PRIVATE minifw_amdhip)

  set(MINIFW_ACCELERATOR_VERSION "${MINIFW_ACCELERATOR_VERSION}" PARENT_SCOPE)
  set(MINIFW_PY_HIP "\"${MINIFW_ACCELERATOR_VERSION}\"" PARENT_SCOPE)
  set(MINIFW_DEVICE_COMPILER "hipcc ${hip_major}.${hip_minor}" PARENT_SCOPE)
endfunction()
