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

  # HIP version ("HIP version: 7.0.51831-..."): informational only, since the
  # ROCm release number (MINIFW_ACCELERATOR_VERSION) and the HIP version need
  # not match exactly.
  execute_process(COMMAND "${hipcc}" --version
                  OUTPUT_VARIABLE hip_out ERROR_VARIABLE hip_err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "'${hipcc} --version' failed (rc=${rc}): ${hip_out}${hip_err}")
  endif()
  set(hip_version "")
  if(hip_out MATCHES "HIP version: ([0-9]+\\.[0-9]+)")
    set(hip_version "${CMAKE_MATCH_1}")
  endif()
  if(MINIFW_ACCELERATOR_VERSION STREQUAL "")
    if(hip_version STREQUAL "")
      message(FATAL_ERROR "MINIFW_ACCELERATOR_VERSION is empty and '${hipcc} --version' "
                          "prints no 'HIP version:' line: set MINIFW_ACCELERATOR_VERSION.")
    endif()
    set(MINIFW_ACCELERATOR_VERSION "${hip_version}")
  elseif(hip_version AND NOT MINIFW_ACCELERATOR_VERSION MATCHES "^${hip_version}(\\.|$)")
    message(WARNING "MINIFW_ACCELERATOR_VERSION=${MINIFW_ACCELERATOR_VERSION} but ${hipcc} "
                    "reports HIP ${hip_version}.")
  endif()
  message(STATUS "minifw: hipcc (HIP ${hip_version}) ${hipcc}")

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

  # The shared HIP runtime: libamdhip64.so.<major> in the toolkit's lib/, in
  # its multiarch lib/<triplet> (a distribution's packages under /usr, e.g.
  # Debian's libamdhip64-7) or, with TheRock's pip wheels (_rocm_sdk_devel),
  # in the sibling runtime package _rocm_sdk_core/lib.  Linked by full path:
  # DT_NEEDED is its SONAME.
  set(amdhip "")
  set(multiarch_dir "")
  if(CMAKE_LIBRARY_ARCHITECTURE)
    set(multiarch_dir "${MINIFW_TOOLKIT_ROOT}/lib/${CMAKE_LIBRARY_ARCHITECTURE}")
  endif()
  foreach(dir "${MINIFW_TOOLKIT_ROOT}/lib" "${MINIFW_TOOLKIT_ROOT}/lib64" ${multiarch_dir}
              "${MINIFW_TOOLKIT_ROOT}/../_rocm_sdk_core/lib")
    file(GLOB found "${dir}/libamdhip64.so.[0-9]" "${dir}/libamdhip64.so.[0-9][0-9]")
    if(NOT found AND EXISTS "${dir}/libamdhip64.so")
      set(found "${dir}/libamdhip64.so")
    endif()
    if(found)
      list(GET found 0 amdhip)
      break()
    endif()
  endforeach()
  if(NOT amdhip)
    message(FATAL_ERROR "libamdhip64.so not found in '${MINIFW_TOOLKIT_ROOT}/lib', "
                        "'${MINIFW_TOOLKIT_ROOT}/lib64', '${multiarch_dir}' or "
                        "'${MINIFW_TOOLKIT_ROOT}/../_rocm_sdk_core/lib'.")
  endif()
  cmake_path(NORMAL_PATH amdhip)
  message(STATUS "minifw: HIP runtime ${amdhip}")
  add_library(minifw_amdhip SHARED IMPORTED)
  set_target_properties(minifw_amdhip PROPERTIES IMPORTED_LOCATION "${amdhip}")

  set(src "${CMAKE_CURRENT_SOURCE_DIR}/csrc/rocm/saxpy.hip")
  set(obj "${CMAKE_CURRENT_BINARY_DIR}/rocm_saxpy.o")
  add_custom_command(
    OUTPUT "${obj}"
    COMMAND "${hipcc}" -x hip -std=c++20 -O3 -fPIC -fvisibility=hidden
            ${offload} ${MINIFW_PREFIX_MAP_FLAGS}
            "-I${CMAKE_CURRENT_SOURCE_DIR}/csrc" -c csrc/rocm/saxpy.hip -o "${obj}"
    # Relative source path: clang derives the HIP CUID from it.
    WORKING_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
    DEPENDS "${src}" "${CMAKE_CURRENT_SOURCE_DIR}/csrc/accel.h"
    COMMENT "hipcc: csrc/rocm/saxpy.hip [${MINIFW_GPU_ARCHS}]"
    VERBATIM COMMAND_EXPAND_LISTS)
  set_source_files_properties("${obj}" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  target_sources(${target} PRIVATE "${obj}")
  target_link_libraries(${target} PRIVATE minifw_amdhip)

  set(MINIFW_ACCELERATOR_VERSION "${MINIFW_ACCELERATOR_VERSION}" PARENT_SCOPE)
  set(MINIFW_PY_HIP "\"${MINIFW_ACCELERATOR_VERSION}\"" PARENT_SCOPE)
  set(MINIFW_DEVICE_COMPILER "hipcc ${hip_version}" PARENT_SCOPE)
endfunction()
