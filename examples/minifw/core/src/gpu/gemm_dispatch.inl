// (Part of ops.cu.) matmul and conv2d on the GPU: memory in and out, then the chosen variant's launch (the
// table holds MINIFW_CORE_WEIGHT variants, each defined in its own gemm_variant.cu object).
#include <array>
#include <utility>

#include "gpu/gemm.cuh"

namespace minifw_gpu {

using MatmulFn = rt::Error (*)(int, const void*, const void*, void*, std::size_t, std::size_t, std::size_t);
using ConvFn = rt::Error (*)(int, const void*, const void*, void*, const minifw_conv2d_shape&);

struct Variant {
  MatmulFn matmul;
  ConvFn conv2d;
};

template <std::size_t... V>
constexpr std::array<Variant, sizeof...(V)> variant_table(std::index_sequence<V...>) {
  return {Variant{&variant_matmul<static_cast<int>(V)>, &variant_conv2d<static_cast<int>(V)>}...};
}

constexpr auto kVariants = variant_table(std::make_index_sequence<MINIFW_CORE_WEIGHT>{});

std::size_t element_size(int dtype) { return dtype == 0 || dtype == 2 ? 4 : 8; }

Status matmul(int variant, int dtype, const void* a, const void* b, void* c, std::size_t m, std::size_t k,
              std::size_t n) {
  if (variant < 0 || variant >= MINIFW_CORE_WEIGHT || dtype < 0 || dtype > 3) {
    return Status{"matmul variant or dtype", rt::kInvalidValue};
  }
  const std::size_t e = element_size(dtype);
  Buffer da, db, dc;
  Status s = da.upload(a, m * k * e);
  if (s.ok()) s = db.upload(b, k * n * e);
  if (s.ok()) s = dc.alloc(m * n * e);
  if (!s.ok()) return s;
  s = check("matmul launch", kVariants[variant].matmul(dtype, da.as<void>(), db.as<void>(), dc.as<void>(), m, k, n));
  if (s.ok()) s = launched("matmul kernel");
  return s.ok() ? dc.download(c, m * n * e) : s;
}

Status conv2d(int variant, int dtype, const void* x, const void* w, void* y, const minifw_conv2d_shape& sh) {
  if (variant < 0 || variant >= MINIFW_CORE_WEIGHT || dtype < 0 || dtype > 3) {
    return Status{"conv2d variant or dtype", rt::kInvalidValue};
  }
  const std::size_t e = element_size(dtype);
  const std::size_t out = sh.n * sh.o * sh.oh * sh.ow * e;
  Buffer dx, dw, dy;
  Status s = dx.upload(x, sh.n * sh.c * sh.h * sh.w * e);
  if (s.ok()) s = dw.upload(w, sh.o * sh.c * sh.kh * sh.kw * e);
  if (s.ok()) s = dy.alloc(out);
  if (!s.ok()) return s;
  s = check("conv2d launch", kVariants[variant].conv2d(dtype, dx.as<void>(), dw.as<void>(), dy.as<void>(), sh));
  if (s.ok()) s = launched("conv2d kernel");
  return s.ok() ? dy.download(y, out) : s;
}

}  // namespace minifw_gpu

extern "C" {

int minifw_accel_matmul(int variant, int dtype, const void* a, const void* b, void* c, std::size_t m,
                        std::size_t k, std::size_t n, char* err, std::size_t errlen) {
  return minifw_gpu::finish(minifw_gpu::matmul(variant, dtype, a, b, c, m, k, n), err, errlen);
}

int minifw_accel_conv2d(int variant, int dtype, const void* x, const void* w, void* y,
                        const minifw_conv2d_shape* shape, char* err, std::size_t errlen) {
  return minifw_gpu::finish(minifw_gpu::conv2d(variant, dtype, x, w, y, *shape), err, errlen);
}

}  // extern "C"
