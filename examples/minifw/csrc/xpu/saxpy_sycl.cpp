// XPU (SYCL) backend of minifw, built by icpx -fsycl into libminifw_sycl.so
// (see cmake/MinifwXpu.cmake).  Implements csrc/accel.h.
#include <sycl/sycl.hpp>

#include <cstddef>
#include <cstdio>
#include <exception>
#include <vector>

#include "accel.h"

#define MINIFW_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

void set_error(char* err, std::size_t errlen, const char* what, const char* msg) {
  if (err != nullptr && errlen > 0) std::snprintf(err, errlen, "%s: %s", what, msg);
}

std::vector<sycl::device> gpu_devices() {
  std::vector<sycl::device> out;
  for (const auto& platform : sycl::platform::get_platforms()) {
    for (const auto& dev : platform.get_devices(sycl::info::device_type::gpu)) {
      out.push_back(dev);
    }
  }
  return out;
}

}  // namespace

MINIFW_EXPORT const char* minifw_accel_name(void) { return "xpu"; }

MINIFW_EXPORT int minifw_accel_runtime_version(int* version, char*, std::size_t) {
  // SYCL has no single integer runtime version; the compiler macro is the
  // closest equivalent (e.g. 20250100 for oneAPI 2025.1).
#ifdef __INTEL_LLVM_COMPILER
  *version = __INTEL_LLVM_COMPILER;
#else
  *version = 0;
#endif
  return 0;
}

MINIFW_EXPORT int minifw_accel_device_count(int* count, char* err, std::size_t errlen) {
  *count = 0;
  try {
    *count = static_cast<int>(gpu_devices().size());
    return 0;
  } catch (const std::exception& e) {
    set_error(err, errlen, "sycl device query", e.what());
    return 1;
  }
}

MINIFW_EXPORT int minifw_accel_saxpy(double a, const double* x, const double* y, double* out,
                                     std::size_t n, char* err, std::size_t errlen) {
  if (n == 0) return 0;
  try {
    auto devices = gpu_devices();
    if (devices.empty()) {
      set_error(err, errlen, "sycl", "no GPU device");
      return 1;
    }
    if (!devices.front().has(sycl::aspect::fp64)) {
      set_error(err, errlen, "sycl", "device 0 has no fp64 support");
      return 1;
    }
    sycl::queue q{devices.front(), sycl::property::queue::in_order{}};
    double* dx = sycl::malloc_device<double>(n, q);
    double* dy = sycl::malloc_device<double>(n, q);
    double* dout = sycl::malloc_device<double>(n, q);
    if (dx == nullptr || dy == nullptr || dout == nullptr) {
      sycl::free(dx, q);
      sycl::free(dy, q);
      sycl::free(dout, q);
      set_error(err, errlen, "sycl::malloc_device", "out of device memory");
      return 1;
    }
    q.memcpy(dx, x, n * sizeof(double));
    q.memcpy(dy, y, n * sizeof(double));
    q.parallel_for(sycl::range<1>{n}, [=](sycl::id<1> i) { dout[i] = a * dx[i] + dy[i]; });
    q.memcpy(out, dout, n * sizeof(double)).wait_and_throw();
    sycl::free(dx, q);
    sycl::free(dy, q);
    sycl::free(dout, q);
    return 0;
  } catch (const std::exception& e) {
    set_error(err, errlen, "sycl saxpy", e.what());
    return 1;
  }
}
