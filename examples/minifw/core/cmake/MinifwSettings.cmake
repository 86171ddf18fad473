# minifw's build settings, read from the environment by minifw_core (core/CMakeLists.txt) and
# by the extension (../CMakeLists.txt) alike. Nothing is auto-detected:
#   MINIFW_ACCELERATOR          cpu | cuda | rocm | xpu              (default cpu)
#   MINIFW_ACCELERATOR_VERSION  e.g. 13.2 (checked against the toolkit; empty for cpu)
#   MINIFW_GPU_ARCHS            "7.5;8.0;...;12.0+PTX" (CUDA) or "gfx908;gfx90a" (ROCm)
#   MINIFW_TOOLKIT_ROOT         toolkit root: holds bin/nvcc | bin/hipcc | bin/icpx
#   MINIFW_RPATH                ";"-separated RUNPATH entries (the extension; xpu: the SYCL DSO)
#   MINIFW_CORE_WEIGHT          1..64: GEMM variants compiled into minifw_core (default below)

# The default weight (measured on 2 cores, see README.md): a cold cpu core build is 20-40 s,
# a cold cu132 one (6 archs + PTX) several minutes.
set(MINIFW_CORE_DEFAULT_WEIGHT 6)
set(MINIFW_CORE_MAX_WEIGHT 64)

function(minifw_env out name default)
  if(DEFINED ENV{${name}} AND NOT "$ENV{${name}}" STREQUAL "")
    string(STRIP "$ENV{${name}}" value)
  else()
    set(value "${default}")
  endif()
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# "7.5 8.0;;9.0" -> "7.5;8.0;9.0": the form recorded and compared.
function(minifw_normalize_archs out archs)
  string(REPLACE " " ";" archs "${archs}")
  list(REMOVE_ITEM archs "")
  set(${out} "${archs}" PARENT_SCOPE)
endfunction()

function(minifw_require_cxx20)
  if(NOT "cxx_std_20" IN_LIST CMAKE_CXX_COMPILE_FEATURES)
    message(FATAL_ERROR
      "minifw requires a C++20 compiler, but ${CMAKE_CXX_COMPILER} "
      "(${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}) has no C++20 mode.")
  endif()
  include(CheckCXXSourceCompiles)
  check_cxx_source_compiles([=[
#include <concepts>
#include <ranges>
#include <span>
#include <vector>
template <std::floating_point T> T f(std::span<const T> s) {
  T acc{};
  for (T v : s | std::views::transform([](T x) { return 2 * x; })) acc += v;
  return acc;
}
int main() {
  std::vector<double> v{1.0};
  auto g = []<typename T>() { return sizeof(T); };
  return f<double>(v) == 2.0 && g.template operator()<int>() == sizeof(int) ? 0 : 1;
}
]=] MINIFW_HAVE_CXX20_LIBRARY)
  if(NOT MINIFW_HAVE_CXX20_LIBRARY)
    message(FATAL_ERROR
      "minifw requires C++20 <span>, <concepts>, <ranges> and template lambdas; "
      "${CMAKE_CXX_COMPILER} (${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}) does not "
      "provide them (GCC >= 10 / Clang >= 16 needed).")
  endif()
endfunction()

# Sets MINIFW_ACCELERATOR, MINIFW_ACCELERATOR_VERSION, MINIFW_GPU_ARCHS, MINIFW_TOOLKIT_ROOT,
# MINIFW_RPATH and MINIFW_CORE_WEIGHT in the caller's scope, checked.
macro(minifw_read_settings)
  minifw_env(MINIFW_ACCELERATOR MINIFW_ACCELERATOR "cpu")
  string(TOLOWER "${MINIFW_ACCELERATOR}" MINIFW_ACCELERATOR)
  minifw_env(MINIFW_ACCELERATOR_VERSION MINIFW_ACCELERATOR_VERSION "")
  minifw_env(MINIFW_GPU_ARCHS MINIFW_GPU_ARCHS "")
  minifw_normalize_archs(MINIFW_GPU_ARCHS "${MINIFW_GPU_ARCHS}")
  minifw_env(MINIFW_TOOLKIT_ROOT MINIFW_TOOLKIT_ROOT "")
  minifw_env(MINIFW_RPATH MINIFW_RPATH "")
  minifw_env(MINIFW_CORE_WEIGHT MINIFW_CORE_WEIGHT "${MINIFW_CORE_DEFAULT_WEIGHT}")
  if(NOT MINIFW_ACCELERATOR MATCHES "^(cpu|cuda|rocm|xpu)$")
    message(FATAL_ERROR "MINIFW_ACCELERATOR='${MINIFW_ACCELERATOR}' is unknown; "
                        "expected one of: cpu, cuda, rocm, xpu.")
  endif()
  if(NOT MINIFW_CORE_WEIGHT MATCHES "^[1-9][0-9]*$"
     OR MINIFW_CORE_WEIGHT GREATER MINIFW_CORE_MAX_WEIGHT)
    message(FATAL_ERROR "MINIFW_CORE_WEIGHT='${MINIFW_CORE_WEIGHT}' is not an integer from 1 to "
                        "${MINIFW_CORE_MAX_WEIGHT} (the number of GEMM variants to compile).")
  endif()
  if(MINIFW_TOOLKIT_ROOT AND NOT MINIFW_ACCELERATOR STREQUAL "cpu")
    cmake_path(ABSOLUTE_PATH MINIFW_TOOLKIT_ROOT NORMALIZE)
    string(REGEX REPLACE "/$" "" MINIFW_TOOLKIT_ROOT "${MINIFW_TOOLKIT_ROOT}")
    if(NOT IS_DIRECTORY "${MINIFW_TOOLKIT_ROOT}")
      message(FATAL_ERROR "MINIFW_TOOLKIT_ROOT='${MINIFW_TOOLKIT_ROOT}' is not a directory.")
    endif()
  endif()
  if(NOT MINIFW_ACCELERATOR STREQUAL "cpu" AND NOT CMAKE_SYSTEM_NAME STREQUAL "Linux")
    message(FATAL_ERROR
      "MINIFW_ACCELERATOR=${MINIFW_ACCELERATOR} is only wired for Linux (the runtime "
      "libraries come from pip wheels and are found through the RUNPATH); "
      "${CMAKE_SYSTEM_NAME} builds support MINIFW_ACCELERATOR=cpu only.")
  endif()
  set(MINIFW_SETTINGS_READ TRUE)
endmacro()
