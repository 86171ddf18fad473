# Intel XPU for minifw_core: src/xpu/*.cpp compiled *and linked* by icpx -fsycl from
# MINIFW_TOOLKIT_ROOT into libminifw_sycl.so (SYCL needs its own device link, so the SYCL code
# is a DSO, not objects in the static library). The extension installs it next to itself
# (minifw_core_SHIP_FILES) and finds it through $ORIGIN; the SYCL runtime (libsycl.so.<N>)
# through MINIFW_RPATH. MINIFW_GPU_ARCHS (optional) are AOT device targets for ocloc, e.g.
# "pvc;bmg-g21"; empty means JIT-only SPIR-V (spir64).
minifw_tool(MINIFW_ICPX icpx)
set(targets_flags "")
if(MINIFW_GPU_ARCHS)
  list(JOIN MINIFW_GPU_ARCHS "," devices)
  set(targets_flags "-fsycl-targets=spir64_gen,spir64" "-Xsycl-target-backend=spir64_gen"
                    "-device ${devices}")
endif()
set(rpath_flags "")
if(MINIFW_RPATH)
  list(JOIN MINIFW_RPATH ":" rpath_joined)
  set(rpath_flags "-Wl,-rpath,${rpath_joined}")
endif()
set(sources src/xpu/runtime.cpp src/xpu/ops.cpp src/xpu/gemm.cpp)
file(GLOB headers "${PROJECT_SOURCE_DIR}/src/xpu/*.hpp" "${PROJECT_SOURCE_DIR}/src/common/*.hpp")
set(lib "${PROJECT_BINARY_DIR}/libminifw_sycl.so")
add_custom_command(
  OUTPUT "${lib}"
  COMMAND "${MINIFW_ICPX}" -fsycl ${targets_flags} -std=c++20 -O3 -fPIC -shared
          -fvisibility=hidden ${MINIFW_CORE_PREFIX_MAP_FLAGS}
          -I src -I include -DMINIFW_CORE_WEIGHT=${MINIFW_CORE_WEIGHT}
          "-Wl,-soname,libminifw_sycl.so" "-Wl,--enable-new-dtags" ${rpath_flags}
          ${sources} -o "${lib}"
  WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
  DEPENDS ${sources} ${headers} "${PROJECT_SOURCE_DIR}/src/accel.h"
  COMMENT "${MINIFW_DEVICE_COMPILER} -fsycl: ${sources} [${MINIFW_GPU_ARCHS}]"
  VERBATIM COMMAND_EXPAND_LISTS)
add_custom_target(minifw_sycl_lib DEPENDS "${lib}")
add_dependencies(minifw_core minifw_sycl_lib)
# The build tree's view; the package config points minifw::sycl at the installed copy.
add_library(minifw::sycl SHARED IMPORTED GLOBAL)
set_target_properties(minifw::sycl PROPERTIES IMPORTED_LOCATION "${lib}"
                                              IMPORTED_SONAME "libminifw_sycl.so")
target_link_libraries(minifw_core PRIVATE minifw::sycl)
set(MINIFW_CORE_SHIP_FILES "${lib}")
