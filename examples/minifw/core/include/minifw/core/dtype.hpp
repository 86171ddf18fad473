// Element types of minifw_core tensors, and a compile-time visitor over them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace minifw::core {

// The numeric values are part of the device ABI (src/accel.h): never renumber.
enum class DType : int { float32 = 0, float64 = 1, int32 = 2, int64 = 3 };

inline constexpr DType kAllDTypes[] = {DType::float32, DType::float64, DType::int32, DType::int64};

std::string_view dtype_name(DType dtype) noexcept;
// "float32" | "float64" | "int32" | "int64"; throws std::invalid_argument otherwise.
DType dtype_from_name(std::string_view name);
std::size_t itemsize(DType dtype) noexcept;
bool is_floating(DType dtype) noexcept;

template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> : std::integral_constant<DType, DType::float32> {};
template <>
struct dtype_of<double> : std::integral_constant<DType, DType::float64> {};
template <>
struct dtype_of<std::int32_t> : std::integral_constant<DType, DType::int32> {};
template <>
struct dtype_of<std::int64_t> : std::integral_constant<DType, DType::int64> {};

template <typename T>
concept Element = requires { dtype_of<T>::value; };

// visit(dtype, [&]<typename T>() { ... }): calls f with the C++ type of dtype.
template <typename F>
decltype(auto) visit(DType dtype, F&& f) {
  switch (dtype) {
    case DType::float32:
      return f.template operator()<float>();
    case DType::float64:
      return f.template operator()<double>();
    case DType::int32:
      return f.template operator()<std::int32_t>();
    case DType::int64:
      break;
  }
  return f.template operator()<std::int64_t>();
}

}  // namespace minifw::core
