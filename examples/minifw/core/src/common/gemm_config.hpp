// The GEMM variants: variant v (0 <= v < MINIFW_CORE_WEIGHT) is one tiling of the same
// blocked GEMM, on the CPU (src/cpu/gemm_variant.cpp) and on the device (src/gpu/, src/xpu/).
// Each variant is its own translation unit, so the weight scales compile time linearly, the
// way a framework's per-configuration kernel instantiations do. Every variant computes the
// same sums in the same order (k ascending), so results agree up to floating-point
// contraction. Plain constexpr code: compiled by the host compiler, nvcc, hipcc and icpx.
#ifndef MINIFW_CORE_GEMM_CONFIG_HPP
#define MINIFW_CORE_GEMM_CONFIG_HPP

// MINIFW_CORE_WEIGHT, the number of variants, comes from the build's command line.
#ifndef MINIFW_CORE_WEIGHT
#error "minifw_core's build passes -DMINIFW_CORE_WEIGHT=<number of GEMM variants>"
#endif

namespace minifw_gemm {

// The largest weight: 64 distinct tilings of each kind below.
constexpr int kMaxVariants = 64;
static_assert(MINIFW_CORE_WEIGHT >= 1 && MINIFW_CORE_WEIGHT <= kMaxVariants);

struct CpuTiling {
  int bm, bn, bk;  // cache block of C (bm x bn) and of the k loop
  int rm, rn;      // register block of the micro-kernel
};

constexpr CpuTiling cpu_tiling(int v) {
  constexpr int rms[] = {4, 2, 8, 1};
  constexpr int rns[] = {4, 8, 2, 1};
  constexpr int bks[] = {64, 32, 128, 16};
  constexpr int blocks[] = {64, 32, 128, 16};
  const int rm = rms[v % 4];
  const int rn = rns[(v / 4) % 4];
  const int bk = bks[(v / 16) % 4];
  const int b = blocks[(v + v / 4) % 4];
  // Blocks are whole multiples of the register block.
  return CpuTiling{b < rm ? rm : b, b < rn ? rn : b, bk, rm, rn};
}

struct DeviceTiling {
  int ts;      // ts x ts threads per block
  int rm, rn;  // outputs per thread: rm rows x rn columns
  int bk;      // k extent of a shared-memory tile
};

// `elem` is the element size in bytes: the two shared tiles stay within 48 KiB.
constexpr DeviceTiling device_tiling(int v, int elem) {
  constexpr int tss[] = {16, 8};
  constexpr int rms[] = {4, 2, 1, 8};
  constexpr int rns[] = {4, 2, 8, 1};
  const int ts = tss[v % 2];
  const int rm = rms[(v / 2) % 4];
  const int rn = rns[(v / 8) % 4];
  int bk = ts * ((v / 32) % 2 + 1);
  while (bk > 1 && (ts * rm + ts * rn) * bk * elem > 48 * 1024) bk /= 2;
  return DeviceTiling{ts, rm, rn, bk};
}

// Integer products wrap modulo 2^bits (computed unsigned: no undefined overflow).
template <typename T>
struct acc_of {
  using type = T;
};
template <>
struct acc_of<int> {
  using type = unsigned int;
};
template <>
struct acc_of<long> {
  using type = unsigned long;
};
template <>
struct acc_of<long long> {
  using type = unsigned long long;
};

}  // namespace minifw_gemm

#endif  // MINIFW_CORE_GEMM_CONFIG_HPP
