// What this build is (compile definitions from CMakeLists.txt) and the accelerator runtime
// queries.
#include <cstddef>
#include <stdexcept>
#include <string>

#include "accel.h"
#include "common/gemm_config.hpp"
#include "minifw/core/info.hpp"
#include "minifw/core/text.hpp"

namespace minifw::core {
namespace {

// "7.5,8.0,12.0+PTX" -> "7.5;8.0;12.0+PTX" at compile time (MINIFW_GPU_ARCHS as given).
template <std::size_t N>
struct Semicolons {
  char text[N];
  constexpr explicit Semicolons(const char (&csv)[N]) : text{} {
    for (std::size_t i = 0; i < N; ++i) text[i] = csv[i] == ',' ? ';' : csv[i];
  }
  constexpr std::string_view view() const { return {text, N - 1}; }
};

constexpr Semicolons kGpuArchs{MINIFW_CORE_GPU_ARCHS_CSV};

}  // namespace

BuildInfo build_info() noexcept {
  return {MINIFW_CORE_VERSION,       MINIFW_CORE_ACCELERATOR,     MINIFW_CORE_ACCELERATOR_VERSION,
          kGpuArchs.view(),          MINIFW_CORE_DEVICE_COMPILER, MINIFW_CORE_WEIGHT};
}

int gemm_variant_count() noexcept { return MINIFW_CORE_WEIGHT; }

GemmTiling gemm_variant_tiling(int variant) {
  if (variant < 0 || variant >= MINIFW_CORE_WEIGHT) {
    throw std::out_of_range(cat("minifw_core: GEMM variant ", std::to_string(variant), " is not built"));
  }
  const auto t = minifw_gemm::cpu_tiling(variant);
  return {t.bm, t.bn, t.bk, t.rm, t.rn};
}

int choose_gemm_variant(std::size_t m, std::size_t n) noexcept {
  // Least padded work (whole cache blocks), then the larger register block, then the lower index.
  int best = 0;
  std::size_t best_work = 0;
  int best_regs = 0;
  for (int v = 0; v < MINIFW_CORE_WEIGHT; ++v) {
    const auto t = minifw_gemm::cpu_tiling(v);
    const std::size_t bm = static_cast<std::size_t>(t.bm), bn = static_cast<std::size_t>(t.bn);
    const std::size_t work = (m + bm - 1) / bm * bm * ((n + bn - 1) / bn * bn);
    const int regs = t.rm * t.rn;
    if (v == 0 || work < best_work || (work == best_work && regs > best_regs)) {
      best = v;
      best_work = work;
      best_regs = regs;
    }
  }
  return best;
}

bool accelerator_built() noexcept {
#ifdef MINIFW_CORE_WITH_ACCEL
  return true;
#else
  return false;
#endif
}

#ifdef MINIFW_CORE_WITH_ACCEL
int accelerator_runtime_version() {
  int version = 0;
  char err[512] = {0};
  if (minifw_accel_runtime_version(&version, err, sizeof err) != 0) {
    throw std::runtime_error(cat(minifw_accel_name(), " runtime version: ", err));
  }
  return version;
}

int accelerator_device_count(std::string* why) noexcept {
  int count = 0;
  char err[512] = {0};
  if (minifw_accel_device_count(&count, err, sizeof err) != 0) {
    if (why != nullptr) {
      try {
        why->clear();
        why->append(err);
      } catch (...) {  // out of memory for the message: the count still says 0
      }
    }
    return 0;
  }
  return count;
}
#else
int accelerator_runtime_version() {
  throw std::runtime_error("minifw_core was built for the cpu: no accelerator runtime");
}

int accelerator_device_count(std::string* why) noexcept {
  if (why != nullptr) {
    try {
      why->clear();
      why->append("minifw_core was built for the cpu");
    } catch (...) {
    }
  }
  return 0;
}
#endif

}  // namespace minifw::core
