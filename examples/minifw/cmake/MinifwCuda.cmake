# CUDA backend: csrc/cuda/saxpy.cu compiled by the pinned nvcc from
# MINIFW_TOOLKIT_ROOT into a PIC object that is linked into _C together with
# the *shared* CUDA runtime (libcudart.so.<major>, found at run time through
# the RUNPATH in MINIFW_RPATH, never bundled in the wheel).
#
# CMake's CUDA language support is deliberately not used: CMake 3.25 predates
# CUDA 13, and the pip-wheel toolkit layout (nvidia/cu13/{bin,include,lib},
# only libcudart.so.13 without the unversioned symlink) is not what
# FindCUDAToolkit expects.  nvcc is driven directly instead.

# "7.5;8.6;9.0a;12.0+PTX" (TORCH_CUDA_ARCH_LIST style) -> -gencode flags.
function(minifw_cuda_gencode_flags out_flags out_codes archs)
  set(flags "")
  set(codes "")
  string(REPLACE " " ";" archs "${archs}")
  foreach(arch IN LISTS archs)
    if(arch STREQUAL "")
      continue()
    endif()
    if(NOT arch MATCHES "^([0-9]+)\\.([0-9])([af]?)(\\+PTX)?$")
      message(FATAL_ERROR
        "MINIFW_GPU_ARCHS: '${arch}' is not a CUDA arch like 8.0, 9.0a or 12.0+PTX.")
    endif()
    set(num "${CMAKE_MATCH_1}${CMAKE_MATCH_2}${CMAKE_MATCH_3}")
    if(CMAKE_MATCH_4)
      list(APPEND flags "-gencode=arch=compute_${num},code=[sm_${num},compute_${num}]")
      list(APPEND codes "sm_${num}" "compute_${num}")
    else()
      list(APPEND flags "-gencode=arch=compute_${num},code=sm_${num}")
      list(APPEND codes "sm_${num}")
    endif()
  endforeach()
  if(NOT flags)
    message(FATAL_ERROR "MINIFW_GPU_ARCHS is empty; a CUDA build needs e.g. "
                        "'7.5;8.0;8.6;9.0;10.0;12.0+PTX'.")
  endif()
  set(${out_flags} "${flags}" PARENT_SCOPE)
  set(${out_codes} "${codes}" PARENT_SCOPE)
endfunction()

