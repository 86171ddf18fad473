// Tensor storage and the dtype / op name tables.
#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "minifw/core/ops.hpp"
#include "minifw/core/text.hpp"
#include "minifw/core/tensor.hpp"

namespace minifw::core {
namespace {

constexpr std::array<std::string_view, 4> kDTypeNames = {"float32", "float64", "int32", "int64"};
constexpr std::array<std::string_view, 10> kUnaryNames = {
    "neg", "abs", "square", "relu", "exp", "log", "sqrt", "tanh", "sigmoid", "gelu"};
constexpr std::array<std::string_view, 6> kBinaryNames = {"add", "sub",     "mul",
                                                          "div", "maximum", "minimum"};
constexpr std::array<std::string_view, 6> kReduceNames = {"sum", "prod", "max",
                                                          "min", "mean", "norm2"};

template <typename E, std::size_t N>
E from_name(const std::array<std::string_view, N>& names, std::string_view name, const char* what) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  std::string known;
  for (auto n : names) {
    known += known.empty() ? "" : ", ";
    known += n;
  }
  throw std::invalid_argument(cat("minifw_core: unknown ", what, " '", name, "' (expected one of: ", known, ")"));
}

std::size_t checked_numel(const Shape& shape, std::size_t item) {
  std::size_t n = 1;
  for (std::size_t d : shape) {
    if (d != 0 && n > std::numeric_limits<std::size_t>::max() / item / d) {
      throw std::length_error("minifw_core: tensor too large");
    }
    n *= d;
  }
  return n;
}

}  // namespace

std::string_view dtype_name(DType dtype) noexcept {
  return kDTypeNames[static_cast<std::size_t>(dtype)];
}
DType dtype_from_name(std::string_view name) { return from_name<DType>(kDTypeNames, name, "dtype"); }
std::size_t itemsize(DType dtype) noexcept {
  return dtype == DType::float32 || dtype == DType::int32 ? 4 : 8;
}
bool is_floating(DType dtype) noexcept {
  return dtype == DType::float32 || dtype == DType::float64;
}

UnaryOp unary_op_from_name(std::string_view name) {
  return from_name<UnaryOp>(kUnaryNames, name, "unary op");
}
BinaryOp binary_op_from_name(std::string_view name) {
  return from_name<BinaryOp>(kBinaryNames, name, "binary op");
}
ReduceOp reduce_op_from_name(std::string_view name) {
  return from_name<ReduceOp>(kReduceNames, name, "reduction");
}
bool needs_floating(UnaryOp op) noexcept { return op >= UnaryOp::exp; }
bool needs_floating(ReduceOp op) noexcept { return op >= ReduceOp::mean; }

Shape::Shape(std::initializer_list<std::size_t> dims) : Shape(std::span<const std::size_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const std::size_t> dims) : rank_(dims.size()) {
  if (dims.size() > kMaxDims) {
    throw std::invalid_argument(cat("minifw_core: ", std::to_string(dims.size()), " dimensions, at most ", std::to_string(kMaxDims), " supported"));
  }
  std::copy(dims.begin(), dims.end(), dims_.begin());
}

Shape Shape::without_last() const noexcept {
  Shape out = *this;
  out.dims_[--out.rank_] = 0;
  return out;
}

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(shape), numel_(checked_numel(shape_, itemsize(dtype))),
      storage_(new std::uint64_t[(nbytes() + 7) / 8]()) {}

Tensor::Tensor(const Tensor& other) : Tensor(other.dtype_, other.shape_) {
  std::copy_n(other.storage_.get(), (nbytes() + 7) / 8, storage_.get());
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

std::string Tensor::describe() const {
  std::string out(dtype_name(dtype_));
  out += '[';
  for (std::size_t i = 0; i < shape_.rank(); ++i) {
    out += i ? ", " : "";
    out += std::to_string(shape_[i]);
  }
  return out + ']';
}

void Tensor::check_type(DType wanted) const {
  if (wanted != dtype_) {
    throw std::invalid_argument(cat("minifw_core: ", describe(), " accessed as ", dtype_name(wanted)));
  }
}

}  // namespace minifw::core
