// CUDA backend of minifw (compiled by nvcc, see cmake/MinifwCuda.cmake).
// Implements csrc/accel.h on top of the shared CUDA runtime (libcudart.so.13).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>

#include "accel.h"

// A named namespace, not an anonymous one: the device compiler mangles
// anonymous namespaces with a hash of the source file's absolute path, which
// would make the binary depend on where the source tree was checked out.
namespace minifw_cuda {

template <typename T>
__global__ void saxpy_kernel(std::size_t n, T a, const T* __restrict__ x,
                             const T* __restrict__ y, T* __restrict__ out) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = a * x[i] + y[i];
  }
}

void set_error(char* err, std::size_t errlen, const char* what, cudaError_t e) {
  if (err != nullptr && errlen > 0) {
    std::snprintf(err, errlen, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
  }
}

// Device buffer freed on scope exit.
struct DeviceBuffer {
  void* ptr = nullptr;
  ~DeviceBuffer() {
    if (ptr != nullptr) cudaFree(ptr);
  }
};

}  // namespace minifw_cuda

using minifw_cuda::DeviceBuffer;
using minifw_cuda::saxpy_kernel;
using minifw_cuda::set_error;

extern "C" {

const char* minifw_accel_name(void) { return "cuda"; }

int minifw_accel_runtime_version(int* version, char* err, std::size_t errlen) {
  // Needs no driver and no device: answered by libcudart itself.
  cudaError_t e = cudaRuntimeGetVersion(version);
  if (e != cudaSuccess) {
    set_error(err, errlen, "cudaRuntimeGetVersion", e);
    return 1;
  }
  return 0;
}

int minifw_accel_device_count(int* count, char* err, std::size_t errlen) {
  *count = 0;
  cudaError_t e = cudaGetDeviceCount(count);
  if (e != cudaSuccess) {
    // cudaErrorNoDevice / cudaErrorInsufficientDriver on machines without a
    // GPU or driver: report 0 devices, never crash.
    *count = 0;
    set_error(err, errlen, "cudaGetDeviceCount", e);
    cudaGetLastError();  // clear the (non-sticky) error
    return 1;
  }
  return 0;
}

int minifw_accel_saxpy(double a, const double* x, const double* y, double* out, std::size_t n,
                       char* err, std::size_t errlen) {
  if (n == 0) return 0;
  const std::size_t bytes = n * sizeof(double);
  DeviceBuffer dx, dy, dout;
  cudaError_t e;
  if ((e = cudaMalloc(&dx.ptr, bytes)) != cudaSuccess ||
      (e = cudaMalloc(&dy.ptr, bytes)) != cudaSuccess ||
      (e = cudaMalloc(&dout.ptr, bytes)) != cudaSuccess) {
    set_error(err, errlen, "cudaMalloc", e);
    return 1;
  }
  if ((e = cudaMemcpy(dx.ptr, x, bytes, cudaMemcpyHostToDevice)) != cudaSuccess ||
      (e = cudaMemcpy(dy.ptr, y, bytes, cudaMemcpyHostToDevice)) != cudaSuccess) {
    set_error(err, errlen, "cudaMemcpy H2D", e);
    return 1;
  }
  constexpr unsigned threads = 256;
  const std::size_t wanted = (n + threads - 1) / threads;
  const unsigned blocks = static_cast<unsigned>(wanted < 65535 ? wanted : 65535);
  saxpy_kernel<double><<<blocks, threads>>>(n, a, static_cast<const double*>(dx.ptr),
                                            static_cast<const double*>(dy.ptr),
                                            static_cast<double*>(dout.ptr));
  if ((e = cudaGetLastError()) != cudaSuccess) {
    set_error(err, errlen, "saxpy_kernel launch", e);
    return 1;
  }
  if ((e = cudaMemcpy(out, dout.ptr, bytes, cudaMemcpyDeviceToHost)) != cudaSuccess) {
    set_error(err, errlen, "cudaMemcpy D2H", e);
    return 1;
  }
  return 0;
}

}  // extern "C"
