// The tiled GPU GEMM behind matmul and conv2d: C[m x n] = A[m x k] * B[k x n] with A, B and C
// reached through small accessor objects (a convolution reads its input as an implicit im2col
// matrix). ts x ts threads per block, each computing rm x rn outputs; shared-memory tiles of
// k extent bk. Every variant sums k in ascending order.
#pragma once

#include "gpu/gpu.hpp"

namespace minifw_gpu {

template <typename T, int TS, int RM, int RN, int BK, class A, class B, class C>
__global__ void __launch_bounds__(TS * TS)
    gemm_kernel(std::size_t m, std::size_t n, std::size_t k, A a, B b, C c) {
  constexpr int BM = TS * RM;
  constexpr int BN = TS * RN;
  __shared__ T as[BK][BM];
  __shared__ T bs[BK][BN];
  const int tx = static_cast<int>(threadIdx.x);
  const int ty = static_cast<int>(threadIdx.y);
  const int tid = ty * TS + tx;
  const std::size_t row0 = static_cast<std::size_t>(blockIdx.y) * BM;
  const std::size_t col0 = static_cast<std::size_t>(blockIdx.x) * BN;
  Acc<T> acc[RM][RN];
#pragma unroll
  for (int r = 0; r < RM; ++r) {
#pragma unroll
    for (int q = 0; q < RN; ++q) acc[r][q] = Acc<T>(0);
  }
  for (std::size_t k0 = 0; k0 < k; k0 += BK) {
    for (int idx = tid; idx < BM * BK; idx += TS * TS) {
      const int r = idx / BK, kk = idx % BK;
      const std::size_t i = row0 + r, kx = k0 + kk;
      as[kk][r] = (i < m && kx < k) ? a(i, kx) : T(0);
    }
    for (int idx = tid; idx < BK * BN; idx += TS * TS) {
      const int kk = idx / BN, q = idx % BN;
      const std::size_t j = col0 + q, kx = k0 + kk;
      bs[kk][q] = (j < n && kx < k) ? b(kx, j) : T(0);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      Acc<T> av[RM];
      Acc<T> bv[RN];
#pragma unroll
      for (int r = 0; r < RM; ++r) av[r] = Acc<T>(as[kk][ty + r * TS]);
#pragma unroll
      for (int q = 0; q < RN; ++q) bv[q] = Acc<T>(bs[kk][tx + q * TS]);
#pragma unroll
      for (int r = 0; r < RM; ++r) {
#pragma unroll
        for (int q = 0; q < RN; ++q) acc[r][q] += av[r] * bv[q];
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < RM; ++r) {
#pragma unroll
    for (int q = 0; q < RN; ++q) {
      const std::size_t i = row0 + ty + r * TS, j = col0 + tx + q * TS;
      if (i < m && j < n) c(i, j, static_cast<T>(acc[r][q]));
    }
  }
}

// Accessors: row-major matrices, the implicit im2col input and the NCHW output of conv2d.
template <typename T>
struct Matrix {
  const T* p;
  std::size_t ld;
  __device__ T operator()(std::size_t r, std::size_t q) const { return p[r * ld + q]; }
};
template <typename T>
struct Output {
  T* p;
  std::size_t ld;
  __device__ void operator()(std::size_t r, std::size_t q, T v) const { p[r * ld + q] = v; }
};
template <typename T>
struct Im2col {
  const T* x;
  minifw_conv2d_shape s;
  __device__ T operator()(std::size_t kk, std::size_t j) const {
    const std::size_t c = kk / (s.kh * s.kw), kh = (kk / s.kw) % s.kh, kw = kk % s.kw;
    const std::size_t n = j / (s.oh * s.ow), oh = (j / s.ow) % s.oh, ow = j % s.ow;
    // Unsigned: a padded position wraps to a huge index and fails the bound.
    const std::size_t ih = oh * s.stride + kh - s.padding, iw = ow * s.stride + kw - s.padding;
    return ih < s.h && iw < s.w ? x[((n * s.c + c) * s.h + ih) * s.w + iw] : T(0);
  }
};
template <typename T>
struct ConvOutput {
  T* y;
  minifw_conv2d_shape s;
  __device__ void operator()(std::size_t o, std::size_t j, T v) const {
    const std::size_t plane = s.oh * s.ow;
    y[((j / plane) * s.o + o) * plane + j % plane] = v;
  }
};

// Launch of variant V for element type T (its tiling: minifw_gemm::device_tiling).
template <typename T, int V, class A, class B, class C>
rt::Error launch_gemm(std::size_t m, std::size_t n, std::size_t k, A a, B b, C c) {
  constexpr minifw_gemm::DeviceTiling t = minifw_gemm::device_tiling(V, sizeof(T));
  static_assert((t.ts * t.rm + t.ts * t.rn) * t.bk * static_cast<int>(sizeof(T)) <= 48 * 1024);
  const std::size_t gx = (n + t.ts * t.rn - 1) / (t.ts * t.rn);
  const std::size_t gy = (m + t.ts * t.rm - 1) / (t.ts * t.rm);
  if (gy > 65535 || gx > 0x7fffffff) return rt::kInvalidValue;
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy));
  const dim3 block(t.ts, t.ts);
  gemm_kernel<T, t.ts, t.rm, t.rn, t.bk><<<grid, block>>>(m, n, k, a, b, c);
  return rt::last_error();
}

// One variant's entry points, on device pointers (gemm_variant.cu defines them per variant).
template <int V>
rt::Error variant_matmul(int dtype, const void* a, const void* b, void* c, std::size_t m, std::size_t k,
                         std::size_t n);
template <int V>
rt::Error variant_conv2d(int dtype, const void* x, const void* w, void* y, const minifw_conv2d_shape& s);

}  // namespace minifw_gpu
