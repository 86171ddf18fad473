// exp and log for the CPU kernels. glibc 2.29 gave the double versions new symbol versions
// (exp@GLIBC_2.29, log@GLIBC_2.29): a library calling them needs manylinux_2_29 or newer,
// while minifw's wheels are manylinux_2_28 even when built on a newer host. The double
// versions therefore go through long double (expl and logl, unchanged since glibc 2.2.5, and
// at least as precise); the float ones are expf and logf (GLIBC_2.27).
#pragma once

#include <cmath>
#include <concepts>

namespace minifw::core::cpu {

template <std::floating_point T>
T exp(T v) {
  if constexpr (sizeof(T) == sizeof(float)) {
    return std::exp(v);
  } else {
    return static_cast<T>(std::exp(static_cast<long double>(v)));
  }
}

template <std::floating_point T>
T log(T v) {
  if constexpr (sizeof(T) == sizeof(float)) {
    return std::log(v);
  } else {
    return static_cast<T>(std::log(static_cast<long double>(v)));
  }
}

}  // namespace minifw::core::cpu
