// The operators' front end: checks shapes and dtypes, allocates the result and runs the CPU
// backend or the accelerator's (through the C ABI of src/accel.h).
#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "accel.h"
#include "common/gemm_config.hpp"
#include "cpu/cpu.hpp"
#include "minifw/core/info.hpp"
#include "minifw/core/text.hpp"
#include "minifw/core/ops.hpp"

namespace minifw::core {
namespace {

static_assert(static_cast<int>(DType::int64) == 3 && static_cast<int>(UnaryOp::gelu) == 9 &&
              static_cast<int>(BinaryOp::minimum) == 5 && static_cast<int>(ReduceOp::norm2) == 5,
              "the numbering is the device ABI of src/accel.h");

[[noreturn]] void refuse(const std::string& what) {
  throw std::invalid_argument(cat("minifw_core: ", what));
}

// `f(err, errlen)` calls one minifw_accel_* function (MINIFW_CORE_WITH_ACCEL: a compile
// definition of accelerator builds). A generic lambda: on a cpu build its body
// (and so the backend symbol) is never instantiated.
template <typename F>
void on_accelerator(F&& f) {
#ifdef MINIFW_CORE_WITH_ACCEL
  char err[512] = {0};
  if (f(err, sizeof err) != 0) {
    throw std::runtime_error(cat("minifw_core ", minifw_accel_name(), ": ", err));
  }
#else
  (void)f;
  throw std::runtime_error("minifw_core was built for the cpu: no accelerator to run on");
#endif
}

void same_shape(const Tensor& x, const Tensor& y, const char* op) {
  if (x.dtype() != y.dtype() || x.shape() != y.shape()) {
    refuse(cat(op, " needs operands of one dtype and shape, got ", x.describe(), " and ", y.describe()));
  }
}

void floating(const Tensor& x, const char* op) {
  if (!is_floating(x.dtype())) refuse(cat(op, " needs a floating tensor, got ", x.describe()));
}

void dims(const Tensor& x, std::size_t want, const char* what) {
  if (x.dim() != want) refuse(cat(what, " must be ", std::to_string(want), "-D, got ", x.describe()));
}

struct Rows {
  std::size_t rows, cols;
};

Rows last_axis(const Tensor& x, const char* op) {
  if (x.dim() == 0) refuse(cat(op, " needs at least one axis"));
  const std::size_t cols = x.shape().back();
  return {cols == 0 ? 0 : x.numel() / cols, cols};
}

int variant_for(int variant, std::size_t m, std::size_t n) {
  if (variant < 0) return choose_gemm_variant(m, n);
  if (variant >= gemm_variant_count()) {
    refuse(cat("GEMM variant ", std::to_string(variant), " is not built (this build has ", std::to_string(gemm_variant_count()), ", MINIFW_CORE_WEIGHT)"));
  }
  return variant;
}

void no_zero_divisor(const Tensor& y) {
  visit(y.dtype(), [&]<typename T>() {
    if constexpr (!std::is_floating_point_v<T>) {
      auto v = y.data<T>();
      if (std::find(v.begin(), v.end(), T(0)) != v.end()) refuse("integer division by zero");
    }
  });
}

}  // namespace

Tensor unary(UnaryOp op, const Tensor& x, Device device) {
  if (needs_floating(op)) floating(x, "this unary op");
  Tensor out(x.dtype(), x.shape());
  if (device == Device::cpu) {
    cpu::unary(op, x, out);
  } else {
    on_accelerator([&](auto* err, auto len) {
      return minifw_accel_unary(int(op), int(x.dtype()), x.raw(), out.raw(), x.numel(), err, len);
    });
  }
  return out;
}

Tensor binary(BinaryOp op, const Tensor& x, const Tensor& y, Device device) {
  same_shape(x, y, "a binary op");
  if (op == BinaryOp::div) no_zero_divisor(y);
  Tensor out(x.dtype(), x.shape());
  if (device == Device::cpu) {
    cpu::binary(op, x, y, out);
  } else {
    on_accelerator([&](auto* err, auto len) {
      return minifw_accel_binary(int(op), int(x.dtype()), x.raw(), y.raw(), out.raw(), x.numel(), err, len);
    });
  }
  return out;
}

Tensor saxpy(double a, const Tensor& x, const Tensor& y, Device device) {
  same_shape(x, y, "saxpy");
  floating(x, "saxpy");
  Tensor out(x.dtype(), x.shape());
  if (device == Device::cpu) {
    cpu::saxpy(a, x, y, out);
  } else {
    on_accelerator([&](auto* err, auto len) {
      return minifw_accel_saxpy(int(x.dtype()), a, x.raw(), y.raw(), out.raw(), x.numel(), err, len);
    });
  }
  return out;
}

Tensor reduce(ReduceOp op, const Tensor& x, Device device) {
  if (needs_floating(op)) floating(x, "this reduction");
  const Rows r = last_axis(x, "a reduction");
  if (r.cols == 0 && op != ReduceOp::sum && op != ReduceOp::prod && op != ReduceOp::norm2) {
    refuse("this reduction of an empty axis has no value");
  }
  Tensor out(x.dtype(), x.shape().without_last());
  const std::size_t rows = out.numel();
  if (device == Device::cpu) {
    cpu::reduce(op, x, rows, r.cols, out);
  } else {
    on_accelerator([&](auto* err, auto len) {
      return minifw_accel_reduce(int(op), int(x.dtype()), x.raw(), out.raw(), rows, r.cols, err, len);
    });
  }
  return out;
}

Tensor softmax(const Tensor& x, bool log, Device device) {
  floating(x, "softmax");
  const Rows r = last_axis(x, "softmax");
  Tensor out(x.dtype(), x.shape());
  if (r.rows == 0 || r.cols == 0) return out;
  if (device == Device::cpu) {
    cpu::softmax(log, x, r.rows, r.cols, out);
  } else {
    on_accelerator([&](auto* err, auto len) {
      return minifw_accel_softmax(log ? 1 : 0, int(x.dtype()), x.raw(), out.raw(), r.rows, r.cols, err, len);
    });
  }
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b, Device device, int variant) {
  dims(a, 2, "matmul's a");
  dims(b, 2, "matmul's b");
  if (a.dtype() != b.dtype() || a.shape()[1] != b.shape()[0]) {
    refuse(cat("matmul of ", a.describe(), " and ", b.describe()));
  }
  const std::size_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  const int v = variant_for(variant, m, n);
  Tensor c(a.dtype(), {m, n});
  if (c.numel() == 0) return c;
  if (device == Device::cpu) {
    cpu::matmul(v, a, b, c);
  } else {
    on_accelerator([&](auto* err, auto len) {
      return minifw_accel_matmul(v, int(a.dtype()), a.raw(), b.raw(), c.raw(), m, k, n, err, len);
    });
  }
  return c;
}

Tensor conv2d(const Tensor& x, const Tensor& w, Conv2dParams p, Device device, int variant) {
  dims(x, 4, "conv2d's input");
  dims(w, 4, "conv2d's weight");
  const auto& xs = x.shape();
  const auto& ws = w.shape();
  if (x.dtype() != w.dtype() || xs[1] != ws[1] || p.stride == 0) {
    refuse(cat("conv2d of ", x.describe(), " with ", w.describe(), " (stride ", std::to_string(p.stride), ")"));
  }
  if (xs[2] + 2 * p.padding < ws[2] || xs[3] + 2 * p.padding < ws[3]) {
    refuse(cat("conv2d kernel ", w.describe(), " is larger than the padded input ", x.describe()));
  }
  minifw_conv2d_shape s{xs[0], xs[1], xs[2], xs[3], ws[0], ws[2], ws[3], p.stride, p.padding,
                        (xs[2] + 2 * p.padding - ws[2]) / p.stride + 1,
                        (xs[3] + 2 * p.padding - ws[3]) / p.stride + 1};
  const int v = variant_for(variant, s.o, s.n * s.oh * s.ow);
  Tensor y(x.dtype(), {s.n, s.o, s.oh, s.ow});
  if (y.numel() == 0) return y;
  if (device == Device::cpu) {
    cpu::conv2d(v, x, w, y, s);
  } else {
    on_accelerator([&](auto* err, auto len) {
      return minifw_accel_conv2d(v, int(x.dtype()), x.raw(), w.raw(), y.raw(), &s, err, len);
    });
  }
  return y;
}

}  // namespace minifw::core
