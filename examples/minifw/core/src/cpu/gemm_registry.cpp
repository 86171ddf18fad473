// The table of compiled CPU GEMM variants (MINIFW_CORE_WEIGHT of them, times the four dtypes);
// each entry is defined in its own translation unit (gemm_variant.cpp).
#include <array>
#include <iterator>
#include <cstddef>
#include <utility>

#include "common/gemm_config.hpp"
#include "cpu/cpu.hpp"

namespace minifw::core::cpu {
namespace {

using MatmulFn = void (*)(const void*, const void*, void*, std::size_t, std::size_t, std::size_t);
using ConvFn = void (*)(const void*, const void*, void*, const minifw_conv2d_shape&);
constexpr std::size_t kDTypes = std::size(kAllDTypes);

struct Entry {
  MatmulFn matmul;
  ConvFn conv2d;
};

// Entry I is variant I / 4 for the dtype numbered I % 4.
template <std::size_t... I>
constexpr std::array<Entry, sizeof...(I)> table(std::index_sequence<I...>) {
  return {Entry{&gemm_matmul<static_cast<int>(I / kDTypes), static_cast<int>(I % kDTypes)>,
                &gemm_conv2d<static_cast<int>(I / kDTypes), static_cast<int>(I % kDTypes)>}...};
}

constexpr auto kEntries = table(std::make_index_sequence<MINIFW_CORE_WEIGHT * kDTypes>{});

const Entry& entry(int variant, DType dtype) {
  return kEntries.at(static_cast<std::size_t>(variant) * kDTypes + static_cast<std::size_t>(dtype));
}

}  // namespace

void matmul(int variant, const Tensor& a, const Tensor& b, Tensor& c) {
  const std::size_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  entry(variant, a.dtype()).matmul(a.raw(), b.raw(), c.raw(), m, k, n);
}

void conv2d(int variant, const Tensor& x, const Tensor& w, Tensor& y, const minifw_conv2d_shape& s) {
  entry(variant, x.dtype()).conv2d(x.raw(), w.raw(), y.raw(), s);
}

}  // namespace minifw::core::cpu
