// SYCL device discovery and the runtime queries of src/accel.h.
#include "xpu/xpu.hpp"

namespace minifw_xpu {

std::vector<sycl::device> gpu_devices() {
  std::vector<sycl::device> out;
  for (const auto& platform : sycl::platform::get_platforms()) {
    for (const auto& dev : platform.get_devices(sycl::info::device_type::gpu)) out.push_back(dev);
  }
  return out;
}

sycl::queue gpu_queue(bool needs_fp64) {
  auto devices = gpu_devices();
  if (devices.empty()) throw std::runtime_error("no GPU device");
  if (needs_fp64 && !devices.front().has(sycl::aspect::fp64)) {
    throw std::runtime_error("device 0 has no fp64 support");
  }
  return sycl::queue{devices.front(), sycl::property::queue::in_order{}};
}

}  // namespace minifw_xpu

MINIFW_EXPORT const char* minifw_accel_name(void) { return "xpu"; }

MINIFW_EXPORT int minifw_accel_runtime_version(int* version, char*, std::size_t) {
  // SYCL has no single integer runtime version; the compiler's (e.g. 20260100 for oneAPI
  // 2026.1) is the closest equivalent.
#ifdef __INTEL_LLVM_COMPILER
  *version = __INTEL_LLVM_COMPILER;
#else
  *version = 0;
#endif
  return 0;
}

MINIFW_EXPORT int minifw_accel_device_count(int* count, char* err, std::size_t errlen) {
  *count = 0;
  return minifw_xpu::guarded("sycl device query", err, errlen,
                             [&] { *count = static_cast<int>(minifw_xpu::gpu_devices().size()); });
}

MINIFW_EXPORT int minifw_accel_gemm_variants(void) { return MINIFW_CORE_WEIGHT; }
