// What this build of minifw_core is: its accelerator, GEMM variants and device queries.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace minifw::core {

struct BuildInfo {
  std::string_view version;              // minifw_core's own version
  std::string_view accelerator;          // cpu | cuda | rocm | xpu
  std::string_view accelerator_version;  // "13.2" (empty for cpu)
  std::string_view gpu_archs;            // MINIFW_GPU_ARCHS as built
  std::string_view device_compiler;      // "nvcc 13.2.86" (empty for cpu)
  int weight;                            // MINIFW_CORE_WEIGHT: the number of GEMM variants
};

BuildInfo build_info() noexcept;

// The tile configuration of one compiled CPU GEMM variant (the device variants with the same
// index use the device tiling of src/common/gemm_config.hpp).
struct GemmTiling {
  int bm, bn, bk, rm, rn;
};
int gemm_variant_count() noexcept;
GemmTiling gemm_variant_tiling(int variant);  // std::out_of_range for a variant not built
// The variant the library picks for an [m, k] x [k, n] product (least padded work).
int choose_gemm_variant(std::size_t m, std::size_t n) noexcept;

// The accelerator runtime (none on cpu builds: every query says so).
bool accelerator_built() noexcept;
int accelerator_runtime_version();  // std::runtime_error on failure or on a cpu build
// Number of devices; 0 with *why set when there is no driver or device. Never throws.
int accelerator_device_count(std::string* why = nullptr) noexcept;

}  // namespace minifw::core