function(minifw_add_cuda_backend target)
  if(NOT MINIFW_TOOLKIT_ROOT)
    message(FATAL_ERROR "MINIFW_ACCELERATOR=cuda needs MINIFW_TOOLKIT_ROOT "
                        "(the directory holding bin/nvcc, include/ and lib/).")
  endif()
  set(nvcc "${MINIFW_TOOLKIT_ROOT}/bin/nvcc")
  if(NOT EXISTS "${nvcc}")
    message(FATAL_ERROR "nvcc not found: '${nvcc}' does not exist "
                        "(MINIFW_TOOLKIT_ROOT='${MINIFW_TOOLKIT_ROOT}').")
  endif()

  # Toolkit version, checked against MINIFW_ACCELERATOR_VERSION.
  execute_process(COMMAND "${nvcc}" --version
                  OUTPUT_VARIABLE nvcc_out ERROR_VARIABLE nvcc_err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT nvcc_out MATCHES "release ([0-9]+)\\.([0-9]+), V([0-9.]+)")
    message(FATAL_ERROR "'${nvcc} --version' failed (rc=${rc}): ${nvcc_out}${nvcc_err}")
  endif()
  set(cuda_major "${CMAKE_MATCH_1}")
  set(cuda_minor "${CMAKE_MATCH_2}")
  set(nvcc_full "${CMAKE_MATCH_3}")
  if(MINIFW_ACCELERATOR_VERSION STREQUAL "")
    set(MINIFW_ACCELERATOR_VERSION "${cuda_major}.${cuda_minor}")
  elseif(NOT MINIFW_ACCELERATOR_VERSION MATCHES "^${cuda_major}\\.${cuda_minor}(\\.|$)")
    message(FATAL_ERROR "MINIFW_ACCELERATOR_VERSION=${MINIFW_ACCELERATOR_VERSION} but "
                        "${nvcc} is CUDA ${cuda_major}.${cuda_minor} (V${nvcc_full}).")
  endif()
  message(STATUS "minifw: nvcc ${nvcc_full} (${nvcc})")

  # Architectures: every requested code must be known to this nvcc.
  minifw_cuda_gencode_flags(gencode codes "${MINIFW_GPU_ARCHS}")
  execute_process(COMMAND "${nvcc}" --list-gpu-code
                  OUTPUT_VARIABLE known_sm RESULT_VARIABLE rc1)
  execute_process(COMMAND "${nvcc}" --list-gpu-arch
                  OUTPUT_VARIABLE known_compute RESULT_VARIABLE rc2)
  if(rc1 EQUAL 0 AND rc2 EQUAL 0)
    string(REGEX MATCHALL "[a-z]+_[0-9]+[af]?" known "${known_sm} ${known_compute}")
    foreach(code IN LISTS codes)
      # Arch-specific (sm_90a) and family (sm_100f) variants are not listed:
      # check their base arch.
      string(REGEX REPLACE "[af]$" "" code "${code}")
      if(NOT code IN_LIST known)
        string(REPLACE ";" " " known_pretty "${known}")
        message(FATAL_ERROR "MINIFW_GPU_ARCHS asks for ${code}, which nvcc "
                            "${nvcc_full} does not support. It knows: ${known_pretty}")
      endif()
    endforeach()
  endif()

  # The shared CUDA runtime.  Only the SONAME file ships in the pip wheels
  # (no libcudart.so dev symlink), so link the versioned file by full path:
  # DT_NEEDED becomes its SONAME (libcudart.so.<major>), no path is recorded.
  set(cudart "${MINIFW_TOOLKIT_ROOT}/lib/libcudart.so.${cuda_major}")
  if(NOT EXISTS "${cudart}")
    file(GLOB cudart_candidates "${MINIFW_TOOLKIT_ROOT}/lib64/libcudart.so.${cuda_major}"
                                "${MINIFW_TOOLKIT_ROOT}/targets/*/lib/libcudart.so.${cuda_major}")
    list(GET cudart_candidates 0 cudart)
  endif()
  if(NOT cudart OR NOT EXISTS "${cudart}")
    message(FATAL_ERROR "libcudart.so.${cuda_major} not found under "
                        "'${MINIFW_TOOLKIT_ROOT}/lib' (is the cudart component installed?).")
  endif()
  add_library(minifw_cudart SHARED IMPORTED)
  set_target_properties(minifw_cudart PROPERTIES
    IMPORTED_LOCATION "${cudart}"
    IMPORTED_SONAME "libcudart.so.${cuda_major}")

  if(NOT MINIFW_RPATH)
    # Where the nvidia-cuda-runtime wheel installs it, seen from site-packages/minifw.
    set(MINIFW_RPATH "$ORIGIN/../nvidia/cu${cuda_major}/lib")
    message(STATUS "minifw: MINIFW_RPATH not set, using '${MINIFW_RPATH}'")
    set_target_properties(${target} PROPERTIES INSTALL_RPATH "${MINIFW_RPATH}")
  endif()

  # nvcc -> PIC object.  -ccbin pins the host compiler to CMake's; the prefix
  # maps keep source/build/toolkit paths out of the object.
  set(src "${CMAKE_CURRENT_SOURCE_DIR}/csrc/cuda/saxpy.cu")
  set(obj "${CMAKE_CURRENT_BINARY_DIR}/cuda_saxpy.o")
  set(host_flags "-fPIC" "-fvisibility=hidden")
  foreach(f IN LISTS MINIFW_PREFIX_MAP_FLAGS)
    list(APPEND host_flags "${f}")
  endforeach()
  list(JOIN host_flags "," host_flags_joined)
  set(nvcc_flags -std=c++20 -O3 --threads 0 ${gencode}
      "--compiler-bindir=${CMAKE_CXX_COMPILER}" "-Xcompiler=${host_flags_joined}"
      "-I${CMAKE_CURRENT_SOURCE_DIR}/csrc")
  # Run from the source dir with a relative source path: nvcc derives the
  # module id (and the names of file-local symbols) from the path it is given.
  add_custom_command(
    OUTPUT "${obj}"
    COMMAND "${nvcc}" ${nvcc_flags} -c csrc/cuda/saxpy.cu -o "${obj}"
    WORKING_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
    DEPENDS "${src}" "${CMAKE_CURRENT_SOURCE_DIR}/csrc/accel.h"
    COMMENT "nvcc ${nvcc_full}: csrc/cuda/saxpy.cu [${MINIFW_GPU_ARCHS}]"
    VERBATIM COMMAND_EXPAND_LISTS)
  set_source_files_properties("${obj}" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  target_sources(${target} PRIVATE "${obj}")
  target_link_libraries(${target} PRIVATE minifw_cudart)

  set(MINIFW_ACCELERATOR_VERSION "${MINIFW_ACCELERATOR_VERSION}" PARENT_SCOPE)
  set(MINIFW_RPATH "${MINIFW_RPATH}" PARENT_SCOPE)
  set(MINIFW_PY_CUDA "\"${MINIFW_ACCELERATOR_VERSION}\"" PARENT_SCOPE)
  set(MINIFW_DEVICE_COMPILER "nvcc ${nvcc_full}" PARENT_SCOPE)
endfunction()
