// The CPU backend of minifw_core: entry points behind src/ops.cpp, which has already checked
// shapes, dtypes and sizes (outputs are allocated with their final shape).
#pragma once

#include <cstddef>

#include "accel.h"
#include "minifw/core/ops.hpp"
#include "minifw/core/tensor.hpp"

namespace minifw::core::cpu {

void unary(UnaryOp op, const Tensor& x, Tensor& out);
void binary(BinaryOp op, const Tensor& x, const Tensor& y, Tensor& out);
void saxpy(double a, const Tensor& x, const Tensor& y, Tensor& out);
void reduce(ReduceOp op, const Tensor& x, std::size_t rows, std::size_t cols, Tensor& out);
void softmax(bool log, const Tensor& x, std::size_t rows, std::size_t cols, Tensor& out);

// GEMM variant `V` for the dtype numbered `D` (src/cpu/gemm_variant.cpp, one translation unit
// per variant and dtype).
template <int V, int D>
void gemm_matmul(const void* a, const void* b, void* c, std::size_t m, std::size_t k, std::size_t n);
template <int V, int D>
void gemm_conv2d(const void* x, const void* w, void* y, const minifw_conv2d_shape& s);

// Dispatch over the compiled variants (src/cpu/gemm_registry.cpp); 0 <= variant < weight.
void matmul(int variant, const Tensor& a, const Tensor& b, Tensor& c);
void conv2d(int variant, const Tensor& x, const Tensor& w, Tensor& y, const minifw_conv2d_shape& s);

}  // namespace minifw::core::cpu
