// SYCL elementwise ops, row reductions and softmax (one work-item per element or per row).
#include <cmath>

#include "xpu/xpu.hpp"

namespace minifw_xpu {
namespace {

template <typename T>
T neg(T v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(Acc<T>{0} - static_cast<Acc<T>>(v));
  } else {
    return -v;
  }
}

// The numbering of minifw::core::UnaryOp.
template <typename T>
T unary_op(int op, T v) {
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
        return sycl::exp(v);
      case 5:
        return sycl::log(v);
      case 6:
        return sycl::sqrt(v);
      case 7:
        return sycl::tanh(v);
      case 8:
        return T(1) / (T(1) + sycl::exp(-v));
      case 9:
        return T(0.5) * v * (T(1) + sycl::erf(v * T(0.70710678118654752440)));
      default:
        break;
    }
  }
  return v;
}

// The numbering of minifw::core::BinaryOp.
template <typename T>
T binary_op(int op, T a, T b) {
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

// The numbering of minifw::core::ReduceOp: sum, prod, max, min, mean, norm2.
template <typename T>
T reduce_row(int op, const T* row, std::size_t cols) {
  using A = Acc<T>;
  A acc = op == 1 ? A(1) : (op == 2 || op == 3) ? A(row[0]) : A(0);
  for (std::size_t c = 0; c < cols; ++c) {
    const A v = A(row[c]);
    if (op == 1) {
      acc *= v;
    } else if (op == 2) {
      acc = v > acc ? v : acc;
    } else if (op == 3) {
      acc = v < acc ? v : acc;
    } else {
      acc += op == 5 ? v * v : v;
    }
  }
  if constexpr (std::is_floating_point_v<T>) {
    return op == 4 ? acc / T(cols) : op == 5 ? sycl::sqrt(acc) : acc;
  } else {
    return static_cast<T>(acc);
  }
}

template <typename T>
void softmax_row(int log, const T* row, T* out, std::size_t cols) {
  T top = row[0];
  for (std::size_t c = 1; c < cols; ++c) top = row[c] > top ? row[c] : top;
  T total = 0;
  for (std::size_t c = 0; c < cols; ++c) total += sycl::exp(row[c] - top);
  const T log_total = sycl::log(total);
  for (std::size_t c = 0; c < cols; ++c) out[c] = log ? row[c] - top - log_total : sycl::exp(row[c] - top) / total;
}

}  // namespace
}  // namespace minifw_xpu

using minifw_xpu::by_dtype;
using minifw_xpu::DeviceArray;
using minifw_xpu::guarded;

MINIFW_EXPORT int minifw_accel_unary(int op, int dtype, const void* x, void* out, std::size_t n, char* err,
                                     std::size_t errlen) {
  return guarded("sycl unary", err, errlen, [&] {
    by_dtype(dtype, [&]<typename T>() {
      if (n == 0) return;
      sycl::queue q = minifw_xpu::gpu_queue(sizeof(T) == 8);
      DeviceArray<T> dx(q, x, n), dout(q, n);
      const T* px = dx.get();
      T* po = dout.get();
      q.parallel_for(sycl::range<1>{n}, [=](sycl::id<1> i) { po[i] = minifw_xpu::unary_op(op, px[i]); });
      dout.download(out);
    });
  });
}

MINIFW_EXPORT int minifw_accel_binary(int op, int dtype, const void* x, const void* y, void* out, std::size_t n,
                                      char* err, std::size_t errlen) {
  return guarded("sycl binary", err, errlen, [&] {
    by_dtype(dtype, [&]<typename T>() {
      if (n == 0) return;
      sycl::queue q = minifw_xpu::gpu_queue(sizeof(T) == 8);
      DeviceArray<T> dx(q, x, n), dy(q, y, n), dout(q, n);
      const T* px = dx.get();
      const T* py = dy.get();
      T* po = dout.get();
      q.parallel_for(sycl::range<1>{n}, [=](sycl::id<1> i) { po[i] = minifw_xpu::binary_op(op, px[i], py[i]); });
      dout.download(out);
    });
  });
}

MINIFW_EXPORT int minifw_accel_saxpy(int dtype, double a, const void* x, const void* y, void* out, std::size_t n,
                                     char* err, std::size_t errlen) {
  return guarded("sycl saxpy", err, errlen, [&] {
    by_dtype(dtype, [&]<typename T>() {
      if constexpr (!std::is_floating_point_v<T>) {
        throw std::invalid_argument("saxpy of an integer dtype");
      } else {
        if (n == 0) return;
        sycl::queue q = minifw_xpu::gpu_queue(sizeof(T) == 8);
        DeviceArray<T> dx(q, x, n), dy(q, y, n), dout(q, n);
        const T* px = dx.get();
        const T* py = dy.get();
        T* po = dout.get();
        const T s = static_cast<T>(a);
        q.parallel_for(sycl::range<1>{n}, [=](sycl::id<1> i) { po[i] = s * px[i] + py[i]; });
        dout.download(out);
      }
    });
  });
}

MINIFW_EXPORT int minifw_accel_reduce(int op, int dtype, const void* x, void* out, std::size_t rows,
                                      std::size_t cols, char* err, std::size_t errlen) {
  return guarded("sycl reduce", err, errlen, [&] {
    by_dtype(dtype, [&]<typename T>() {
      if (rows == 0) return;
      sycl::queue q = minifw_xpu::gpu_queue(sizeof(T) == 8);
      DeviceArray<T> dx(q, x, rows * cols), dout(q, rows);
      const T* px = dx.get();
      T* po = dout.get();
      q.parallel_for(sycl::range<1>{rows},
                     [=](sycl::id<1> r) { po[r] = minifw_xpu::reduce_row(op, px + r * cols, cols); });
      dout.download(out);
    });
  });
}

MINIFW_EXPORT int minifw_accel_softmax(int log, int dtype, const void* x, void* out, std::size_t rows,
                                       std::size_t cols, char* err, std::size_t errlen) {
  return guarded("sycl softmax", err, errlen, [&] {
    by_dtype(dtype, [&]<typename T>() {
      if constexpr (!std::is_floating_point_v<T>) {
        throw std::invalid_argument("softmax of an integer dtype");
      } else {
        if (rows == 0 || cols == 0) return;
        sycl::queue q = minifw_xpu::gpu_queue(sizeof(T) == 8);
        DeviceArray<T> dx(q, x, rows * cols), dout(q, rows * cols);
        const T* px = dx.get();
        T* po = dout.get();
        q.parallel_for(sycl::range<1>{rows}, [=](sycl::id<1> r) {
          minifw_xpu::softmax_row(log, px + r * cols, po + r * cols, cols);
        });
        dout.download(out);
      }
    });
  });
}
