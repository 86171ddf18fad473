# ROCm for minifw_core: the GPU sources (src/gpu/*.cu, the same files nvcc compiles) through
# hipcc -x hip from MINIFW_TOOLKIT_ROOT, one --offload-arch per MINIFW_GPU_ARCHS entry, into
# PIC objects archived into the static library (fat binaries included; the extension links
# libamdhip64 through minifw::runtime). CMake's HIP language is not used: it wants a clang and
# a ROCm layout that the pip (TheRock) and distribution toolkits do not share.
# CMAKE_HIP_COMPILER_LAUNCHER (variable or environment, e.g. ccache) is put before hipcc.
minifw_tool(MINIFW_HIPCC hipcc)
minifw_hip_offload_flags(MINIFW_HIP_OFFLOAD "${MINIFW_GPU_ARCHS}")
set(launcher "${CMAKE_HIP_COMPILER_LAUNCHER}")
if(NOT launcher AND DEFINED ENV{CMAKE_HIP_COMPILER_LAUNCHER})
  set(launcher "$ENV{CMAKE_HIP_COMPILER_LAUNCHER}")
endif()
file(GLOB_RECURSE MINIFW_HIP_HEADERS CONFIGURE_DEPENDS
     "${PROJECT_SOURCE_DIR}/src/*.h" "${PROJECT_SOURCE_DIR}/src/*.hpp"
     "${PROJECT_SOURCE_DIR}/src/*.cuh" "${PROJECT_SOURCE_DIR}/src/*.inl")

# hipcc -c <source> -> <name>.o, added to minifw_core. The source path is relative and the
# CUID explicit, so no checkout path reaches the binary.
function(minifw_core_hip_object name source)
  set(obj "${PROJECT_BINARY_DIR}/hip/${name}.o")
  add_custom_command(
    OUTPUT "${obj}"
    COMMAND ${launcher} "${MINIFW_HIPCC}" -x hip -std=c++20 -O3 -fPIC -fvisibility=hidden
            ${MINIFW_HIP_OFFLOAD} -cuid=minifw_${name} ${MINIFW_CORE_PREFIX_MAP_FLAGS}
            -I src -I include -DMINIFW_CORE_WEIGHT=${MINIFW_CORE_WEIGHT} -DMINIFW_CORE_WITH_ACCEL=1
            ${ARGN}
            -c "${source}" -o "${obj}"
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
    DEPENDS "${PROJECT_SOURCE_DIR}/${source}" ${MINIFW_HIP_HEADERS}
    COMMENT "hipcc: ${source} ${ARGN} [${MINIFW_GPU_ARCHS}]"
    VERBATIM COMMAND_EXPAND_LISTS)
  set_source_files_properties("${obj}" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  target_sources(minifw_core PRIVATE "${obj}")
endfunction()

foreach(source IN LISTS MINIFW_CORE_GPU_SOURCES)
  get_filename_component(stem "${source}" NAME_WE)
  minifw_core_hip_object("${stem}" "${source}")
endforeach()
math(EXPR last "${MINIFW_CORE_WEIGHT} - 1")
foreach(v RANGE 0 ${last})
  minifw_core_hip_object("gemm_variant_${v}" src/gpu/gemm_variant.cu -DMINIFW_GEMM_VARIANT=${v})
endforeach()
message(STATUS "minifw_core: ${MINIFW_HIPCC} launcher='${launcher}' ${MINIFW_HIP_OFFLOAD}")
