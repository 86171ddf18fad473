// (Part of ops.cu.) GPU row reductions and (log-)softmax: one block per row (grid-stride over rows), a strided
// pass per thread, then a shared-memory tree.
#include "gpu/gpu.hpp"

namespace minifw_gpu {

constexpr int kBlock = 256;

// The numbering of minifw::core::ReduceOp: sum, prod, max, min, mean, norm2.
template <typename A>
__device__ A combine(int op, A a, A b) {
  switch (op) {
    case 1:
      return a * b;
    case 2:
      return a > b ? a : b;
    case 3:
      return a < b ? a : b;
    default:
      return a + b;
  }
}

// The block's threads combine their values; every thread gets the result.
template <typename A>
__device__ A block_combine(int op, A mine) {
  __shared__ A part[kBlock];
  const int tid = static_cast<int>(threadIdx.x);
  part[tid] = mine;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s /= 2) {
    if (tid < s) part[tid] = combine(op, part[tid], part[tid + s]);
    __syncthreads();
  }
  const A all = part[0];
  __syncthreads();  // part is reused by the next call
  return all;
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    reduce_rows(int op, const T* __restrict__ x, T* __restrict__ out, std::size_t rows, std::size_t cols) {
  using A = Acc<T>;
  for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * cols;
    // Identity of the op; max/min start from the row's first element (cols > 0 for them).
    A acc = op == 1 ? A(1) : (op == 2 || op == 3) ? A(row[0]) : A(0);
    for (std::size_t c = threadIdx.x; c < cols; c += kBlock) {
      const A v = A(row[c]);
      acc = combine(op, acc, op == 5 ? v * v : v);
    }
    const A all = block_combine(op, acc);
    if (threadIdx.x == 0) {
      if constexpr (std::is_floating_point_v<T>) {
        out[r] = op == 4 ? all / T(cols) : op == 5 ? d_sqrt(all) : all;
      } else {
        out[r] = static_cast<T>(all);
      }
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    softmax_rows(int log, const T* __restrict__ x, T* __restrict__ out, std::size_t rows, std::size_t cols) {
  for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * cols;
    T top = row[0];
    for (std::size_t c = threadIdx.x; c < cols; c += kBlock) top = row[c] > top ? row[c] : top;
    top = block_combine(2, top);
    T total = 0;
    for (std::size_t c = threadIdx.x; c < cols; c += kBlock) total += d_exp(row[c] - top);
    total = block_combine(0, total);
    const T log_total = d_log(total);
    for (std::size_t c = threadIdx.x; c < cols; c += kBlock) {
      out[r * cols + c] = log ? row[c] - top - log_total : d_exp(row[c] - top) / total;
    }
  }
}

// Uploads x (rows x cols), runs `launch(dx, dout, blocks)`, downloads out_count elements.
template <typename T, typename Launch>
Status run_rows(const void* x, void* out, std::size_t rows, std::size_t cols, std::size_t out_count,
                Launch launch) {
  if (rows == 0) return Status{};
  Buffer dx, dout;
  Status s = dx.upload(x, rows * cols * sizeof(T));
  if (s.ok()) s = dout.alloc(out_count * sizeof(T));
  if (!s.ok()) return s;
  launch(dx.as<const T>(), dout.as<T>(), static_cast<unsigned>(rows < 65535 ? rows : 65535));
  s = launched("row kernel");
  return s.ok() ? dout.download(out, out_count * sizeof(T)) : s;
}

}  // namespace minifw_gpu

using minifw_gpu::by_dtype;
using minifw_gpu::finish;
using minifw_gpu::kBlock;
using minifw_gpu::Status;

extern "C" {

int minifw_accel_reduce(int op, int dtype, const void* x, void* out, std::size_t rows, std::size_t cols,
                        char* err, std::size_t errlen) {
  return finish(by_dtype(dtype, [&]<typename T>() {
                  return minifw_gpu::run_rows<T>(x, out, rows, cols, rows, [&](const T* dx, T* dout, unsigned blocks) {
                    minifw_gpu::reduce_rows<T><<<blocks, kBlock>>>(op, dx, dout, rows, cols);
                  });
                }), err, errlen);
}

int minifw_accel_softmax(int log, int dtype, const void* x, void* out, std::size_t rows, std::size_t cols,
                         char* err, std::size_t errlen) {
  return finish(by_dtype(dtype, [&]<typename T>() -> Status {
                  if constexpr (std::is_floating_point_v<T>) {
                    return minifw_gpu::run_rows<T>(x, out, rows, cols, rows * cols,
                                                   [&](const T* dx, T* dout, unsigned blocks) {
                      minifw_gpu::softmax_rows<T><<<blocks, kBlock>>>(log, dx, dout, rows, cols);
                    });
                  } else {
                    return Status{"softmax of an integer dtype", minifw_gpu::rt::kInvalidValue};
                  }
                }), err, errlen);
}

}  // extern "C"
