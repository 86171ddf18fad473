// Shared by the SYCL backend (icpx -fsycl, linked into libminifw_sycl.so: SYCL needs its own
// device link, so this backend is a DSO next to minifw._C rather than objects in the static
// library). Every C entry point (src/accel.h) catches every exception and reports it in err.
#pragma once

#include <sycl/sycl.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "accel.h"
#include "common/gemm_config.hpp"

#define MINIFW_EXPORT extern "C" __attribute__((visibility("default")))

namespace minifw_xpu {

template <typename T>
using Acc = typename minifw_gemm::acc_of<T>::type;

inline void set_error(char* err, std::size_t errlen, const char* what, const char* msg) {
  if (err != nullptr && errlen > 0) std::snprintf(err, errlen, "%s: %s", what, msg);
}

// Runs f(); 0, or 1 with the exception's message in err.
template <typename F>
int guarded(const char* what, char* err, std::size_t errlen, F&& f) {
  try {
    f();
    return 0;
  } catch (const std::exception& e) {
    set_error(err, errlen, what, e.what());
  } catch (...) {
    set_error(err, errlen, what, "unknown exception");
  }
  return 1;
}

std::vector<sycl::device> gpu_devices();
// An in-order queue on GPU 0; throws when there is none, or when T needs fp64 it lacks.
sycl::queue gpu_queue(bool needs_fp64);

// by_dtype(dtype, [&]<typename T>() {...}) with the numbering of minifw::core::DType.
template <typename F>
void by_dtype(int dtype, F&& f) {
  switch (dtype) {
    case 0:
      return f.template operator()<float>();
    case 1:
      return f.template operator()<double>();
    case 2:
      return f.template operator()<std::int32_t>();
    case 3:
      return f.template operator()<std::int64_t>();
    default:
      throw std::invalid_argument("unknown dtype");
  }
}

// USM device memory, freed on scope exit.
template <typename T>
class DeviceArray {
 public:
  DeviceArray(sycl::queue& q, std::size_t n) : q_(q), n_(n), p_(n ? sycl::malloc_device<T>(n, q) : nullptr) {
    if (n != 0 && p_ == nullptr) throw std::runtime_error("out of device memory");
  }
  DeviceArray(sycl::queue& q, const void* host, std::size_t n) : DeviceArray(q, n) {
    if (n != 0) q_.memcpy(p_, host, n * sizeof(T)).wait_and_throw();
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() {
    if (p_ != nullptr) sycl::free(p_, q_);
  }
  T* get() const { return p_; }
  void download(void* host) const {
    if (n_ != 0) q_.memcpy(host, p_, n_ * sizeof(T)).wait_and_throw();
  }

 private:
  sycl::queue& q_;
  std::size_t n_;
  T* p_;
};

// The GEMM variants (gemm.cpp): device pointers in, a finished kernel out.
void gemm_matmul(sycl::queue& q, int variant, int dtype, const void* a, const void* b, void* c, std::size_t m,
                 std::size_t k, std::size_t n);
void gemm_conv2d(sycl::queue& q, int variant, int dtype, const void* x, const void* w, void* y,
                 const minifw_conv2d_shape& s);

}  // namespace minifw_xpu
