// The blocked CPU GEMM behind matmul and conv2d: C[m x n] = A[m x k] * B[k x n], with A, B and
// C reached through small accessor objects, so that a convolution is the same kernel reading
// its input as an implicit im2col matrix. Cache blocks bm x bn x bk, register blocks rm x rn.
#pragma once

#include <algorithm>
#include <cstddef>

#include "accel.h"
#include "common/gemm_config.hpp"

namespace minifw::core::cpu::gemm {

using minifw_gemm::CpuTiling;

template <typename T>
using Acc = typename minifw_gemm::acc_of<T>::type;

// One rm x rn register block of C over k in [k0, k1): a full block when full, else clipped to
// rows x cols. The first k block starts from zero, later ones from C.
template <typename T, int RM, int RN, bool Full, class A, class B, class C>
inline void micro_kernel(std::size_t i, std::size_t j, std::size_t k0, std::size_t k1, int rows,
                         int cols, const A& a, const B& b, C& c) {
  Acc<T> acc[RM][RN];
  const int nr = Full ? RM : rows;
  const int nc = Full ? RN : cols;
  for (int r = 0; r < nr; ++r) {
    for (int q = 0; q < nc; ++q) acc[r][q] = k0 == 0 ? Acc<T>{0} : Acc<T>(c.load(i + r, j + q));
  }
  for (std::size_t k = k0; k < k1; ++k) {
    Acc<T> av[RM];
    for (int r = 0; r < nr; ++r) av[r] = Acc<T>(a(i + r, k));
    for (int q = 0; q < nc; ++q) {
      const Acc<T> bv = Acc<T>(b(k, j + q));
      for (int r = 0; r < nr; ++r) acc[r][q] += av[r] * bv;
    }
  }
  for (int r = 0; r < nr; ++r) {
    for (int q = 0; q < nc; ++q) c.store(i + r, j + q, static_cast<T>(acc[r][q]));
  }
}

template <typename T, CpuTiling TL, class A, class B, class C>
void blocked(std::size_t m, std::size_t n, std::size_t k, const A& a, const B& b, C& c) {
  for (std::size_t i0 = 0; i0 < m; i0 += TL.bm) {
    const std::size_t i1 = std::min<std::size_t>(i0 + TL.bm, m);
    for (std::size_t k0 = 0; k0 < k; k0 += TL.bk) {
      const std::size_t k1 = std::min<std::size_t>(k0 + TL.bk, k);
      for (std::size_t j0 = 0; j0 < n; j0 += TL.bn) {
        const std::size_t j1 = std::min<std::size_t>(j0 + TL.bn, n);
        for (std::size_t i = i0; i < i1; i += TL.rm) {
          const int rows = static_cast<int>(std::min<std::size_t>(TL.rm, i1 - i));
          for (std::size_t j = j0; j < j1; j += TL.rn) {
            const int cols = static_cast<int>(std::min<std::size_t>(TL.rn, j1 - j));
            if (rows == TL.rm && cols == TL.rn) {
              micro_kernel<T, TL.rm, TL.rn, true>(i, j, k0, k1, rows, cols, a, b, c);
            } else {
              micro_kernel<T, TL.rm, TL.rn, false>(i, j, k0, k1, rows, cols, a, b, c);
            }
          }
        }
      }
    }
  }
  if (k == 0) {  // an empty sum: C is zero
    for (std::size_t i = 0; i < m; ++i) {
      for (std::size_t j = 0; j < n; ++j) c.store(i, j, T(0));
    }
  }
}

// Row-major matrices.
template <typename T>
struct Matrix {
  const T* p;
  std::size_t ld;
  T operator()(std::size_t r, std::size_t q) const { return p[r * ld + q]; }
};
template <typename T>
struct Output {
  T* p;
  std::size_t ld;
  T load(std::size_t r, std::size_t q) const { return p[r * ld + q]; }
  void store(std::size_t r, std::size_t q, T v) { p[r * ld + q] = v; }
};

// conv2d as a GEMM: A = weights [o x (c*kh*kw)], B = im2col(x) [(c*kh*kw) x (n*oh*ow)],
// C = y viewed as [o x (n*oh*ow)].
template <typename T>
struct Im2col {
  const T* x;
  minifw_conv2d_shape s;
  T operator()(std::size_t kk, std::size_t j) const {
    const std::size_t c = kk / (s.kh * s.kw);
    const std::size_t kh = (kk / s.kw) % s.kh;
    const std::size_t kw = kk % s.kw;
    const std::size_t n = j / (s.oh * s.ow);
    const std::size_t oh = (j / s.ow) % s.oh;
    const std::size_t ow = j % s.ow;
    // Unsigned arithmetic: a padded position wraps to a huge index and fails the bound.
    const std::size_t ih = oh * s.stride + kh - s.padding;
    const std::size_t iw = ow * s.stride + kw - s.padding;
    if (ih >= s.h || iw >= s.w) return T(0);
    return x[((n * s.c + c) * s.h + ih) * s.w + iw];
  }
};
template <typename T>
struct ConvOutput {
  T* y;
  minifw_conv2d_shape s;
  std::size_t index(std::size_t o, std::size_t j) const {
    const std::size_t plane = s.oh * s.ow;
    return ((j / plane) * s.o + o) * plane + j % plane;
  }
  T load(std::size_t o, std::size_t j) const { return y[index(o, j)]; }
  void store(std::size_t o, std::size_t j, T v) { y[index(o, j)] = v; }
};

template <typename T, CpuTiling TL>
void matmul(const void* a, const void* b, void* c, std::size_t m, std::size_t k, std::size_t n) {
  Output<T> out{static_cast<T*>(c), n};
  blocked<T, TL>(m, n, k, Matrix<T>{static_cast<const T*>(a), k},
                 Matrix<T>{static_cast<const T*>(b), n}, out);
}

template <typename T, CpuTiling TL>
void conv2d(const void* x, const void* w, void* y, const minifw_conv2d_shape& s) {
  const std::size_t k = s.c * s.kh * s.kw;
  ConvOutput<T> out{static_cast<T*>(y), s};
  blocked<T, TL>(s.o, s.n * s.oh * s.ow, k, Matrix<T>{static_cast<const T*>(w), k},
                 Im2col<T>{static_cast<const T*>(x), s}, out);
}

}  // namespace minifw::core::cpu::gemm
