# XPU backend: csrc/xpu/saxpy_sycl.cpp compiled *and linked* by icpx -fsycl
# (oneAPI DPC++ from MINIFW_TOOLKIT_ROOT, e.g. /opt/intel/oneapi/compiler/2025.1)
# into a small shared library, libminifw_sycl.so, installed next to _C.
# SYCL needs its own device-link step (icpx -fsycl at link time), so the SYCL
# code lives in its own DSO instead of an object linked by the host compiler.
# _C finds it through $ORIGIN; the SYCL runtime (libsycl.so.<N>) through MINIFW_RPATH.
# MINIFW_GPU_ARCHS (optional) are AOT device targets for ocloc, e.g. "pvc;bmg-g21";
# empty means JIT-only SPIR-V (spir64).

function(minifw_add_xpu_backend target)
  if(NOT MINIFW_TOOLKIT_ROOT)
    message(FATAL_ERROR "MINIFW_ACCELERATOR=xpu needs MINIFW_TOOLKIT_ROOT "
                        "(the oneAPI compiler root holding bin/icpx).")
  endif()
  set(icpx "${MINIFW_TOOLKIT_ROOT}/bin/icpx")
  if(NOT EXISTS "${icpx}")
    message(FATAL_ERROR "icpx not found: '${icpx}' does not exist "
                        "(MINIFW_TOOLKIT_ROOT='${MINIFW_TOOLKIT_ROOT}').")
  endif()
  execute_process(COMMAND "${icpx}" --version
                  OUTPUT_VARIABLE icpx_out ERROR_VARIABLE icpx_err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR NOT icpx_out MATCHES "Compiler ([0-9]+)\\.([0-9]+)")
    message(FATAL_ERROR "'${icpx} --version' failed (rc=${rc}): ${icpx_out}${icpx_err}")
  endif()
  set(icpx_version "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
  if(MINIFW_ACCELERATOR_VERSION STREQUAL "")
    set(MINIFW_ACCELERATOR_VERSION "${icpx_version}")
  elseif(NOT MINIFW_ACCELERATOR_VERSION MATCHES "^${CMAKE_MATCH_1}\\.${CMAKE_MATCH_2}(\\.|$)")
    message(FATAL_ERROR "MINIFW_ACCELERATOR_VERSION=${MINIFW_ACCELERATOR_VERSION} but "
                        "${icpx} is oneAPI ${icpx_version}.")
  endif()

  set(targets_flags "")
  string(REPLACE " " ";" archs "${MINIFW_GPU_ARCHS}")
  list(REMOVE_ITEM archs "")
  if(archs)
    list(JOIN archs "," devices)
    set(targets_flags "-fsycl-targets=spir64_gen,spir64" "-Xsycl-target-backend=spir64_gen"
                      "-device ${devices}")
  endif()

  set(rpath_flags "")
  if(MINIFW_RPATH)
    list(JOIN MINIFW_RPATH ":" rpath_joined)
    set(rpath_flags "-Wl,-rpath,${rpath_joined}")
  endif()

  set(src "${CMAKE_CURRENT_SOURCE_DIR}/csrc/xpu/saxpy_sycl.cpp")
  set(lib "${CMAKE_CURRENT_BINARY_DIR}/libminifw_sycl.so")
  add_custom_command(
    OUTPUT "${lib}"
    COMMAND "${icpx}" -fsycl ${targets_flags} -std=c++20 -O3 -fPIC -shared
            -fvisibility=hidden ${MINIFW_PREFIX_MAP_FLAGS}
            "-I${CMAKE_CURRENT_SOURCE_DIR}/csrc"
            "-Wl,-soname,libminifw_sycl.so" "-Wl,--enable-new-dtags"
            ${rpath_flags}
            csrc/xpu/saxpy_sycl.cpp -o "${lib}"
    WORKING_DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}"
    DEPENDS "${src}" "${CMAKE_CURRENT_SOURCE_DIR}/csrc/accel.h"
    COMMENT "icpx ${icpx_version} -fsycl: csrc/xpu/saxpy_sycl.cpp [${MINIFW_GPU_ARCHS}]"
    VERBATIM COMMAND_EXPAND_LISTS)
  add_custom_target(minifw_sycl_lib DEPENDS "${lib}")
  add_library(minifw_sycl SHARED IMPORTED)
  set_target_properties(minifw_sycl PROPERTIES
    IMPORTED_LOCATION "${lib}" IMPORTED_SONAME "libminifw_sycl.so")
  add_dependencies(${target} minifw_sycl_lib)
  target_link_libraries(${target} PRIVATE minifw_sycl)
  # _C finds libminifw_sycl.so next to itself.
  get_target_property(rpath ${target} INSTALL_RPATH)
  if(NOT rpath)
    set(rpath "")
  endif()
  set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN;${rpath}")

  set(MINIFW_EXTRA_INSTALL_FILES "${lib}" PARENT_SCOPE)
  set(MINIFW_ACCELERATOR_VERSION "${MINIFW_ACCELERATOR_VERSION}" PARENT_SCOPE)
  set(MINIFW_PY_XPU "\"${MINIFW_ACCELERATOR_VERSION}\"" PARENT_SCOPE)
  set(MINIFW_DEVICE_COMPILER "icpx ${icpx_version}" PARENT_SCOPE)
endfunction()
