// CPU row reductions and (log-)softmax over the last axis.
#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <functional>
#include <numeric>
#include <span>

#include "common/gemm_config.hpp"
#include "cpu/cpu.hpp"
#include "cpu/math.hpp"

namespace minifw::core::cpu {
namespace {

template <typename T>
using Acc = typename minifw_gemm::acc_of<T>::type;

template <typename T>
T reduce_row(ReduceOp op, std::span<const T> row) {
  switch (op) {
    case ReduceOp::sum:
      return static_cast<T>(std::accumulate(row.begin(), row.end(), Acc<T>{0},
                                            [](Acc<T> s, T v) { return s + Acc<T>(v); }));
    case ReduceOp::prod:
      return static_cast<T>(std::accumulate(row.begin(), row.end(), Acc<T>{1},
                                            [](Acc<T> p, T v) { return p * Acc<T>(v); }));
    case ReduceOp::max:
      return std::ranges::max(row);
    case ReduceOp::min:
      return std::ranges::min(row);
    case ReduceOp::mean:
    case ReduceOp::norm2:
      break;
  }
  if constexpr (std::floating_point<T>) {
    if (op == ReduceOp::mean) {
      return std::accumulate(row.begin(), row.end(), T(0)) / static_cast<T>(row.size());
    }
    return std::sqrt(std::transform_reduce(row.begin(), row.end(), row.begin(), T(0)));
  }
  return T(0);
}

template <std::floating_point T>
void softmax_row(bool log, std::span<const T> row, std::span<T> out) {
  const T top = std::ranges::max(row);
  T total = 0;
  for (T v : row) total += cpu::exp(v - top);
  if (log) {
    const T log_total = cpu::log(total);
    std::ranges::transform(row, out.begin(), [=](T v) { return v - top - log_total; });
  } else {
    std::ranges::transform(row, out.begin(), [=](T v) { return cpu::exp(v - top) / total; });
  }
}

}  // namespace

void reduce(ReduceOp op, const Tensor& x, std::size_t rows, std::size_t cols, Tensor& out) {
  visit(x.dtype(), [&]<typename T>() {
    auto in = x.data<T>();
    auto dst = out.data<T>();
    for (std::size_t r = 0; r < rows; ++r) dst[r] = reduce_row<T>(op, in.subspan(r * cols, cols));
  });
}

void softmax(bool log, const Tensor& x, std::size_t rows, std::size_t cols, Tensor& out) {
  visit(x.dtype(), [&]<typename T>() {
    if constexpr (std::floating_point<T>) {
      auto in = x.data<T>();
      auto dst = out.data<T>();
      for (std::size_t r = 0; r < rows; ++r) {
        softmax_row<T>(log, in.subspan(r * cols, cols), dst.subspan(r * cols, cols));
      }
    }
  });
}

}  // namespace minifw::core::cpu
