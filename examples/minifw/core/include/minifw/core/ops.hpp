// The operators of minifw_core. Each runs on the CPU or, with Device::accelerator, on the
// accelerator this library was built for (CUDA, ROCm/HIP or SYCL): inputs and outputs are host
// tensors either way. Errors are exceptions: std::invalid_argument for bad shapes, dtypes or
// names, std::runtime_error for accelerator failures (no driver, no device, ...).
#pragma once

#include <cstddef>
#include <string_view>

#include "minifw/core/tensor.hpp"

namespace minifw::core {

enum class Device : int { cpu = 0, accelerator = 1 };

// Numeric values are part of the device ABI (src/accel.h).
enum class UnaryOp : int { neg, abs, square, relu, exp, log, sqrt, tanh, sigmoid, gelu };
enum class BinaryOp : int { add, sub, mul, div, maximum, minimum };
enum class ReduceOp : int { sum, prod, max, min, mean, norm2 };

// By name ("relu", "maximum", "norm2", ...); std::invalid_argument for an unknown name.
UnaryOp unary_op_from_name(std::string_view name);
BinaryOp binary_op_from_name(std::string_view name);
ReduceOp reduce_op_from_name(std::string_view name);
// Floating-only ops (exp, log, ..., mean, norm2) refuse integer tensors.
bool needs_floating(UnaryOp op) noexcept;
bool needs_floating(ReduceOp op) noexcept;

struct Conv2dParams {
  std::size_t stride = 1;
  std::size_t padding = 0;
};

Tensor unary(UnaryOp op, const Tensor& x, Device device = Device::cpu);
// Same shape, same dtype; integer division by zero is refused.
Tensor binary(BinaryOp op, const Tensor& x, const Tensor& y, Device device = Device::cpu);
// a * x + y for floating tensors.
Tensor saxpy(double a, const Tensor& x, const Tensor& y, Device device = Device::cpu);
// Over the last axis: shape [..., n] -> [...]. A 1-D tensor reduces to a 0-d one.
Tensor reduce(ReduceOp op, const Tensor& x, Device device = Device::cpu);
// (log-)softmax over the last axis of a floating tensor.
Tensor softmax(const Tensor& x, bool log, Device device = Device::cpu);
// [m, k] x [k, n] -> [m, n]. variant: one of the compiled GEMM variants, or -1 to let the
// library pick one for the shape (see gemm_variant_count()).
Tensor matmul(const Tensor& a, const Tensor& b, Device device = Device::cpu, int variant = -1);
// x [n, c, h, w] (NCHW), w [o, c, kh, kw] (OIHW) -> [n, o, oh, ow], as an implicit GEMM.
Tensor conv2d(const Tensor& x, const Tensor& w, Conv2dParams params, Device device = Device::cpu,
              int variant = -1);

}  // namespace minifw::core
