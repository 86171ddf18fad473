// Shared by every GPU source of minifw_core: the same .cu files are compiled by nvcc (CUDA,
// CMake's CUDA language) and by hipcc -x hip (ROCm), so the runtime calls go through the thin
// `rt` layer below, chosen by the compiler (__HIPCC__). Host-side errors never throw: each C
// entry point (src/accel.h) turns a Status into a message and a non-zero return.
//
// Named namespaces only: device compilers mangle anonymous namespaces with a hash of the
// source path, which would make the binary depend on where the tree was checked out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <type_traits>

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif

#include "accel.h"
#include "common/gemm_config.hpp"

namespace minifw_gpu {
namespace rt {
#if defined(__HIPCC__)
using Error = hipError_t;
inline constexpr Error kSuccess = hipSuccess;
inline constexpr Error kInvalidValue = hipErrorInvalidValue;
inline constexpr const char* kName = "rocm";
inline Error malloc(void** p, std::size_t n) { return hipMalloc(p, n); }
inline Error free(void* p) { return hipFree(p); }
inline Error to_device(void* d, const void* h, std::size_t n) { return hipMemcpy(d, h, n, hipMemcpyHostToDevice); }
inline Error to_host(void* h, const void* d, std::size_t n) { return hipMemcpy(h, d, n, hipMemcpyDeviceToHost); }
inline Error last_error() { return hipGetLastError(); }
inline Error synchronize() { return hipDeviceSynchronize(); }
inline Error runtime_version(int* v) { return hipRuntimeGetVersion(v); }
inline Error device_count(int* c) { return hipGetDeviceCount(c); }
inline const char* error_string(Error e) { return hipGetErrorString(e); }
inline const char* error_name(Error e) { return hipGetErrorName(e); }
#else
using Error = cudaError_t;
inline constexpr Error kSuccess = cudaSuccess;
inline constexpr Error kInvalidValue = cudaErrorInvalidValue;
inline constexpr const char* kName = "cuda";
inline Error malloc(void** p, std::size_t n) { return cudaMalloc(p, n); }
inline Error free(void* p) { return cudaFree(p); }
inline Error to_device(void* d, const void* h, std::size_t n) { return cudaMemcpy(d, h, n, cudaMemcpyHostToDevice); }
inline Error to_host(void* h, const void* d, std::size_t n) { return cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost); }
inline Error last_error() { return cudaGetLastError(); }
inline Error synchronize() { return cudaDeviceSynchronize(); }
inline Error runtime_version(int* v) { return cudaRuntimeGetVersion(v); }
inline Error device_count(int* c) { return cudaGetDeviceCount(c); }
inline const char* error_string(Error e) { return cudaGetErrorString(e); }
inline const char* error_name(Error e) { return cudaGetErrorName(e); }
#endif
}  // namespace rt

// Which step failed, and how (code == kSuccess: it did not).
struct Status {
  const char* step = nullptr;
  rt::Error code = rt::kSuccess;
  bool ok() const { return code == rt::kSuccess; }
};

inline Status check(const char* step, rt::Error code) { return Status{step, code}; }

// The C ABI's convention: 0, or 1 with "step: message (name)" in err.
inline int finish(Status s, char* err, std::size_t errlen) {
  if (s.ok()) return 0;
  if (err != nullptr && errlen > 0) {
    std::snprintf(err, errlen, "%s: %s (%s)", s.step, rt::error_string(s.code), rt::error_name(s.code));
  }
  (void)rt::last_error();  // clear a non-sticky error
  return 1;
}

// Device memory freed on scope exit.
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (ptr_ != nullptr) (void)rt::free(ptr_);
  }
  Status alloc(std::size_t bytes) { return bytes == 0 ? Status{} : check("device malloc", rt::malloc(&ptr_, bytes)); }
  // alloc + copy from the host.
  Status upload(const void* host, std::size_t bytes) {
    Status s = alloc(bytes);
    if (!s.ok() || bytes == 0) return s;
    return check("copy to device", rt::to_device(ptr_, host, bytes));
  }
  Status download(void* host, std::size_t bytes) const {
    return bytes == 0 ? Status{} : check("copy to host", rt::to_host(host, ptr_, bytes));
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
};

// After a launch: the launch error, then the kernel's own.
inline Status launched(const char* kernel) {
  Status s = check(kernel, rt::last_error());
  return s.ok() ? check(kernel, rt::synchronize()) : s;
}

// by_dtype(dtype, [&]<typename T>() -> Status {...}) with the numbering of minifw::core::DType.
template <typename F>
Status by_dtype(int dtype, F&& f) {
  switch (dtype) {
    case 0:
      return f.template operator()<float>();
    case 1:
      return f.template operator()<double>();
    case 2:
      return f.template operator()<std::int32_t>();
    case 3:
      return f.template operator()<std::int64_t>();
    default:
      return Status{"dtype", rt::kInvalidValue};
  }
}

template <typename T>
using Acc = typename minifw_gemm::acc_of<T>::type;

// Blocks for a grid-stride loop over n elements.
inline unsigned blocks_for(std::size_t n, unsigned threads) {
  const std::size_t wanted = (n + threads - 1) / threads;
  return static_cast<unsigned>(wanted < 65535 ? (wanted == 0 ? 1 : wanted) : 65535);
}

__device__ inline std::size_t global_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::size_t grid_stride() { return static_cast<std::size_t>(blockDim.x) * gridDim.x; }

// Math by precision (the device libraries name the float versions with an f).
__device__ inline float d_exp(float v) { return expf(v); }
__device__ inline double d_exp(double v) { return exp(v); }
__device__ inline float d_log(float v) { return logf(v); }
__device__ inline double d_log(double v) { return log(v); }
__device__ inline float d_sqrt(float v) { return sqrtf(v); }
__device__ inline double d_sqrt(double v) { return sqrt(v); }
__device__ inline float d_tanh(float v) { return tanhf(v); }
__device__ inline double d_tanh(double v) { return tanh(v); }
__device__ inline float d_erf(float v) { return erff(v); }
__device__ inline double d_erf(double v) { return erf(v); }

}  // namespace minifw_gpu
