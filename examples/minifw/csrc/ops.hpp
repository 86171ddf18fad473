// CPU kernels of minifw: plain C++20 (concepts, std::span, ranges).
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <functional>
#include <ranges>
#include <span>
#include <stdexcept>
#include <vector>

namespace minifw::cpu {

template <typename T>
concept Scalar = std::floating_point<T>;

// Elementwise binary op over two equally long spans into out.
template <Scalar T, std::invocable<T, T> Op>
void elementwise(std::span<const T> x, std::span<const T> y, std::span<T> out, Op op) {
  if (x.size() != y.size() || out.size() != x.size()) {
    throw std::length_error("minifw: operands must have the same length");
  }
  std::ranges::transform(x, y, out.begin(), op);
}

template <Scalar T>
void add(std::span<const T> x, std::span<const T> y, std::span<T> out) {
  elementwise<T>(x, y, out, std::plus<T>{});
}

// out = a * x + y
template <Scalar T>
void saxpy(T a, std::span<const T> x, std::span<const T> y, std::span<T> out) {
  elementwise<T>(x, y, out, [a](T xi, T yi) { return a * xi + yi; });
}

}  // namespace minifw::cpu
