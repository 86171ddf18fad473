// One CPU GEMM variant for one element type: compiled once per (variant, dtype) with
// -DMINIFW_GEMM_VARIANT=<v> -DMINIFW_GEMM_DTYPE=<d> (see CMakeLists.txt), instantiating matmul
// and conv2d with tiling v. One translation unit per dtype, as frameworks split their kernels,
// so that a parallel build spreads them over every core.
#include <cstdint>

#include "cpu/cpu.hpp"
#include "cpu/gemm.hpp"

#if !defined(MINIFW_GEMM_VARIANT) || !defined(MINIFW_GEMM_DTYPE)
#error "compile with -DMINIFW_GEMM_VARIANT=<variant index> -DMINIFW_GEMM_DTYPE=<DType value>"
#endif

namespace minifw::core::cpu {

namespace {
constexpr minifw_gemm::CpuTiling kTiling = minifw_gemm::cpu_tiling(MINIFW_GEMM_VARIANT);
static_assert(MINIFW_GEMM_VARIANT >= 0 && MINIFW_GEMM_VARIANT < minifw_gemm::kMaxVariants);

template <int D>
struct element;
template <>
struct element<0> {
  using type = float;
};
template <>
struct element<1> {
  using type = double;
};
template <>
struct element<2> {
  using type = std::int32_t;
};
template <>
struct element<3> {
  using type = std::int64_t;
};
using T = element<MINIFW_GEMM_DTYPE>::type;
static_assert(static_cast<int>(dtype_of<T>::value) == MINIFW_GEMM_DTYPE);
}  // namespace

template <int V, int D>
void gemm_matmul(const void* a, const void* b, void* c, std::size_t m, std::size_t k, std::size_t n) {
  gemm::matmul<T, kTiling>(a, b, c, m, k, n);
}

template <int V, int D>
void gemm_conv2d(const void* x, const void* w, void* y, const minifw_conv2d_shape& s) {
  gemm::conv2d<T, kTiling>(x, w, y, s);
}

template void gemm_matmul<MINIFW_GEMM_VARIANT, MINIFW_GEMM_DTYPE>(const void*, const void*, void*, std::size_t,
                                                                  std::size_t, std::size_t);
template void gemm_conv2d<MINIFW_GEMM_VARIANT, MINIFW_GEMM_DTYPE>(const void*, const void*, void*,
                                                                  const minifw_conv2d_shape&);

}  // namespace minifw::core::cpu
