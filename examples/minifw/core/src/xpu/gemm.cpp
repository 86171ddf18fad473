// SYCL GEMM variants behind matmul and conv2d: the tiled algorithm of src/gpu/gemm.cuh with
// work-group local memory, one instantiation per variant (MINIFW_CORE_WEIGHT of them).
#include <array>
#include <utility>

#include "xpu/xpu.hpp"

namespace minifw_xpu {
namespace {

template <typename T>
struct Matrix {
  const T* p;
  std::size_t ld;
  T operator()(std::size_t r, std::size_t q) const { return p[r * ld + q]; }
};
template <typename T>
struct Output {
  T* p;
  std::size_t ld;
  void operator()(std::size_t r, std::size_t q, T v) const { p[r * ld + q] = v; }
};
template <typename T>
struct Im2col {
  const T* x;
  minifw_conv2d_shape s;
  T operator()(std::size_t kk, std::size_t j) const {
    const std::size_t c = kk / (s.kh * s.kw), kh = (kk / s.kw) % s.kh, kw = kk % s.kw;
    const std::size_t n = j / (s.oh * s.ow), oh = (j / s.ow) % s.oh, ow = j % s.ow;
    const std::size_t ih = oh * s.stride + kh - s.padding, iw = ow * s.stride + kw - s.padding;
    return ih < s.h && iw < s.w ? x[((n * s.c + c) * s.h + ih) * s.w + iw] : T(0);
  }
};
template <typename T>
struct ConvOutput {
  T* y;
  minifw_conv2d_shape s;
  void operator()(std::size_t o, std::size_t j, T v) const {
    const std::size_t plane = s.oh * s.ow;
    y[((j / plane) * s.o + o) * plane + j % plane] = v;
  }
};

template <typename T, int V, class A, class B, class C>
void gemm(sycl::queue& q, std::size_t m, std::size_t n, std::size_t k, A a, B b, C c) {
  constexpr minifw_gemm::DeviceTiling t = minifw_gemm::device_tiling(V, sizeof(T));
  constexpr int TS = t.ts, RM = t.rm, RN = t.rn, BK = t.bk, BM = TS * RM, BN = TS * RN;
  const std::size_t gx = (n + BN - 1) / BN, gy = (m + BM - 1) / BM;
  q.submit([&](sycl::handler& h) {
     sycl::local_accessor<T, 2> as(sycl::range<2>{BK, BM}, h);
     sycl::local_accessor<T, 2> bs(sycl::range<2>{BK, BN}, h);
     h.parallel_for(sycl::nd_range<2>{{gy * TS, gx * TS}, {TS, TS}}, [=](sycl::nd_item<2> it) {
       const int ty = static_cast<int>(it.get_local_id(0)), tx = static_cast<int>(it.get_local_id(1));
       const int tid = ty * TS + tx;
       const std::size_t row0 = it.get_group(0) * BM, col0 = it.get_group(1) * BN;
       Acc<T> acc[RM][RN] = {};
       for (std::size_t k0 = 0; k0 < k; k0 += BK) {
         for (int idx = tid; idx < BM * BK; idx += TS * TS) {
           const int r = idx / BK, kk = idx % BK;
           const std::size_t i = row0 + r, kx = k0 + kk;
           as[kk][r] = (i < m && kx < k) ? a(i, kx) : T(0);
         }
         for (int idx = tid; idx < BK * BN; idx += TS * TS) {
           const int kk = idx / BN, qq = idx % BN;
           const std::size_t j = col0 + qq, kx = k0 + kk;
           bs[kk][qq] = (j < n && kx < k) ? b(kx, j) : T(0);
         }
         sycl::group_barrier(it.get_group());
         for (int kk = 0; kk < BK; ++kk) {
           for (int r = 0; r < RM; ++r) {
             const Acc<T> av = Acc<T>(as[kk][ty + r * TS]);
             for (int qq = 0; qq < RN; ++qq) acc[r][qq] += av * Acc<T>(bs[kk][tx + qq * TS]);
           }
         }
         sycl::group_barrier(it.get_group());
       }
       for (int r = 0; r < RM; ++r) {
         for (int qq = 0; qq < RN; ++qq) {
           const std::size_t i = row0 + ty + r * TS, j = col0 + tx + qq * TS;
           if (i < m && j < n) c(i, j, static_cast<T>(acc[r][qq]));
         }
       }
     });
   }).wait_and_throw();
}

template <int V>
void variant_matmul(sycl::queue& q, int dtype, const void* a, const void* b, void* c, std::size_t m,
                    std::size_t k, std::size_t n) {
  by_dtype(dtype, [&]<typename T>() {
    gemm<T, V>(q, m, n, k, Matrix<T>{static_cast<const T*>(a), k}, Matrix<T>{static_cast<const T*>(b), n},
               Output<T>{static_cast<T*>(c), n});
  });
}

template <int V>
void variant_conv2d(sycl::queue& q, int dtype, const void* x, const void* w, void* y, const minifw_conv2d_shape& s) {
  const std::size_t k = s.c * s.kh * s.kw;
  by_dtype(dtype, [&]<typename T>() {
    gemm<T, V>(q, s.o, s.n * s.oh * s.ow, k, Matrix<T>{static_cast<const T*>(w), k},
               Im2col<T>{static_cast<const T*>(x), s}, ConvOutput<T>{static_cast<T*>(y), s});
  });
}

using MatmulFn = void (*)(sycl::queue&, int, const void*, const void*, void*, std::size_t, std::size_t, std::size_t);
using ConvFn = void (*)(sycl::queue&, int, const void*, const void*, void*, const minifw_conv2d_shape&);
struct Variant {
  MatmulFn matmul;
  ConvFn conv2d;
};

template <std::size_t... V>
constexpr std::array<Variant, sizeof...(V)> variant_table(std::index_sequence<V...>) {
  return {Variant{&variant_matmul<static_cast<int>(V)>, &variant_conv2d<static_cast<int>(V)>}...};
}
constexpr auto kVariants = variant_table(std::make_index_sequence<MINIFW_CORE_WEIGHT>{});

}  // namespace

void gemm_matmul(sycl::queue& q, int variant, int dtype, const void* a, const void* b, void* c, std::size_t m,
                 std::size_t k, std::size_t n) {
  kVariants.at(static_cast<std::size_t>(variant)).matmul(q, dtype, a, b, c, m, k, n);
}

void gemm_conv2d(sycl::queue& q, int variant, int dtype, const void* x, const void* w, void* y,
                 const minifw_conv2d_shape& s) {
  kVariants.at(static_cast<std::size_t>(variant)).conv2d(q, dtype, x, w, y, s);
}

}  // namespace minifw_xpu

