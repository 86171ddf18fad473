/* The C ABI between minifw_core's host code (the C++ compiler) and its accelerator backend
 * (src/gpu/ through nvcc or hipcc, src/xpu/ through icpx -fsycl into libminifw_sycl.so).
 * Plain C so that objects of different compilers, and a separate DSO, link together safely.
 *
 * Pointers are host memory: each call copies to the device, runs and copies back. Integer
 * arguments `op` and `dtype` carry the numeric values of minifw::core's UnaryOp, BinaryOp,
 * ReduceOp and DType. Every function returns 0 on success; on failure it returns non-zero and
 * writes a NUL-terminated message into err[errlen]. None of them throws or aborts, whether or
 * not a driver or a device is present. */
#ifndef MINIFW_CORE_ACCEL_H
#define MINIFW_CORE_ACCEL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct minifw_conv2d_shape {
  size_t n, c, h, w;     /* input, NCHW */
  size_t o, kh, kw;      /* weight, OIHW (I == c) */
  size_t stride, padding;
  size_t oh, ow;         /* output spatial size */
} minifw_conv2d_shape;

/* "cuda", "rocm" or "xpu". */
const char *minifw_accel_name(void);
/* cudaRuntimeGetVersion (13020 for CUDA 13.2), hipRuntimeGetVersion; SYCL: the compiler's. */
int minifw_accel_runtime_version(int *version, char *err, size_t errlen);
/* Number of usable devices; non-zero (count 0) with a message without driver or device. */
int minifw_accel_device_count(int *count, char *err, size_t errlen);
/* The number of GEMM variants compiled into the backend (MINIFW_CORE_WEIGHT). */
int minifw_accel_gemm_variants(void);

int minifw_accel_saxpy(int dtype, double a, const void *x, const void *y, void *out, size_t n,
                       char *err, size_t errlen);
int minifw_accel_unary(int op, int dtype, const void *x, void *out, size_t n, char *err,
                       size_t errlen);
int minifw_accel_binary(int op, int dtype, const void *x, const void *y, void *out, size_t n,
                        char *err, size_t errlen);
/* Row-wise over a rows x cols matrix: out has rows elements. */
int minifw_accel_reduce(int op, int dtype, const void *x, void *out, size_t rows, size_t cols,
                        char *err, size_t errlen);
int minifw_accel_softmax(int log, int dtype, const void *x, void *out, size_t rows, size_t cols,
                         char *err, size_t errlen);
int minifw_accel_matmul(int variant, int dtype, const void *a, const void *b, void *c, size_t m,
                        size_t k, size_t n, char *err, size_t errlen);
int minifw_accel_conv2d(int variant, int dtype, const void *x, const void *w, void *y,
                        const minifw_conv2d_shape *shape, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* MINIFW_CORE_ACCEL_H */
