/* The tiny C ABI between the extension (csrc/module.cpp, host compiler) and
 * an accelerator backend (csrc/cuda/saxpy.cu via nvcc, csrc/rocm/saxpy.hip
 * via hipcc, csrc/xpu/saxpy_sycl.cpp via icpx -fsycl).  Plain C so that the
 * objects of different compilers link together safely.
 *
 * Every function returns 0 on success; on failure it returns non-zero and
 * writes a NUL-terminated message into err[errlen].  None of them throws or
 * aborts, whether or not a device or a driver is present. */
#ifndef MINIFW_ACCEL_H
#define MINIFW_ACCEL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Name of the backend ("cuda", "rocm", "xpu"). */
const char *minifw_accel_name(void);

/* Version of the runtime library actually loaded (cudaRuntimeGetVersion:
 * 13020 for CUDA 13.2; hipRuntimeGetVersion; SYCL: 0). */
int minifw_accel_runtime_version(int *version, char *err, size_t errlen);

/* Number of usable devices; 0 with an error message when there is no
 * driver or no device. */
int minifw_accel_device_count(int *count, char *err, size_t errlen);

/* out[i] = a * x[i] + y[i] on device 0 (n may be 0). */
int minifw_accel_saxpy(double a, const double *x, const double *y, double *out,
                       size_t n, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* MINIFW_ACCEL_H */
