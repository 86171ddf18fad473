# CUDA for minifw_core through CMake's CUDA language, so that CMAKE_CUDA_COMPILER_LAUNCHER
# (e.g. ccache, from the environment) applies to nvcc like CMAKE_CXX_COMPILER_LAUNCHER to the
# C++ compiler. The toolkit is MINIFW_TOOLKIT_ROOT's (the pip wheels' nvidia/cu13 layout works:
# nvcc.profile finds cicc and ptxas), never one found on the system. What CMake would otherwise
# decide is set here: -gencode flags from MINIFW_GPU_ARCHS (not CMAKE_CUDA_ARCHITECTURES, which
# has no spelling for "12.0+PTX" in every CMake), C++20 (CMake 3.25 does not know that nvcc
# >= 12 has it, so it is told the flag), and no CUDA runtime library of CMake's choosing: the shared
# libcudart.so.<major> is linked by path (minifw::runtime, MinifwToolkits.cmake).
# Included at file scope (enable_language may not be called from a function).
minifw_tool(MINIFW_NVCC nvcc)
set(CMAKE_CUDA_COMPILER "${MINIFW_NVCC}")
set(CMAKE_CUDA_HOST_COMPILER "${CMAKE_CXX_COMPILER}")
set(CMAKE_CUDA_ARCHITECTURES OFF)
set(CMAKE_CUDA_RUNTIME_LIBRARY None)
enable_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA")
  message(FATAL_ERROR "${MINIFW_NVCC} is ${CMAKE_CUDA_COMPILER_ID}, not NVIDIA's nvcc.")
endif()
if(NOT "cuda_std_20" IN_LIST CMAKE_CUDA_COMPILE_FEATURES)
  if(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 12.0)
    message(FATAL_ERROR "minifw needs C++20 device code: nvcc >= 12.0, not ${CMAKE_CUDA_COMPILER_VERSION}.")
  endif()
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
  list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
endif()
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_EXTENSIONS OFF)
minifw_cuda_gencode_flags(MINIFW_CUDA_GENCODE "${MINIFW_GPU_ARCHS}")
message(STATUS "minifw_core: nvcc ${CMAKE_CUDA_COMPILER_VERSION} launcher='${CMAKE_CUDA_COMPILER_LAUNCHER}' "
               "${MINIFW_CUDA_GENCODE}")
