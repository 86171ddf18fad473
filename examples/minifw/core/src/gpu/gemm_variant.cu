// One GPU GEMM variant: compiled once per variant with -DMINIFW_GEMM_VARIANT=<v>, instantiating
// the matmul and conv2d kernels of tiling v for every dtype.
#include "gpu/gemm.cuh"

#ifndef MINIFW_GEMM_VARIANT
#error "compile with -DMINIFW_GEMM_VARIANT=<variant index>"
#endif
static_assert(MINIFW_GEMM_VARIANT >= 0 && MINIFW_GEMM_VARIANT < minifw_gemm::kMaxVariants);

namespace minifw_gpu {

template <int V>
rt::Error variant_matmul(int dtype, const void* a, const void* b, void* c, std::size_t m, std::size_t k,
                         std::size_t n) {
  const Status s = by_dtype(dtype, [&]<typename T>() {
    return check("matmul", launch_gemm<T, V>(m, n, k, Matrix<T>{static_cast<const T*>(a), k},
                                             Matrix<T>{static_cast<const T*>(b), n},
                                             Output<T>{static_cast<T*>(c), n}));
  });
  return s.code;
}

template <int V>
rt::Error variant_conv2d(int dtype, const void* x, const void* w, void* y, const minifw_conv2d_shape& s) {
  const std::size_t k = s.c * s.kh * s.kw;
  const Status st = by_dtype(dtype, [&]<typename T>() {
    return check("conv2d", launch_gemm<T, V>(s.o, s.n * s.oh * s.ow, k, Matrix<T>{static_cast<const T*>(w), k},
                                             Im2col<T>{static_cast<const T*>(x), s},
                                             ConvOutput<T>{static_cast<T*>(y), s}));
  });
  return st.code;
}

template rt::Error variant_matmul<MINIFW_GEMM_VARIANT>(int, const void*, const void*, void*, std::size_t,
                                                       std::size_t, std::size_t);
template rt::Error variant_conv2d<MINIFW_GEMM_VARIANT>(int, const void*, const void*, void*,
                                                       const minifw_conv2d_shape&);

}  // namespace minifw_gpu
