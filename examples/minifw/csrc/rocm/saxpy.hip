// ROCm/HIP backend of minifw (compiled by hipcc, see cmake/MinifwRocm.cmake).
// Implements csrc/accel.h on top of the shared HIP runtime (libamdhip64.so).
#include <hip/hip_runtime.h>

#include <cstddef>
#include <cstdio>

#include "accel.h"

// A named namespace, not an anonymous one: the device compiler mangles
// anonymous namespaces with a hash of the source file's absolute path, which
// would make the binary depend on where the source tree was checked out.
namespace minifw_rocm {

template <typename T>
__global__ void saxpy_kernel(std::size_t n, T a, const T* __restrict__ x,
                             const T* __restrict__ y, T* __restrict__ out) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = a * x[i] + y[i];
  }
}

void set_error(char* err, std::size_t errlen, const char* what, hipError_t e) {
  if (err != nullptr && errlen > 0) {
    std::snprintf(err, errlen, "%s: %s (%s)", what, hipGetErrorString(e), hipGetErrorName(e));
  }
}

struct DeviceBuffer {
  void* ptr = nullptr;
  ~DeviceBuffer() {
    if (ptr != nullptr) (void)hipFree(ptr);
  }
};

}  // namespace minifw_rocm

using minifw_rocm::DeviceBuffer;
using minifw_rocm::saxpy_kernel;
using minifw_rocm::set_error;

extern "C" {

const char* minifw_accel_name(void) { return "rocm"; }

int minifw_accel_runtime_version(int* version, char* err, std::size_t errlen) {
  hipError_t e = hipRuntimeGetVersion(version);
  if (e != hipSuccess) {
    set_error(err, errlen, "hipRuntimeGetVersion", e);
    return 1;
  }
  return 0;
}

int minifw_accel_device_count(int* count, char* err, std::size_t errlen) {
  *count = 0;
  hipError_t e = hipGetDeviceCount(count);
  if (e != hipSuccess) {
    *count = 0;
    set_error(err, errlen, "hipGetDeviceCount", e);
    (void)hipGetLastError();
    return 1;
  }
  return 0;
}

int minifw_accel_saxpy(double a, const double* x, const double* y, double* out, std::size_t n,
                       char* err, std::size_t errlen) {
  if (n == 0) return 0;
  const std::size_t bytes = n * sizeof(double);
  DeviceBuffer dx, dy, dout;
  hipError_t e;
  if ((e = hipMalloc(&dx.ptr, bytes)) != hipSuccess ||
      (e = hipMalloc(&dy.ptr, bytes)) != hipSuccess ||
      (e = hipMalloc(&dout.ptr, bytes)) != hipSuccess) {
    set_error(err, errlen, "hipMalloc", e);
    return 1;
  }
  if ((e = hipMemcpy(dx.ptr, x, bytes, hipMemcpyHostToDevice)) != hipSuccess ||
      (e = hipMemcpy(dy.ptr, y, bytes, hipMemcpyHostToDevice)) != hipSuccess) {
    set_error(err, errlen, "hipMemcpy H2D", e);
    return 1;
  }
  constexpr unsigned threads = 256;
  const std::size_t wanted = (n + threads - 1) / threads;
  const unsigned blocks = static_cast<unsigned>(wanted < 65535 ? wanted : 65535);
  hipLaunchKernelGGL(saxpy_kernel<double>, dim3(blocks), dim3(threads), 0, 0, n, a,
                     static_cast<const double*>(dx.ptr), static_cast<const double*>(dy.ptr),
                     static_cast<double*>(dout.ptr));
  if ((e = hipGetLastError()) != hipSuccess) {
    set_error(err, errlen, "saxpy_kernel launch", e);
    return 1;
  }
  if ((e = hipMemcpy(out, dout.ptr, bytes, hipMemcpyDeviceToHost)) != hipSuccess) {
    set_error(err, errlen, "hipMemcpy D2H", e);
    return 1;
  }
  return 0;
}

}  // extern "C"
