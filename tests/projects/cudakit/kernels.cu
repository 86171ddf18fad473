// One kernel (so the library holds device code: a cubin per arch) and what the build compiled against.
#include <cuda_runtime.h>

__global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }

extern "C" int cudakit_compiled_runtime(void) { return CUDART_VERSION; }

extern "C" int cudakit_launch(float *x, int n) {
  scale<<<1, n>>>(x, 2.0f);
  return (int)cudaGetLastError();
}