using minifw_xpu::DeviceArray;

MINIFW_EXPORT int minifw_accel_matmul(int variant, int dtype, const void* a, const void* b, void* c, std::size_t m,
                                      std::size_t k, std::size_t n, char* err, std::size_t errlen) {
  return minifw_xpu::guarded("sycl matmul", err, errlen, [&] {
    minifw_xpu::by_dtype(dtype, [&]<typename T>() {
      sycl::queue q = minifw_xpu::gpu_queue(sizeof(T) == 8);
      DeviceArray<T> da(q, a, m * k), db(q, b, k * n), dc(q, m * n);
      minifw_xpu::gemm_matmul(q, variant, dtype, da.get(), db.get(), dc.get(), m, k, n);
      dc.download(c);
    });
  });
}

MINIFW_EXPORT int minifw_accel_conv2d(int variant, int dtype, const void* x, const void* w, void* y,
                                      const minifw_conv2d_shape* s, char* err, std::size_t errlen) {
  return minifw_xpu::guarded("sycl conv2d", err, errlen, [&] {
    minifw_xpu::by_dtype(dtype, [&]<typename T>() {
      sycl::queue q = minifw_xpu::gpu_queue(sizeof(T) == 8);
      DeviceArray<T> dx(q, x, s->n * s->c * s->h * s->w), dw(q, w, s->o * s->c * s->kh * s->kw),
          dy(q, s->n * s->o * s->oh * s->ow);
      minifw_xpu::gemm_conv2d(q, variant, dtype, dx.get(), dw.get(), dy.get(), *s);
      dy.download(y);
    });
  });
}
