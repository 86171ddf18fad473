// (Part of ops.cu.) The GPU runtime queries of src/accel.h: answered by the runtime library itself, so they
// work without a device (cudaRuntimeGetVersion: 13020 for CUDA 13.2).
#include "gpu/gpu.hpp"

using minifw_gpu::check;
using minifw_gpu::finish;
namespace rt = minifw_gpu::rt;

extern "C" {

const char* minifw_accel_name(void) { return rt::kName; }

int minifw_accel_runtime_version(int* version, char* err, std::size_t errlen) {
  return finish(check("runtime version", rt::runtime_version(version)), err, errlen);
}

int minifw_accel_device_count(int* count, char* err, std::size_t errlen) {
  *count = 0;
  const int rc = finish(check("device count", rt::device_count(count)), err, errlen);
  if (rc != 0) *count = 0;  // no driver or no device: 0, never a crash
  return rc;
}

int minifw_accel_gemm_variants(void) { return MINIFW_CORE_WEIGHT; }

}  // extern "C"
