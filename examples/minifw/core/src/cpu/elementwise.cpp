// CPU elementwise kernels: one loop per (op, dtype), written with C++20 ranges.
#include <algorithm>
#include <cmath>
#include <concepts>
#include <functional>
#include <numbers>
#include <span>
#include <type_traits>

#include "common/gemm_config.hpp"
#include "cpu/cpu.hpp"
#include "cpu/math.hpp"

namespace minifw::core::cpu {
namespace {

template <typename T>
using Acc = typename minifw_gemm::acc_of<T>::type;

template <typename T, typename F>
void map(const Tensor& x, Tensor& out, F f) {
  std::ranges::transform(x.data<T>(), out.data<T>().begin(), f);
}

template <typename T, typename F>
void zip(const Tensor& x, const Tensor& y, Tensor& out, F f) {
  std::ranges::transform(x.data<T>(), y.data<T>(), out.data<T>().begin(), f);
}

// Integer arithmetic wraps (computed unsigned), as on the device.
template <typename T>
T wrap_neg(T v) {
  if constexpr (std::integral<T>) {
    return static_cast<T>(Acc<T>{0} - static_cast<Acc<T>>(v));
  } else {
    return -v;
  }
}

template <std::floating_point T>
void unary_floating(UnaryOp op, const Tensor& x, Tensor& out) {
  switch (op) {
    case UnaryOp::exp:
      return map<T>(x, out, [](T v) { return cpu::exp(v); });
    case UnaryOp::log:
      return map<T>(x, out, [](T v) { return cpu::log(v); });
    case UnaryOp::sqrt:
      return map<T>(x, out, [](T v) { return std::sqrt(v); });
    case UnaryOp::tanh:
      return map<T>(x, out, [](T v) { return std::tanh(v); });
    case UnaryOp::sigmoid:
      return map<T>(x, out, [](T v) { return T(1) / (T(1) + cpu::exp(-v)); });
    case UnaryOp::gelu:
      return map<T>(x, out, [](T v) {
        return T(0.5) * v * (T(1) + std::erf(v / std::numbers::sqrt2_v<T>));
      });
    default:
      break;
  }
}

template <typename T>
void unary_typed(UnaryOp op, const Tensor& x, Tensor& out) {
  switch (op) {
    case UnaryOp::neg:
      return map<T>(x, out, [](T v) { return wrap_neg(v); });
    case UnaryOp::abs:
      return map<T>(x, out, [](T v) { return v < T(0) ? wrap_neg(v) : v; });
    case UnaryOp::square:
      return map<T>(x, out, [](T v) { return static_cast<T>(Acc<T>(v) * Acc<T>(v)); });
    case UnaryOp::relu:
      return map<T>(x, out, [](T v) { return v > T(0) ? v : T(0); });
    default:
      if constexpr (std::floating_point<T>) unary_floating<T>(op, x, out);
  }
}

template <typename T>
T divide(T a, T b) {
  if constexpr (std::integral<T>) {
    // ops.cpp refuses b == 0; b == -1 would overflow for the smallest value.
    return b == T(-1) ? wrap_neg(a) : static_cast<T>(a / b);
  } else {
    return a / b;
  }
}

template <typename T>
void binary_typed(BinaryOp op, const Tensor& x, const Tensor& y, Tensor& out) {
  using A = Acc<T>;
  switch (op) {
    case BinaryOp::add:
      return zip<T>(x, y, out, [](T a, T b) { return static_cast<T>(A(a) + A(b)); });
    case BinaryOp::sub:
      return zip<T>(x, y, out, [](T a, T b) { return static_cast<T>(A(a) - A(b)); });
    case BinaryOp::mul:
      return zip<T>(x, y, out, [](T a, T b) { return static_cast<T>(A(a) * A(b)); });
    case BinaryOp::div:
      return zip<T>(x, y, out, divide<T>);
    case BinaryOp::maximum:
      return zip<T>(x, y, out, [](T a, T b) { return std::max(a, b); });
    case BinaryOp::minimum:
      return zip<T>(x, y, out, [](T a, T b) { return std::min(a, b); });
  }
}

}  // namespace

void unary(UnaryOp op, const Tensor& x, Tensor& out) {
  visit(x.dtype(), [&]<typename T>() { unary_typed<T>(op, x, out); });
}

void binary(BinaryOp op, const Tensor& x, const Tensor& y, Tensor& out) {
  visit(x.dtype(), [&]<typename T>() { binary_typed<T>(op, x, y, out); });
}

void saxpy(double a, const Tensor& x, const Tensor& y, Tensor& out) {
  visit(x.dtype(), [&]<typename T>() {
    if constexpr (std::floating_point<T>) {
      const T s = static_cast<T>(a);
      zip<T>(x, y, out, [s](T xi, T yi) { return s * xi + yi; });
    }
  });
}

}  // namespace minifw::core::cpu
