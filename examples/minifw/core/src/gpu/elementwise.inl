// (Part of ops.cu.) GPU elementwise kernels (grid-stride loops), one per dtype with the op chosen at run time.
#include "gpu/gpu.hpp"

namespace minifw_gpu {

template <typename T>
__device__ T neg(T v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(Acc<T>{0} - static_cast<Acc<T>>(v));
  } else {
    return -v;
  }
}

// The numbering of minifw::core::UnaryOp.
template <typename T>
__device__ T unary_op(int op, T v) {
  switch (op) {
    case 0:
      return neg(v);
    case 1:
      return v < T(0) ? neg(v) : v;
    case 2:
      return static_cast<T>(Acc<T>(v) * Acc<T>(v));
    case 3:
      return v > T(0) ? v : T(0);
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case 4:
        return d_exp(v);
      case 5:
        return d_log(v);
      case 6:
        return d_sqrt(v);
      case 7:
        return d_tanh(v);
      case 8:
        return T(1) / (T(1) + d_exp(-v));
      case 9:
        return T(0.5) * v * (T(1) + d_erf(v * T(0.70710678118654752440)));
      default:
        break;
    }
  }
  return v;
}

// The numbering of minifw::core::BinaryOp.
template <typename T>
__device__ T binary_op(int op, T a, T b) {
  switch (op) {
    case 0:
      return static_cast<T>(Acc<T>(a) + Acc<T>(b));
    case 1:
      return static_cast<T>(Acc<T>(a) - Acc<T>(b));
    case 2:
      return static_cast<T>(Acc<T>(a) * Acc<T>(b));
    case 3:
      if constexpr (std::is_integral_v<T>) {
        return b == T(-1) ? neg(a) : static_cast<T>(a / b);  // b != 0: checked on the host
      } else {
        return a / b;
      }
    case 4:
      return a > b ? a : b;
    default:
      return a < b ? a : b;
  }
}

template <typename T>
__global__ void unary_kernel(int op, const T* __restrict__ x, T* __restrict__ out, std::size_t n) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) out[i] = unary_op(op, x[i]);
}

template <typename T>
__global__ void binary_kernel(int op, const T* __restrict__ x, const T* __restrict__ y,
                              T* __restrict__ out, std::size_t n) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) out[i] = binary_op(op, x[i], y[i]);
}

template <typename T>
__global__ void saxpy_kernel(T a, const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ out,
                             std::size_t n) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) out[i] = a * x[i] + y[i];
}

constexpr unsigned kThreads = 256;

// Uploads `inputs`, runs `launch(device pointers..., out)`, downloads the result.
template <typename T, typename Launch>
Status run(std::size_t n, void* out, Launch launch, const void* x, const void* y = nullptr) {
  const std::size_t bytes = n * sizeof(T);
  if (n == 0) return Status{};
  Buffer dx, dy, dout;
  Status s = dx.upload(x, bytes);
  if (s.ok() && y != nullptr) s = dy.upload(y, bytes);
  if (s.ok()) s = dout.alloc(bytes);
  if (!s.ok()) return s;
  launch(dx.as<const T>(), dy.as<const T>(), dout.as<T>(), blocks_for(n, kThreads));
  s = launched("elementwise kernel");
  return s.ok() ? dout.download(out, bytes) : s;
}

}  // namespace minifw_gpu

using minifw_gpu::by_dtype;
using minifw_gpu::finish;
using minifw_gpu::kThreads;
using minifw_gpu::Status;

extern "C" {

int minifw_accel_unary(int op, int dtype, const void* x, void* out, std::size_t n, char* err,
                       std::size_t errlen) {
  return finish(by_dtype(dtype, [&]<typename T>() {
                  return minifw_gpu::run<T>(n, out, [&](const T* dx, const T*, T* dout, unsigned blocks) {
                    minifw_gpu::unary_kernel<T><<<blocks, kThreads>>>(op, dx, dout, n);
                  }, x);
                }), err, errlen);
}

int minifw_accel_binary(int op, int dtype, const void* x, const void* y, void* out, std::size_t n,
                        char* err, std::size_t errlen) {
  return finish(by_dtype(dtype, [&]<typename T>() {
                  return minifw_gpu::run<T>(n, out, [&](const T* dx, const T* dy, T* dout, unsigned blocks) {
                    minifw_gpu::binary_kernel<T><<<blocks, kThreads>>>(op, dx, dy, dout, n);
                  }, x, y);
                }), err, errlen);
}

int minifw_accel_saxpy(int dtype, double a, const void* x, const void* y, void* out, std::size_t n,
                       char* err, std::size_t errlen) {
  return finish(by_dtype(dtype, [&]<typename T>() -> Status {
                  if constexpr (std::is_floating_point_v<T>) {
                    return minifw_gpu::run<T>(n, out, [&](const T* dx, const T* dy, T* dout, unsigned blocks) {
                      minifw_gpu::saxpy_kernel<T><<<blocks, kThreads>>>(static_cast<T>(a), dx, dy, dout, n);
                    }, x, y);
                  } else {
                    return Status{"saxpy of an integer dtype", minifw_gpu::rt::kInvalidValue};
                  }
                }), err, errlen);
}

}  // extern "C"
