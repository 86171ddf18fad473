// A dense, contiguous, row-major host tensor: the one value type of minifw_core.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>

#include "minifw/core/dtype.hpp"

namespace minifw::core {

inline constexpr std::size_t kMaxDims = 8;

// Up to kMaxDims extents, held inline (no allocation).
class Shape {
 public:
  constexpr Shape() = default;
  // std::invalid_argument beyond kMaxDims.
  Shape(std::initializer_list<std::size_t> dims);
  explicit Shape(std::span<const std::size_t> dims);

  std::size_t rank() const noexcept { return rank_; }
  std::size_t operator[](std::size_t i) const noexcept { return dims_[i]; }
  const std::size_t* begin() const noexcept { return dims_.data(); }
  const std::size_t* end() const noexcept { return dims_.data() + rank_; }
  std::size_t back() const noexcept { return dims_[rank_ - 1]; }
  // [..., n] -> [...]
  Shape without_last() const noexcept;
  friend bool operator==(const Shape&, const Shape&) = default;  // unused extents stay 0

 private:
  std::array<std::size_t, kMaxDims> dims_{};
  std::size_t rank_ = 0;
};

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled; std::length_error when the size overflows.
  Tensor(DType dtype, Shape shape);
  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  ~Tensor() = default;

  DType dtype() const noexcept { return dtype_; }
  const Shape& shape() const noexcept { return shape_; }
  std::size_t dim() const noexcept { return shape_.rank(); }
  std::size_t numel() const noexcept { return numel_; }
  std::size_t nbytes() const noexcept { return numel_ * itemsize(dtype_); }
  void* raw() noexcept { return storage_.get(); }
  const void* raw() const noexcept { return storage_.get(); }

  // Typed views; std::invalid_argument when T is not this tensor's dtype.
  template <Element T>
  std::span<T> data() {
    check_type(dtype_of<T>::value);
    return {static_cast<T*>(raw()), numel_};
  }
  template <Element T>
  std::span<const T> data() const {
    check_type(dtype_of<T>::value);
    return {static_cast<const T*>(raw()), numel_};
  }

  // "float32[2, 3]": for error messages.
  std::string describe() const;

 private:
  void check_type(DType wanted) const;

  DType dtype_ = DType::float64;
  Shape shape_;
  std::size_t numel_ = 0;
  // 8-byte words keep every element type aligned. A plain array, not a std::vector: copying a
  // vector calls a libstdc++ 11 symbol that a manylinux_2_28 wheel may not need.
  std::unique_ptr<std::uint64_t[]> storage_;
};

}  // namespace minifw::core
